"""The built-in local board: the agent runs as a separate process on this machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from evbench.boards.base import (
    Board,
    BoardOptions,
    CommandResult,
    PipedCommand,
    StreamedCommand,
    child_environment,
)
from evbench.boards.urls import scheme
from evbench_core.errors import UserError

LOCAL = "local"


@scheme(LOCAL, "local", transport="local", board="LocalBoard", example="local")
def parse_local(url: str) -> str:
    """The built-in board has no options: its URL is the word itself."""
    if url != LOCAL:
        raise UserError(f"not the local board: {url!r}", hint="write local")
    return url


class LocalStreamedCommand(StreamedCommand):
    def __init__(self, argv: Sequence[str]) -> None:
        # Closed with the object: stderr is read after the command ends.
        self._errors = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        try:
            self._process = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                text=True,
                errors="replace",
                env=child_environment(),
                # Its own process group: Ctrl-C on the host reaches it once,
                # through interrupt(), not twice through the terminal.
                start_new_session=True,
            )
        except OSError as error:
            self._errors.close()
            raise UserError(f"cannot start {argv[0]}: {error.strerror}") from error
        assert self._process.stdout is not None  # a PIPE
        self._stdout = self._process.stdout

    def lines(self) -> Iterator[str]:
        for line in self._stdout:
            yield line.rstrip("\n")

    def wait(self, timeout: float) -> int:
        code = self._process.wait(timeout)
        if code < 0:
            # Killed outright: its workers and sampler (its process group) would go on
            # writing into a run the host is about to seal. They stop with it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)
        return code

    def stderr(self) -> str:
        self._errors.seek(0)
        return self._errors.read()

    def interrupt(self) -> None:
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)


class LocalPipedCommand(PipedCommand):
    def __init__(self, argv: Sequence[str]) -> None:
        # Output goes to files, so a command that writes while we feed it never blocks.
        self._argv = tuple(argv)
        self._out = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finish()
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finish()
        try:
            self._process = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=self._out,
                stderr=self._err,
                env=child_environment(),
            )
        except OSError as error:
            raise UserError(f"cannot start {argv[0]}: {error.strerror}") from error
        assert self._process.stdin is not None  # a PIPE
        self._stdin = self._process.stdin

    def write(self, data: bytes) -> None:
        self._stdin.write(data)

    def finish(self, timeout: float) -> CommandResult:
        # A BrokenPipeError means it ended early; its status and output say why.
        with contextlib.suppress(BrokenPipeError):
            self._stdin.close()
        try:
            returncode = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            returncode = self._process.wait()
        outputs = []
        for handle in (self._out, self._err):
            handle.seek(0)
            outputs.append(handle.read())
            handle.close()
        return CommandResult(self._argv, returncode, outputs[0], outputs[1])


class LocalBoard(Board):
    url = "local"
    is_local = True

    @classmethod
    def from_url(cls, url: str, options: BoardOptions) -> LocalBoard:
        return cls()

    def run(self, argv: Sequence[str], timeout: float, stdin: bytes | None = None) -> CommandResult:
        completed = subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            timeout=timeout,
            check=False,
            env=child_environment(),
        )
        return CommandResult(tuple(argv), completed.returncode, completed.stdout, completed.stderr)

    def stream(self, argv: Sequence[str]) -> StreamedCommand:
        return LocalStreamedCommand(argv)

    def pipe(self, argv: Sequence[str]) -> PipedCommand:
        return LocalPipedCommand(argv)

    def put(self, local: Path, remote: str) -> None:
        shutil.copyfile(local, remote)

    def get(self, remote: str, local: Path) -> None:
        shutil.copyfile(remote, local)

    def agent_command(self) -> list[str]:
        # The agent installed beside these host tools, run by the same Python.
        return [sys.executable, "-m", "evbench_agent"]
