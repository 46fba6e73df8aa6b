"""Commands and files through a real login shell on a throttled serial line with kernel noise
(tests/console_rig.py). The tests share one line and login: each sets its faults and counts
what they caused from the line's counters."""

import hashlib
import os
import subprocess
import time

import pytest
from conftest import require_command
from console_rig import ConsoleRig

from evbench.boards.serial import SerialBoard, shell, transfer
from evbench.boards.serial.link import ConsoleError

pytestmark = pytest.mark.integration

#: A silence limit far beyond what a loaded machine adds to a request (the real one is 6 s).
LONG_SILENCE = 60.0


@pytest.fixture
def long_silence(line, monkeypatch):
    """LONG_SILENCE, and no kernel line put inside what the line carries: one inside the
    prompt breaks it, and the request then ends at the silence limit, as intended. The
    tests using this check the prompt's path; noise written on the board's terminal goes on."""
    monkeypatch.setattr(shell, "SILENCE", LONG_SILENCE)
    monkeypatch.setattr(transfer, "SILENCE", LONG_SILENCE)
    monkeypatch.setattr(line[0].line, "noise_every", None)


@pytest.fixture(scope="module")
def line(console_user, tmp_path_factory):
    """The line (ConsoleRig) and a board logged in on it, for the whole module."""
    folder = tmp_path_factory.mktemp("console")
    rig = ConsoleRig(folder / "line", require_command("socat"), require_command("agetty"))
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("EVBENCH_PASSWORD", console_user.password)
            patch.chdir(folder)  # the transcript goes to results/console here
            url = f"{rig.url}?user={console_user.name}"
            with SerialBoard(url, show_progress=False) as board:
                yield rig, board
    finally:
        rig.stop()


def spoil(rig: ConsoleRig, marker: bytes | tuple[bytes, ...], frames: int) -> int:
    """Spoil the next `frames` frames of the kind(s) `marker`; how many were spoiled so far."""
    rig.line.spoil_marker = marker
    rig.line.spoil_frames = frames
    return rig.line.spoiled


#: Awkward outputs: no final newline, marker- and prompt-like, wide, not UTF-8, NULs, stderr.
AWKWARD = (
    "printf 'no final newline'",
    "printf '@@deadbeef R 0 0123456789ab\\n@@%s E\\n' 00000000",
    "printf 'root@board:~# \\nlogin: \\nPassword: \\nevb-00000000> '",
    "head -c 3000 /dev/zero | tr '\\0' w",
    "printf '\\377\\376\\200 not utf-8 \\300\\n'",
    "printf 'a\\0b\\rc\\r\\n\\033[31mred\\033[0m\\n'",
    "echo to-stderr >&2; printf out",
    "printf '%s\\n' 'ERROR-looking' 'FAIL-looking'",
    "seq 1 200",
    "true",
)


@pytest.mark.slow
def test_256_commands_return_exact_output_and_status(line, console_user):
    rig, board = line
    written, injected, retried = rig.noise.written, rig.line.noise_injected, board.session.retried
    # Every exit status from 0 to 255, each with one of the awkward outputs.
    for command in [f"{AWKWARD[n % len(AWKWARD)]}; exit {n}" for n in range(256)]:
        expected = subprocess.run(["sh", "-c", command], capture_output=True, check=False)
        result = board.run(["sh", "-c", command], timeout=30)
        got = (result.returncode, result.stdout, result.stderr)
        assert got == (expected.returncode, expected.stdout, expected.stderr), command
    transcript = board.transcript_path.read_text()
    assert rig.noise.written - written >= 20, "kernel noise was not written on the board"
    assert rig.line.noise_injected - injected >= 20, "kernel noise did not break into lines"
    assert board.session.retried > retried, "no frame was spoiled: the repair was not tested"
    assert console_user.password not in transcript
    assert "<password redacted>" in transcript


