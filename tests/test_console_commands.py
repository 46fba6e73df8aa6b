"""diag, run and the console command through a real login shell on a serial line
(tests/console_rig.py), directly and through ser2net; each console fault is one line with
the transcript saved. The line's faults (mute, garbled, silent) come from the rig."""

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import process_tree
import pytest
import serial
from conftest import require_command
from console_rig import Ser2net, read_until, transcript_streams, typed_on_a_terminal

from evbench.boards.base import ConnectionLost
from evbench.boards.serial import SerialBoard
from evbench.boards.serial.address import parse_console_url
from evbench.boards.serial.link import ConsoleError, ConsoleLink, Deadline
from evbench.boards.serial.transcript import Transcript
from evbench.cli import evbench
from evbench.usecases.remote_run import RemoteRun, fetch_command
from evbench_core import results

pytestmark = pytest.mark.integration

EVBENCH = str(Path(sys.executable).parent / "evbench")


def _check_report(out, text, board_url):
    report = json.loads((out / "diag.json").read_text())
    assert report["format"] == "evbench-diag" and report["board"] == board_url
    assert report["sections"]["kernel"]["kernel"].startswith("Linux ")
    assert report["sections"]["uptime"]["uptime"]["unit"] == "s"
    assert report["sections"]["memory"]["MemTotal"]["value"] > 0
    assert "lo" in report["sections"]["network"]["interfaces"]
    assert "kernel:      Linux" in text and "memory:" in text
    transcript = (out / "console.transcript").read_text()
    assert "# evbench console transcript" in transcript
    return report


def test_diag_over_serial_without_agent_asking_the_password_only_at_its_prompt(
    console_line, console_user, monkeypatch, tmp_path
):
    # The session's user: an earlier test may have deployed the agent; this one needs none.
    shutil.rmtree(console_user.home / ".evbench" / "agent", ignore_errors=True)
    monkeypatch.delenv("EVBENCH_PASSWORD")
    url = f"{console_line.url}?user={console_user.name}"
    out = tmp_path / "diag"
    argv = [EVBENCH, "diag", "--board", url, "--out", out]
    prompt = f"password for {console_user.name} on {url}: ".encode()
    answer = console_user.password.encode() + b"\n"
    status, screen = typed_on_a_terminal(require_command("setsid"), argv, prompt, answer, tmp_path)
    assert status == 0, screen.decode(errors="replace")
    assert console_user.password.encode() not in screen  # not echoed, not printed
    text = screen.decode(errors="replace")
    report = _check_report(out, text, url)
    # The throwaway user has no agent: the report says so and what it leaves out.
    assert report["agent"] is None
    assert any(item.startswith("agent: not on the board") for item in report["missing"])
    assert "agent:       not found" in text
    # The throwaway user reads the kernel log only where the kernel allows anyone to.
    open_log = Path("/proc/sys/kernel/dmesg_restrict").read_text().strip() == "0"
    assert report["sections"]["kernel_errors"]["readable"] is open_log
    assert open_log or any(item.startswith("kernel errors: ") for item in report["missing"])
    (transcript,) = (tmp_path / "results" / "console").glob("*.transcript")
    noted = transcript.read_text()
    assert console_user.password not in noted
    # Sent once, and only after the board asked for it.
    assert noted.count("<password redacted>") == 1
    assert noted.index("assword: ") < noted.index("> b'<password redacted>'")


def test_diag_through_ser2net_rfc2217_with_agent(console_line, console_user, tmp_path, capsys):
    # Placed as root, not uploaded (a minute at 115200 baud: test_log_secrets does that).
    console_user.install_agent()
    server = Ser2net(require_command("ser2net"), str(console_line.host_link.resolve()), tmp_path)
    try:
        url = f"{server.url}?user={console_user.name}"
        out = tmp_path / "diag"
        assert evbench(["diag", "--board", url, "--out", str(out)]) == 0
    finally:
        server.stop()
    text = capsys.readouterr().out
    report = _check_report(out, text, url)
    assert report["agent"]["info"]["agent"]
    assert report["codec_check"]["json"]["round_trip"] is True
    assert report["codec_check"]["protobuf"]["round_trip"] is True
    assert "codec protobuf: round trip ok" in text


