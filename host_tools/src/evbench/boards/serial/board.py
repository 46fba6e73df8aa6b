"""Boards over a serial console: `serial:///dev/ttyUSB0`, `rfc2217://HOST:PORT`, `socket://HOST:PORT`.

The Board protocol over a logged-in shell (the modules beside this one): commands and
their exact output through checksummed frames, files as base64 chunks. One
session at a time: a console has one shell, so requests never overlap.
"""

from __future__ import annotations

import logging
import shlex
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from evbench.boards.base import (
    BoardOptions,
    CommandResult,
    ConnectionLost,
    RemoteBoard,
    StreamedCommand,
    shown,
)
from evbench.boards.serial import frames, transcript
from evbench.boards.serial.address import parse_console_url
from evbench.boards.serial.frames import Reply
from evbench.boards.serial.link import ConsoleLink, Deadline
from evbench.boards.serial.login import LoginStrategy, password_from_user
from evbench.boards.serial.shell import LoginWatch, ShellSession
from evbench.boards.serial.transfer import TransferProgress, get_file, put_file, read_file
from evbench_core.log_output import quiet

log = logging.getLogger(__name__)

#: Login, from waking the console to an open shell.
LOGIN_TIMEOUT = 40.0
#: A streamed command (the agent following a run) that sends nothing for this
#: long has lost its line: even a slow phase reports progress more often.
STREAM_SILENCE = 600.0


def _show_progress(verb: str, name: str) -> TransferProgress:
    """Progress on standard error: one updating line on a terminal, else every few seconds."""
    terminal = sys.stderr.isatty()
    shown_at, width = 0.0, 0

    def show(done: int, total: int, left: float) -> None:
        nonlocal shown_at, width
        now = time.monotonic()
        if quiet() or (done < total and now - shown_at < (0.2 if terminal else 5.0)):
            return
        shown_at = now
        end = "\n" if done >= total or not terminal else "\r"
        text = f"evbench: {verb} {name}: {done}/{total} bytes, about {left:.0f} s left"
        # A line drawn over a longer one is padded: "10 s left" after "9 s left" left "leftt".
        padded = text.ljust(width) if terminal else text
        width = len(text)
        print(padded, end=end, file=sys.stderr, flush=True)

    return show


class SerialStreamedCommand(StreamedCommand):
    """A command whose standard output comes as numbered, checksummed line frames."""

    def __init__(self, board: SerialBoard, argv: Sequence[str]) -> None:
        self._session = board.session
        self._tag = frames.new_tag()
        self._reply = Reply()
        self._ended = False
        encoded = self._session.encode_command(shlex.join(argv))
        log.debug("streaming command %s: %s", self._tag, shown(shlex.join(argv)))
        self._session.link.write(f"__evb_t {self._tag} {encoded}\r".encode())

    def lines(self) -> Iterator[str]:
        shown = 0
        shown_bytes = 0
        link = self._session.link
        silence = Deadline(STREAM_SILENCE)
        reader = frames.FrameReader(link.buffer, (self._tag,), self._session.prompt)
        watch = LoginWatch(link)  # a reboot mid-run: reconnect now, not after the silence
        while not self._reply.ended:
            watch.saw(link.read_some(Deadline(0.2)))
            if silence.expired:  # kernel lines may come; the command's own did not
                raise ConnectionLost(
                    f"nothing came from the command over {link.address.url}"
                    f" for {STREAM_SILENCE:.0f} s",
                    hint=f"check the cable; transcript: {link.transcript_path}",
                )
            for frame in reader.take():
                silence = Deadline(STREAM_SILENCE)
                try:
                    self._reply.add(frame)
                except ValueError as error:
                    raise link.error(str(error)) from error
            if reader.prompt_after:
                break  # the shell is back: the end frame was spoiled on the line
            # Lines come in order; one the line spoiled is taken from the
            # board's copy once the command ends, so later lines wait for it.
            while shown in self._reply.lines:
                line = self._reply.lines[shown]
                yield line.decode("utf-8", "replace")
                shown += 1
                shown_bytes += len(line) + 1
        self._ended = True
        log.debug("streamed command %s: %d lines came as frames", self._tag, shown)
        copy = self._reply.files.get("o")
        if copy is None or copy.size is None or shown_bytes < copy.size:
            yield from self._recover(shown)

    def _recover(self, shown: int) -> Iterator[str]:
        """The lines from `shown` on, from the board's copy of the whole output."""
        session = self._session
        session.link.transcript.note(f"taking the output from line {shown} from the board's copy")
        lines = read_file(session, '"$__evb_d/o"', "the command's output").split(b"\n")
        if lines and not lines[-1]:
            lines.pop()  # the final newline ends the last line; it does not start one
        for line in lines[shown:]:
            yield line.decode("utf-8", "replace")

    def wait(self, timeout: float) -> int:
        if not self._ended:
            for _line in self.lines():
                pass
        if self._reply.status is None:
            self._session.repair(
                self._reply, {}, Deadline(timeout), lambda tag: f"__evb_m {tag} 0\r".encode()
            )
        if self._reply.status is None:
            raise self._session.link.error("the command's exit status never came back")
        log.debug("streamed command %s: exit status %d", self._tag, self._reply.status)
        return self._reply.status

    def stderr(self) -> str:
        err = read_file(self._session, '"$__evb_d/e"', "the command's standard error")
        return err.decode("utf-8", "replace")

    def interrupt(self) -> None:
        log.debug("streamed command %s: interrupted with Ctrl-C", self._tag)
        self._ended = True
        # The console has one shell: the next request is answered only once it is free.
        self._session.interrupt_and_resync()