def test_files_both_ways_with_spoiled_frames_asked_for_again(line, tmp_path, long_silence):
    rig, board = line
    # Ten chunks of 768 bytes and a short one: four upload lines of up to three chunks.
    payload = os.urandom(9 * 768 + 100) + b"\n@@00000000 E 000000000000\n"
    local = tmp_path / "payload.bin"
    local.write_bytes(payload)
    back = tmp_path / "back.bin"
    remotes = ["/tmp/evbench-test-acks.bin", "/tmp/evbench-test-ends.bin"]
    first, retried = spoil(rig, b" A ", 2), board.session.retried
    board.put(local, remotes[0])
    acks_spoiled, resent = rig.line.spoiled - first, board.session.retried - retried
    started = time.monotonic()
    spoil(rig, b" E ", 2)
    board.put(local, remotes[1])
    took = time.monotonic() - started
    ends_spoiled = rig.line.spoiled - first - acks_spoiled
    spoil(rig, b" D ", 1)
    before = board.session.retried
    shown: list[tuple[int, int]] = []  # what a field engineer's progress line says
    transfer.get_file(
        board.session, remotes[0], back, lambda done, total, _: shown.append((done, total))
    )
    asked_again = board.session.retried - before
    sums = board.run(["sha256sum", *remotes], timeout=15)
    removed = board.run(["rm", "-f", *remotes], timeout=15)
    assert (acks_spoiled, ends_spoiled, rig.line.spoiled - first) == (2, 2, 5)
    # Each chunk whose acknowledgement was spoiled is sent again.
    assert resent >= 2
    # A spoiled end frame is ended by the next line's frames or the prompt, not by silence.
    assert took < LONG_SILENCE / 2, took
    # The board's own sha256sum of both uploads is the payload's.
    digest = hashlib.sha256(payload).hexdigest()
    assert [row.split()[0] for row in sums.stdout.decode().splitlines()] == [digest, digest]
    # The spoiled download chunk was asked for again.
    assert back.read_bytes() == payload
    assert asked_again >= 1
    # Progress counts up to the whole file, the chunk asked for again included, and ends there.
    assert shown[-1] == (len(payload), len(payload)), shown
    assert {total for _, total in shown} == {len(payload)}, shown
    assert [done for done, _ in shown] == sorted(done for done, _ in shown), shown
    assert removed.returncode == 0


def test_stream_and_stdin(line):
    _, board = line
    script = "for i in 1 2 3; do echo line $i; done; echo e >&2; exit 7"
    command = board.stream(["sh", "-c", script])
    assert list(command.lines()) == ["line 1", "line 2", "line 3"]
    assert command.wait(30) == 7
    assert command.stderr() == "e\n"
    piped = board.run(["tr", "a-z", "A-Z"], timeout=30, stdin=b"through stdin\n")
    assert piped.stdout == b"THROUGH STDIN\n"


def test_a_spoiled_streamed_line_is_taken_from_the_boards_copy(line, long_silence):
    rig, board = line
    spoiled = spoil(rig, b" L ", 1)
    command = board.stream(["seq", "1", "300"])
    assert list(command.lines()) == [str(n) for n in range(1, 301)]
    assert command.wait(30) == 0
    assert rig.line.spoiled - spoiled == 1
    assert "taking the output from line" in board.transcript_path.read_text()


def test_a_round_of_asking_again_that_the_line_spoils_whole_is_asked_again(line):
    # Data and end frames spoiled, then both again in the answer to the first asking, which
    # ends at the silence limit (6 s) with no frame: a second asking must follow.
    rig, board = line
    spoiled, retried = spoil(rig, (b" D ", b" E "), 4), board.session.retried
    result = board.run(["sh", "-c", "seq 1 200; exit 3"], timeout=30)
    assert rig.line.spoiled - spoiled == 4
    expected = "".join(f"{n}\n" for n in range(1, 201)).encode()
    assert (result.returncode, result.stdout, result.stderr) == (3, expected, b"")
    assert board.session.retried - retried >= 2  # the chunk asked for twice