def test_diag_local_and_over_ssh_is_the_same_report(sshd, ssh_home, tmp_path, capsys):
    # One report for this machine, then over sshd before and after the agent is deployed.
    local = tmp_path / "local"
    assert evbench(["diag", "--board", "local", "--out", str(local)]) == 0
    capsys.readouterr()
    report = json.loads((local / "diag.json").read_text())
    assert report["codec_check"]["protobuf"]["round_trip"] is True
    # Every codec's round trip holds; dbc's to its signals' resolution (not exact by design).
    assert {name for name, c in report["codec_check"].items() if not c["round_trip"]} == set()
    assert [name for name, c in report["codec_check"].items() if not c["exact"]] == ["dbc"]
    url = f"ssh://{sshd.user}@127.0.0.1:{sshd.port}?dir={tmp_path}/board&python=/usr/bin/python3"
    before, after = tmp_path / "before", tmp_path / "after"
    assert evbench(["diag", "--board", url, "--out", str(before)]) == 0
    assert evbench(["deploy", "--board", url]) == 0
    assert evbench(["diag", "--board", url, "--out", str(after)]) == 0
    capsys.readouterr()
    without = json.loads((before / "diag.json").read_text())
    with_agent = json.loads((after / "diag.json").read_text())
    assert without["agent"] is None and "codec_check" not in without
    # the deploy command it names pastes into a shell whole (an unquoted & backgrounded it)
    (missing,) = [m for m in without["missing"] if m.startswith("agent: not on the board")]
    assert f"`evbench deploy --board '{url}'`" in missing
    assert with_agent["codec_check"]["json"]["round_trip"] is True
    for name in ("kernel", "memory", "network", "disk"):
        assert set(without["sections"][name]) == set(report["sections"][name]), name
    assert without["sections"]["kernel"] == report["sections"]["kernel"]


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("password", ("login as '{user}'", "refused")),
        ("mute", ("no prompt", "nothing came back")),
        ("garble", ("unreadable characters", "baud")),
    ],
    ids=["wrong password", "no prompt at all", "baud mismatch garbage"],
)
def test_a_refused_login_or_a_mute_or_garbled_line_is_named(
    console_line, console_user, monkeypatch, capsys, fault, said
):
    if fault == "password":
        monkeypatch.setenv("EVBENCH_PASSWORD", "not-the-password")
    else:
        setattr(console_line.line, fault, True)
    assert evbench(["diag", "--board", f"{console_line.url}?user={console_user.name}"]) == 2
    error = capsys.readouterr().err
    lines = error.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("evbench: error: "), error
    assert all(words.format(user=console_user.name) in lines[0] for words in said), lines[0]
    match = re.search(r"transcript: (\S+)$", lines[1])
    assert match, lines[1]
    text = Path(match.group(1)).read_text()
    assert "# error: " in text
    if fault == "password":
        assert "not-the-password" not in text and "<password redacted>" in text


