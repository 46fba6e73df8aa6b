"""The board protocol: what every transport (local, ssh, serial) provides.

deploy, run, fetch and diag are written once against this interface, as
labgrid's drivers sit behind its protocols. A board says what it is
(`is_local`, `transcript_path`), so no caller tests URL strings or attributes.
`RemoteBoard` is the base of every transport that runs the deployed zipapp.

The abstract methods are what a transport must write (a class missing one cannot be
made, and tests/test_board_schemes.py checks every registered transport); the others
have a default that fits a transport without that ability. docs/boards.md ("The Board
protocol") is the guide, checked against this file by the same test.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evbench_core.errors import UserError

#: Where a password for a board login comes from (never argv, never a file).
PASSWORD_VARIABLE = "EVBENCH_PASSWORD"
#: The deployed agent, relative to a remote board's work directory.
ZIPAPP = "agent/evbench-agent.pyz"


def child_environment() -> dict[str, str]:
    """This process's environment without the board password, for every program evbench
    starts on this host (the agent, decompressors, protoc, lavacli, its own children):
    none of them needs it, and none can then show it in /proc/PID/environ."""
    return {key: value for key, value in os.environ.items() if key != PASSWORD_VARIABLE}


def shown(command: str, limit: int = 160) -> str:
    """A command as a -vv log line shows it: one line, at most `limit` characters."""
    flat = command.replace("\n", "\\n")
    return flat if len(flat) <= limit else f"{flat[: limit - 3]}..."


class ConnectionLost(UserError):
    """The transport to the board dropped or cannot be opened; `reconnect` may bring it back."""


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class StreamedCommand(abc.ABC):
    """A command whose output is read line by line while it runs."""

    @abc.abstractmethod
    def lines(self) -> Iterator[str]:
        """Standard output, line by line, until the command closes it."""

    @abc.abstractmethod
    def wait(self, timeout: float) -> int:
        """The exit status, after at most `timeout` seconds."""

    @abc.abstractmethod
    def stderr(self) -> str:
        """What the command wrote to standard error (after `wait`)."""

    @abc.abstractmethod
    def interrupt(self) -> None:
        """Ask the command to stop as Ctrl-C would."""


class PipedCommand(abc.ABC):
    """A command fed through its standard input while it runs (flashing streams an image)."""

    @abc.abstractmethod
    def write(self, data: bytes) -> None:
        """Send bytes to its standard input; OSError when the command has gone."""

    @abc.abstractmethod
    def finish(self, timeout: float) -> CommandResult:
        """Close its standard input and wait at most `timeout` s for it to end."""


@dataclass(frozen=True)
class BoardOptions:
    """The `--board` switches besides the URL (commands/_board_options.py); a transport
    uses its own."""

    #: SSH: trust an unknown host key and save it (trust on first use).
    accept_new_host_key: bool = False
    #: labgrid: how long to wait for the place (None: the transport's default).
    place_timeout: float | None = None
    #: Switch the board off and on before connecting (only a transport with a power switch).
    power_cycle: bool = False


class Board(abc.ABC):
    """A place where the agent runs: this machine, or a board over a transport."""

    url: str
    #: True for the built-in board on this machine: the agent writes its results
    #: straight into --out, nothing is deployed or fetched.
    is_local: bool = False
    #: On a remote board: the interpreter that runs the deployed agent, and the
    #: directory (relative to the login directory, or absolute) for the agent and runs.
    python: str = "python3"
    work_dir: str = ".evbench"

    @property
    def transcript_path(self) -> Path | None:
        """Where this session's console transcript is written, for transports that keep one."""
        return None

    @classmethod
    @abc.abstractmethod
    def from_url(cls, url: str, options: BoardOptions) -> Board:
        """The board `url` names, connected: what `open_board` calls for its scheme."""

    @abc.abstractmethod
    def run(self, argv: Sequence[str], timeout: float, stdin: bytes | None = None) -> CommandResult:
        """Run a command to completion within `timeout` seconds."""

    @abc.abstractmethod
    def stream(self, argv: Sequence[str]) -> StreamedCommand:
        """Start a command and read its output as it comes."""

    @abc.abstractmethod
    def put(self, local: Path, remote: str) -> None:
        """Copy a file to the board."""

    @abc.abstractmethod
    def get(self, remote: str, local: Path) -> None:
        """Copy a file from the board."""

    @abc.abstractmethod
    def agent_command(self) -> list[str]:
        """How to start evbench-agent on this board."""

    def save_transcript(self, directory: Path) -> Path | None:
        """A copy of the session's transcript in `directory`; None where there is none."""
        return None

    def lab_record(self) -> dict[str, Any] | None:
        """The lab place the board is in (the manifest's `lab`); None outside a lab."""
        return None

    def pipe(self, argv: Sequence[str]) -> PipedCommand:
        """Start a command and stream bytes into it (evbench flash --board)."""
        raise UserError(f"the board {self.url} cannot stream data into a command")

    def network_addresses(self) -> tuple[str, str]:
        """(this host's, the board's) addresses on the network connection to the board."""
        raise UserError(
            f"{self.url} is not reached over the network",
            hint="give the link peer as --peer HOST:PORT",
        )

    def reconnect(self) -> None:  # noqa: B027 - transports without a connection keep this
        """Open the transport again after ConnectionLost (the local board never loses it)."""

    def close(self) -> None:  # noqa: B027 - transports without a connection keep this
        """Release the transport."""

    def __enter__(self) -> Board:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class RemoteBoard(Board):
    """A board elsewhere: the agent is the zipapp deploy puts under `work_dir`."""

    @property
    def zipapp_path(self) -> str:
        """Where the deployed agent lives on the board."""
        return f"{self.work_dir}/{ZIPAPP}"

    def agent_command(self) -> list[str]:
        return [self.python, self.zipapp_path]