@pytest.mark.parametrize(
    ("folder", "size"),
    [
        # 320 chunks of 768 bytes and one byte more: 321 chunks, every one spoiled on the
        # first pass, then asked for again over a clean line, 40 to a request (the repair once
        # stopped after 8 requests, 320 chunks).
        pytest.param("", 245761, id="over 320 chunks"),
        # A 200-character folder: each chunk's request is some 230 bytes, 40 of them 9 KB, past
        # the 4095 bytes of a terminal's input line (n_tty), which cuts it: every request of
        # the repair was lost. 60 chunks spoiled on the first pass, asked again in shorter lines.
        pytest.param("deep-" * 40, 60 * 768, id="deep in long folders"),
    ],
)
def test_a_file_whose_every_chunk_the_first_pass_spoils_is_fetched_whole(
    line, console_user, tmp_path, monkeypatch, folder, size
):
    # The same pty line paced 20 times as fast: 20 s, not 2 min; the board's SHA-256 comes back.
    rig, board = line
    monkeypatch.setattr(rig.line, "noise_every", None)
    monkeypatch.setattr(rig.line, "bytes_per_second", 20 * rig.line.bytes_per_second)
    folder, chunks = f"{console_user.home}/{folder}", -(-size // 768)
    remote, back = f"{folder}/{chunks}-chunks.bin", tmp_path / "back.bin"
    command = f"mkdir -p {folder}; head -c {size} /dev/urandom >{remote}; sha256sum {remote}"
    made = board.run(["sh", "-c", command], 30)
    spoiled = spoil(rig, b" D ", chunks)
    board.get(remote, back)
    assert rig.line.spoiled - spoiled == chunks
    assert hashlib.sha256(back.read_bytes()).hexdigest() == made.stdout.split()[0].decode()


def test_a_fetch_or_a_streamed_copy_out_of_time_says_so_and_the_shell_stays_usable(
    line, console_user, tmp_path, monkeypatch
):
    # 20000 bytes at 115200 baud: (20000 * 4/3 * 1.06 + 27 frames * 60) bytes of 10 bits,
    # 2.6 s; twice that with no margin is 5 s, but the line runs at a third of its speed.
    rig, board = line
    remote = f"{console_user.home}/slow.bin"
    board.run(["sh", "-c", f"head -c 20000 /dev/urandom >{remote}"], timeout=30)
    monkeypatch.setattr(transfer, "FETCH_MARGIN", 0.0)
    with monkeypatch.context() as slow:
        slow.setattr(rig.line, "bytes_per_second", rig.line.bytes_per_second / 3)
        with pytest.raises(ConsoleError, match="ran out of time: 5 s were allowed") as raised:
            board.get(remote, tmp_path / "back.bin")
    assert "cable" not in raised.value.hint
    assert not (tmp_path / "back.bin").exists()
    # The session goes on: the shell answers the next command.
    assert board.run(["echo", "still here"], timeout=15).stdout == b"still here\n"
    # A streamed output taken from the board's copy had a fixed 600 s, short for a long run's
    # output at a low baud rate; it gets what a fetched file gets: 200 lines of 100 bytes are
    # 20000 bytes, 5 s as above.
    spoiled = spoil(rig, b" L ", 1)
    with monkeypatch.context() as slow:
        slow.setattr(rig.line, "bytes_per_second", rig.line.bytes_per_second / 3)
        command = board.stream(["sh", "-c", f"yes {'w' * 99} | head -n 200"])
        expected = "the command's output ran out of time: 5 s were allowed for its 20000 bytes"
        with pytest.raises(ConsoleError, match=expected):
            list(command.lines())
    assert rig.line.spoiled - spoiled == 1
    assert board.run(["echo", "still here"], timeout=15).stdout == b"still here\n"


@pytest.mark.parametrize("kernel_line_after_the_prompt", [False, True])
def test_a_spoiled_end_frame_does_not_stall(line, long_silence, kernel_line_after_the_prompt):
    rig, board = line
    spoiled = spoil(rig, b" E ", 1)
    if kernel_line_after_the_prompt:
        # A kernel line right behind the prompt, read with it: taking it must not lose the
        # prompt (it did, and the request waited out the silence limit).
        rig.line.line_after = (board.session.prompt, b"\r\n[   12.5] usb 1-1: reset\r\n")
    started = time.monotonic()
    result = board.run(["sh", "-c", "echo end; exit 9"], timeout=2 * LONG_SILENCE)
    took = time.monotonic() - started
    assert rig.line.spoiled - spoiled == 1
    assert rig.line.line_after is None, "the kernel line was not put after the prompt"
    assert (result.returncode, result.stdout) == (9, b"end\n")
    # The shell's unique prompt ends the request: no waiting out the silence limit.
    assert took < LONG_SILENCE / 2, took