def test_a_command_that_never_returns_then_a_line_silent_mid_transfer(
    console_line, console_user, tmp_path
):
    # One login for both faults: the interrupted command leaves the session usable.
    url = f"{console_line.url}?user={console_user.name}"
    remote = f"{console_user.home}/evbench-test-silent.bin"
    board = SerialBoard(url, show_progress=False)
    try:
        with pytest.raises(ConsoleError, match="did not return within 3 s and was interrupted"):
            board.run(["sleep", "600"], timeout=3)
        # The session recovers: Ctrl-C stopped the command, the shell answers again.
        after = board.run(["echo", "still here"], timeout=30)
        assert (after.returncode, after.stdout) == (0, b"still here\n")
        assert board.run(["sh", "-c", f"head -c 40000 /dev/urandom > {remote}"], 30).returncode == 0
        console_line.line.silent_after = 4000  # the cable comes out 4000 bytes in
        with pytest.raises(ConsoleError, match="went silent") as raised:
            board.get(remote, tmp_path / "back.bin")
    finally:
        board.close()
    assert not (tmp_path / "back.bin").exists(), "an unverified file was saved"
    assert "transcript: " in raised.value.hint
    noted = board.transcript_path.read_text().splitlines()
    assert any("# error: " in line and "went silent" in line for line in noted)


#: evbench as its own process (with the interpreter: PYTHONPATH reaches it), and a codec
#: run for it to start on a board whose agent is already there.
EVBENCH_MODULE = [sys.executable, "-m", "evbench"]
RUN = ["run", "--suite", "codec", "--profile", "seed", "--codecs", "json", "--no-history"]


def interrupted_run(url: str, out: Path, plan: list[str], ready) -> tuple[int, str]:
    """`evbench run` with `plan` over the console into `out`, sent SIGINT (Ctrl-C) once
    `ready(stderr)`: its exit code and standard error. The process is never left behind."""
    said = out.parent / "evbench.err"
    argv = [*EVBENCH_MODULE, *RUN, *plan, "--board", url, "--out", str(out)]
    with said.open("w") as errors:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errors)
    try:
        deadline = time.monotonic() + 300
        while not ready(said.read_text()):
            assert process.poll() is None and time.monotonic() < deadline, said.read_text()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=400)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, said.read_text()


def test_ctrl_c_mid_run_stops_the_run_on_the_board(console_line, console_user, tmp_path):
    # The console's one shell ran `follow`: the stop's `status` waited 120 s behind it, then
    # evbench gave up and left the run going on the board.
    console_user.install_agent()
    runs, out = console_user.home / ".evbench" / "runs", tmp_path / "run"

    def measuring(said: str) -> bool:
        started = re.search(r"run (\S+) started on ", said)
        return bool(started) and (runs / started[1] / "results" / results.SAMPLES).exists()

    url = f"{console_line.url}?user={console_user.name}"
    # Planned for half an hour: it ends only when stopped.
    code, said = interrupted_run(url, out, ["--min-time", "3"], measuring)
    assert code == 130, said
    assert "goes on on the board" not in said
    assert json.loads((out / results.MANIFEST).read_text())["status"] == "interrupted"
    assert results.verify_checksums(out) == []
    launch = runs / json.loads((out / results.MANIFEST).read_text())["run_id"] / "launch.json"
    assert process_tree.ended(json.loads(launch.read_text())["pid"], 10)