class SerialBoard(RemoteBoard):
    """A board reached through its console: a login shell on a serial line."""

    def __init__(self, url: str, show_progress: bool = True) -> None:
        self.address = parse_console_url(url)
        self.url = url
        self.python = self.address.python
        self.work_dir = self.address.work_dir
        self.show_progress = show_progress
        self.session: ShellSession
        self._open()

    @classmethod
    def from_url(cls, url: str, options: BoardOptions) -> SerialBoard:
        return cls(url)

    def _open(self) -> None:
        log.info("connecting to the console %s as %s", self.url, self.address.user)
        record = transcript.Transcript(transcript.default_path(self.address.port), self.url)
        link = ConsoleLink(self.address, record)
        login = LoginStrategy(
            link,
            self.address.user,
            lambda: password_from_user(self.address.user, self.url),
            timeout=LOGIN_TIMEOUT,
        )
        self.session = ShellSession(link, login)
        try:
            self.session.open()
            if not self.address.work_dir.startswith("/"):
                self.work_dir = f"{self._home()}/{self.address.work_dir}"
        except BaseException:
            link.close()
            raise

    def _home(self) -> str:
        # An already-open shell may sit anywhere: "relative to the login
        # directory" must not mean "relative to wherever that shell is".
        status, out, _err = self.session.run('printf %s "$HOME"', timeout=15.0)
        home = out.decode("utf-8", "replace")
        if status != 0 or not home.startswith("/"):
            raise self.session.link.error("the board's shell has no usable $HOME")
        return home.rstrip("/")

    @property
    def transcript_path(self) -> Path:
        return self.session.link.transcript_path

    def save_transcript(self, directory: Path) -> Path | None:
        """A copy of this session's transcript in `directory` (beside the results)."""
        return self.session.link.transcript.copy_to(directory)

    def run(self, argv: Sequence[str], timeout: float, stdin: bytes | None = None) -> CommandResult:
        stdin_path = ""
        if stdin is not None:
            stdin_path = self._upload_bytes(stdin)
        try:
            status, out, err = self.session.run(shlex.join(argv), timeout, stdin_path)
        finally:
            if stdin_path:
                self.session.run(f"rm -f {stdin_path}", timeout=15.0)
        return CommandResult(tuple(argv), status, out, err)

    def _upload_bytes(self, data: bytes) -> str:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="evbench-stdin-") as staging:
            local = Path(staging) / "stdin"
            local.write_bytes(data)
            remote = f"/tmp/evbench-stdin-{frames.new_tag()}"
            put_file(self.session, local, remote)
        return remote

    def stream(self, argv: Sequence[str]) -> StreamedCommand:
        return SerialStreamedCommand(self, argv)

    def put(self, local: Path, remote: str) -> None:
        show = _show_progress("sending", local.name) if self.show_progress else None
        put_file(self.session, local, remote, show)

    def get(self, remote: str, local: Path) -> None:
        show = _show_progress("fetching", remote.rsplit("/", 1)[-1]) if self.show_progress else None
        get_file(self.session, remote, local, show)

    def reconnect(self) -> None:
        log.debug("%s: reconnecting", self.url)
        self.session.close()
        self._open()

    def close(self) -> None:
        self.session.close()
