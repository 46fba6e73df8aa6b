"""The `evboard` pytest fixture: the virtual ARM64 board, booted once per session.

Test modules of the e2e tier import it (`from evboard_fixture import evboard_session`)
and share one boot per pytest run.
Building the image when it is not cached takes about 6 minutes, booting under
software emulation one to three; both have hard deadlines. Running
`python tests/board/evboard_image.py` first (as `make test-e2e` does) keeps
the build out of the first test's time.
"""

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import require, require_command
from evboard_archive import BoardBuildError
from evboard_image import BOARD_FILES, BoardImage, ensure_board
from evboard_qemu import VirtualBoard
from evboard_rootfs import ROOT_PASSWORD
from evboard_ssh import write_ssh_home

EVBENCH = Path(sys.executable).with_name("evbench")
BOOT_TIMEOUT = float(os.environ.get("EVBOARD_BOOT_TIMEOUT", "480"))
COMMAND_TIMEOUT = 900  # one evbench command on the emulated board (runs are 10-20x slower)
#: Codec runs here take one worker process, not the quick plan's eight: a worker starts
#: in about 7 s on the emulated board, and each costs the emulator CPU time the other
#: tiers beside it need (a quick json+protobuf run: 26-36 CPU s with three workers, 17-25
#: with one, measured 2026-12-06). Nothing these tests check depends on how many there
#: are: with one replicate the table says "n too small", and verdicts are tested locally.
ONE_WORKER = ("--processes", "1")


def board_image() -> BoardImage:
    """The board run-e2e.sh built or found for this tier (EVBOARD_IMAGE, its directory),
    or, without it, the board for today's inputs: looking them up takes apt-get update
    and apt-cache (minutes on a loaded machine), so the tier does it once."""
    given = os.environ.get("EVBOARD_IMAGE")
    if given and all((Path(given) / name).exists() for name in BOARD_FILES):
        return BoardImage(Path(given))
    return ensure_board()


@dataclass
class BoardSession:
    """A booted board and a HOME whose ~/.ssh knows it, as an engineer's would."""

    board: VirtualBoard
    home: Path

    @property
    def ssh_url(self) -> str:
        return f"ssh://root@127.0.0.1:{self.board.ssh_port}"

    @property
    def serial_url(self) -> str:
        return f"serial://{self.board.console_path}?baud=115200&user=root"

    def env(self) -> dict[str, str]:
        """The environment of an evbench command: this HOME, the console password."""
        env = dict(os.environ)
        env.pop("SSH_AUTH_SOCK", None)  # only the test key, not the developer's agent
        env["HOME"] = str(self.home)
        env["EVBENCH_PASSWORD"] = ROOT_PASSWORD
        return env

    def evbench(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess:
        """Run the real `evbench` command; on a hang or failure show the console's end."""
        require(EVBENCH.exists(), f"the evbench command ({EVBENCH})")
        try:
            done = subprocess.run(
                [str(EVBENCH), *args],
                cwd=self.home,  # console transcripts land here, not in the work tree
                env=self.env(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"evbench {' '.join(args)} hung for {timeout} s\n{self.board.transcript()}")
        if done.returncode != 0:
            print(f"--- console transcript ---\n{self.board.transcript()}")
        return done

    def ssh(self, command: str, timeout: float = 120) -> str:
        """Run a command on the board with OpenSSH's client (a check outside evbench)."""
        config = str(self.home / ".ssh" / "config")
        port = str(self.board.ssh_port)
        done = subprocess.run(
            [require_command("ssh"), "-F", config, "-p", port, "root@127.0.0.1", command],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"ssh {command!r} failed: {done.stderr}"
        return done.stdout

    def upload(self, data: bytes, path: str, timeout: float = 300) -> None:
        """Write data to a file on the board through OpenSSH (`cat > path`)."""
        config = str(self.home / ".ssh" / "config")
        port = str(self.board.ssh_port)
        done = subprocess.run(
            [require_command("ssh"), "-F", config, "-p", port, "root@127.0.0.1", f"cat > {path}"],
            input=data,
            env=self.env(),
            capture_output=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"uploading {path} failed: {done.stderr!r}"


#: The board this pytest process booted. Each e2e module imports the fixture below,
#: which makes it one session fixture per module: they share this one boot (one to
#: three minutes each) instead of booting a board per module.
_BOOTED: list[BoardSession] = []


@pytest.fixture(scope="session", name="evboard")
def evboard_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BoardSession]:
    if _BOOTED and _BOOTED[0].board.running():
        yield _BOOTED[0]
        return
    for command in ("qemu-system-aarch64", "debootstrap", "qemu-aarch64-static", "depmod"):
        require_command(command)
    try:
        image = board_image()
    except BoardBuildError as e:
        pytest.fail(f"the virtual board could not be built: {e}")
    board = VirtualBoard(image, tmp_path_factory.mktemp("evboard"))
    try:
        board.boot(boot_timeout=BOOT_TIMEOUT)
        home = tmp_path_factory.mktemp("evboard-home")
        write_ssh_home(home, board)
        _BOOTED[:] = [BoardSession(board, home)]
        yield _BOOTED[0]
    finally:
        _BOOTED.clear()
        board.stop()