def test_ctrl_c_mid_fetch_keeps_a_partial_run_that_the_named_command_resumes(
    console_line, console_user, tmp_path
):
    # The old final fetch had no Ctrl-C path: its manifest said "complete", with no
    # samples, no SHA256SUMS and no word of how to go on.
    console_user.install_agent()
    out = tmp_path / "run"
    url = f"{console_line.url}?user={console_user.name}"
    fetching = lambda said: "evbench: fetching samples.jsonl" in said  # noqa: E731
    code, said = interrupted_run(url, out, ["--quick"], fetching)
    assert code == 130, said
    manifest = json.loads((out / results.MANIFEST).read_text())
    assert (manifest["status"], manifest["reason"]) == ("partial", "interrupted during the fetch")
    assert not (out / results.COMPLETE).exists()
    (command,) = re.findall(r"resume the fetch with `(.+)`", said)
    words = shlex.split(command)
    assert words[:3] == ["evbench", "fetch", "--board"] and words[-2:] == ["--out", str(out)]
    again = subprocess.run([*EVBENCH_MODULE, *words[1:]], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert results.verify_checksums(out) == [] and (out / results.COMPLETE).exists()
    assert json.loads((out / results.MANIFEST).read_text())["status"] == "complete"


def test_a_login_prompt_mid_session_is_a_lost_connection_and_a_reconnect_logs_in(
    console_line, console_user
):
    # A reboot, as the console sees one: the shell gone and getty asking again. The next
    # command was typed as a user name, the sync after it as a password: a UserError after
    # 40 s, never a reconnect.
    with SerialBoard(f"{console_line.url}?user={console_user.name}", show_progress=False) as board:
        _, shell, _ = board.session.run('printf %s "$$"', timeout=15)
        os.kill(int(shell), signal.SIGKILL)
        assert process_tree.ended(int(shell), 10)
        session = RemoteRun(board, ["agent"], "20250101T000000Z-abcdef")
        with pytest.raises(ConnectionLost, match=r"shows a login prompt \(rebooted\?\)"):
            board.run(["echo", "lost"], timeout=30)
        again = session.resilient(lambda: board.run(["echo", "back"], timeout=30))
    assert (again.returncode, again.stdout) == (0, b"back\n")


def test_a_console_that_stops_answering_is_reconnected_to_until_the_deadline(
    console_line, console_user
):
    # The first reconnect's "nothing came back in 40 s" (after 3 s) was a UserError: the
    # run ended at once, without the hint that collects it later.
    board = SerialBoard(f"{console_line.url}?user={console_user.name}", show_progress=False)
    session = RemoteRun(board, ["agent"], "20250101T000000Z-abcdef", reconnect_deadline=1)
    console_line.line.mute = True
    started = time.monotonic()
    try:
        with pytest.raises(ConnectionLost) as lost:
            session._reconnect()
    finally:
        board.close()
    waited = time.monotonic() - started
    assert fetch_command(board.url, session.run_id) in lost.value.hint
    stated = re.search(r"nothing came back in (\d+) s", str(lost.value))
    assert stated and int(stated[1]) <= waited + 1, lost.value  # what it waited, not 40 s


# ser2net dies: every read and write after is a ConnectionLost, never a raw BrokenPipeError
# (a read's timeout change is an RFC 2217 negotiation too). The unclosed-socket warning is
# pyserial's: its close() skips a socket whose peer is gone.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_reads_and_writes_after_ser2net_died_are_connection_lost(tmp_path):
    board_end, host_end = os.openpty()
    server = Ser2net(require_command("ser2net"), os.ttyname(host_end), tmp_path)
    url = server.url
    link = ConsoleLink(parse_console_url(url), Transcript(tmp_path / "t.transcript", url))
    try:
        os.write(board_end, b"login: ")
        deadline = time.monotonic() + 10
        while b"login: " not in link.buffer:
            assert time.monotonic() < deadline, bytes(link.buffer)
            link.read_some(Deadline(0.5))
        server.stop()
        # Deadlines shorter than the poll change the port's timeout on each read.
        for seconds in (0.01, 0.5, 0.02, 0.5, 0.03):
            with pytest.raises(ConnectionLost):
                link.read_some(Deadline(seconds))
        with pytest.raises(ConnectionLost):
            link.write(b"\r")
    finally:
        server.stop()
        with contextlib.suppress(OSError, serial.SerialException):
            link.close()  # pyserial's close reports the dead socket again
        os.close(board_end)
        os.close(host_end)


def test_console_passes_keys_and_output_and_quits_on_ctrl_bracket(console_line, tmp_path):
    transcript = tmp_path / "session.transcript"
    argv = [EVBENCH, "console", "--board", console_line.url, "--transcript", str(transcript)]
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        # Keys only once connected: typed earlier, the quit key would come with them.
        err = read_until(process.stderr.fileno(), b"Ctrl-] quits")
        process.stdin.write(b"\r")
        process.stdin.flush()
        out = read_until(process.stdout.fileno(), b"login: ")  # agetty asks again
        process.stdin.write(b"\x1d")  # Ctrl-]
        process.stdin.flush()
        rest, more = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    out, err = out + rest, err + more
    assert process.returncode == 0, err
    assert b"login: " in out and str(transcript).encode() in err
    text = transcript.read_text()
    assert "> b'\\r'" in text and "login: " in text
    assert "\\x1d" not in text  # the quit key stays on this side


@dataclass
class PtyConsole:
    process: subprocess.Popen
    board: int  # the board's end of a real pty pair
    keys: int  # what the user types: an open pipe that never ends
    transcript: Path


@contextlib.contextmanager
def pty_console(tmp_path: Path) -> Iterator[PtyConsole]:
    """`evbench console --transcript` on a real pty whose far end the test plays."""
    board, line = os.openpty()
    keys_read, keys_write = os.pipe()
    transcript = tmp_path / "console.log"
    process = subprocess.Popen(
        [EVBENCH, "console", "--board", f"serial://{os.ttyname(line)}",
         "--transcript", str(transcript)],
        stdin=keys_read, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        yield PtyConsole(process, board, keys_write, transcript)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for fd in (board, line, keys_read, keys_write):
            os.close(fd)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_ends_the_console_with_its_transcript(tmp_path: Path, stop: int) -> None:
    with pty_console(tmp_path) as console:  # nothing answers on the board's end
        process = console.process
        err = read_until(process.stderr.fileno(), b"connected to")
        os.write(console.keys, b"ls\r")
        os.write(console.board, b"U-Boot SPL 2025.01\r\n")  # the board's side, to be recorded
        # On the screen, so read and recorded: the transcript holds it before the signal.
        read_until(process.stdout.fileno(), b"U-Boot SPL 2025.01\r\n")
        process.send_signal(stop)
        _, rest = process.communicate(timeout=30)
    said = (err + rest).decode()
    assert process.returncode == 130, said
    assert "evbench: interrupted" in said and "Traceback" not in said
    # Where the reads split the board's bytes into records depends on timing.
    assert b"U-Boot SPL 2025.01\r\n" in transcript_streams(console.transcript)["<"]


# A kernel message can follow the prompt before the first key (printk does not wait).
@pytest.mark.parametrize(
    "after_prompt", [b"", b"\r\n[   12.500000] usb 1-1: reset high-speed USB device\r\n"],
    ids=["at-the-end", "kernel-line-after"],
)  # fmt: skip
def test_a_password_typed_at_its_prompt_is_counted_not_recorded(
    tmp_path: Path, after_prompt: bytes
) -> None:
    got = b""
    with pty_console(tmp_path) as console:  # the board's end answers as a login does
        process = console.process
        read_until(process.stderr.fileno(), b"connected to")
        for says, typed in [(b"\r\nam62x login: ", [b"root\r"]),
                            (b"root\r\nPassword: " + after_prompt,
                             [b"Typed-", b"Secret-99\r"]),  # no echo
                            (b"\r\nroot@am62x:~# ", [b"ls\r"])]:  # fmt: skip
            os.write(console.board, says)
            read_until(process.stdout.fileno(), says)  # on the screen: recorded
            for keys in typed:
                os.write(console.keys, keys)
            got += read_until(console.board, b"\r")  # the line reached the board: recorded
        os.write(console.keys, b"\x1d")  # Ctrl-]
        _, err = process.communicate(timeout=30)
    transcript = console.transcript
    assert process.returncode == 0, err
    assert got == b"root\rTyped-Secret-99\rls\r"  # the board had every key
    # "Typed-Secret-99" is 15 bytes; the user's name and the command are kept as typed.
    withheld = b"<15 bytes typed at a password prompt withheld>"
    assert transcript_streams(transcript)[">"] == b"root\r" + withheld + b"\rls\r"
    assert "Secret" not in transcript.read_text()
