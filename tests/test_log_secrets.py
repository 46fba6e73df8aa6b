"""`-vv` tells the protocol's detail and no secret: `evbench -vv run` with the board password
and a link token in its environment, over the loopback sshd (a password login) and the
serial console rig (the agent deployed over the line). Every file each leaves is read."""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from console_rig import transcript_streams

from evbench_core import results

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EVBENCH = [sys.executable, "-m", "evbench"]
QUICK = ["--quick", "--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf"]
BOARD_PYTHON = "/usr/bin/python3"


def run_vv(board: str, out: Path, env: dict[str, str]) -> list[str]:
    """`evbench -vv run` of the quick codec run on `board`: its standard error's lines,
    after checking that neither secret was said."""
    argv = [*EVBENCH, "-vv", "run", "--board", board, *QUICK, "--out", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    for secret in (env["EVBENCH_PASSWORD"], env["EVBENCH_LINK_TOKEN"]):
        assert secret not in said
    return done.stderr.splitlines()


def assert_no_secret_in_files(directories: list[Path], env: dict[str, str]) -> int:
    needles = [env["EVBENCH_PASSWORD"].encode(), env["EVBENCH_LINK_TOKEN"].encode()]
    read = 0
    for directory in directories:
        for path in directory.rglob("*"):
            if path.is_file():
                read += 1
                assert not [n for n in needles if n in path.read_bytes()], path
    return read


def link_token(tag: str) -> dict[str, str]:
    """A link token in the environment, as a lab's job would set it for the link suite."""
    return {"EVBENCH_LINK_TOKEN": f"token-sentinel-{tag}-" + os.urandom(6).hex()}


def has(said: list[str], *starts: str) -> None:
    for start in starts:
        assert any(line.startswith(start) for line in said), (start, said)


def test_vv_over_ssh_with_a_password_shows_the_channels_and_no_secret(
    sshd, ssh_home, console_user, tmp_path
):
    (ssh_home / ".ssh" / "id_ed25519").unlink()  # no key: the password is the way in
    shutil.rmtree(console_user.home / ".evbench", ignore_errors=True)  # so it deploys
    env = {**os.environ, "EVBENCH_PASSWORD": console_user.password, **link_token("ssh")}
    board = f"ssh://{console_user.name}@127.0.0.1:{sshd.port}?python={BOARD_PYTHON}"
    said = run_vv(board, tmp_path / "run", env)
    address = f"{console_user.name}@127.0.0.1:{sshd.port}"
    has(
        said,
        f"evbench: info: connecting to {address}",
        f"evbench: info: connected to {address} (SSH-2.0-OpenSSH",
        "evbench: info: deploying the agent (",
        "evbench: info: launching run ",
        "evbench: info: suite codec: started",
        "evbench: info: fetching run ",
        "evbench: info: history: adding run ",
        "evbench: debug: [evbench.boards.ssh] channel ",
        "evbench: debug: [evbench.boards.ssh] sftp put ",
        "evbench: debug: [evbench.boards.ssh] sftp get ",
    )
    assert any(line.endswith("logged in with a password)") for line in said)
    assert any(" exit status 0, " in line and " bytes out" in line for line in said)
    files = [tmp_path, console_user.home / ".evbench", sshd.log.parent]
    assert assert_no_secret_in_files(files, env) > 10  # it did read the run


def test_quick_run_over_serial_brings_back_a_verified_run_and_no_secret(
    console_line, console_user, tmp_path
):
    out = tmp_path / "run"
    shutil.rmtree(console_user.home / ".evbench", ignore_errors=True)  # so it deploys
    env = {**os.environ, "EVBENCH_PASSWORD": console_user.password, **link_token("console")}
    said = run_vv(f"{console_line.url}?user={console_user.name}", out, env)
    has(
        said,
        f"evbench: info: connecting to the console {console_line.url}",
        "evbench: info: shell ready on ",
        "evbench: debug: [evbench.boards.serial.login] login prompt seen; logging in as ",
        "evbench: debug: [evbench.boards.serial.login] password prompt seen; sending the password",
        "evbench: debug: [evbench.boards.serial.shell] command ",
        "evbench: debug: [evbench.boards.serial.transfer] got ",
        "evbench: info: suite codec: started",
        "evbench: info: fetching run ",
    )
    assert results.verify_checksums(out) == []
    run = results.load_run(out)
    assert run.complete
    assert {record["codec"] for record in run.records} >= {"json", "protobuf"}
    assert "@@" in (out / "console.transcript").read_text()
    assert console_line.noise.written > 0
    assert (console_user.home / ".evbench" / "agent" / "evbench-agent.pyz").is_file()
    # No file the run leaves, here or on the board, holds a secret, nor a transcript's stream.
    assert assert_no_secret_in_files([tmp_path, console_user.home / ".evbench"], env) > 10
    transcripts = [*tmp_path.rglob("*.transcript")]
    assert len(transcripts) >= 2  # results/console/... and the copy beside the results
    for path in transcripts:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        for stream in transcript_streams(path).values():
            assert console_user.password.encode() not in stream, path
