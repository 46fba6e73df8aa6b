"""evbench console: an interactive pass-through to a board's console, like picocom.

Keys go to the board as typed (the local terminal in raw mode); Ctrl-] quits.
Every byte both ways lands in a timestamped transcript, but for a password: the
keys typed at a password prompt are recorded only as their count.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import sys
import termios
import tty
from pathlib import Path

from evbench.boards.base import PASSWORD_VARIABLE
from evbench.boards.serial import transcript
from evbench.boards.serial.address import CONSOLE, parse_console_url
from evbench.boards.serial.link import ConsoleLink, Deadline
from evbench.boards.urls import usage
from evbench.commands._board_options import add_board_options
from evbench_core.errors import ExitCode

NAME = "console"
HELP = "an interactive terminal on a board's serial console (Ctrl-] quits)"
QUIT_KEY = b"\x1d"  # Ctrl-], as telnet uses
POLL = 0.05
#: A prompt for a secret in the board's output: login's "Password:", but also sudo's
#: "[sudo] password for pi:" or ssh's "Enter passphrase for key ...:". Anywhere, not only
#: at the end: a kernel message (or any line) can follow the prompt before the keys come.
PASSWORD_PROMPT = re.compile(rb"(?i)(?:password|passphrase)[^\r\n]*:")
#: How much of the board's last output is kept to recognise one split over reads.
PROMPT_TAIL = 200


class _SessionTranscript(transcript.Transcript):
    """The transcript of a person's session: what they type after the board asks for a
    password, up to the line's end, is counted and never kept (the board does not echo
    it, so the keys are its only copy; any password, not only EVBENCH_PASSWORD)."""

    def __init__(self, path: Path, url: str) -> None:
        super().__init__(path, url)
        self._shown = b""  # the end of the board's output since the last line typed
        #: A password prompt came since the last line typed: kept once seen, so whatever
        #: the board prints after it (a kernel message, a banner) cannot undo it.
        self._asked = False
        self._withheld: int | None = None  # bytes typed at a password prompt (None: none)

    def received(self, data: bytes) -> None:
        super().received(data)
        self._shown = (self._shown + data)[-PROMPT_TAIL:]
        self._asked = self._asked or PASSWORD_PROMPT.search(self._shown) is not None

    def sent(self, data: bytes) -> None:
        if self._withheld is None and self._asked:
            self._withheld = 0
        if self._withheld is not None:
            breaks = [at for at in (data.find(b"\r"), data.find(b"\n")) if at >= 0]
            if not breaks:
                self._withheld += len(data)
                return
            self._withheld += min(breaks)
            self._write_withheld()
            data = data[min(breaks) :]
            self._shown, self._asked = b"", False  # the same prompt holds back one line
        super().sent(data)

    def _write_withheld(self) -> None:
        count, self._withheld = self._withheld, None
        # After what was typed before the prompt (held back if it could begin EVBENCH_PASSWORD).
        before = self._streams[">"].drain()
        self._write(">", before + f"<{count} bytes typed at a password prompt withheld>".encode())

    def close(self) -> None:
        if self._withheld is not None:  # quit before the line ended
            self._write_withheld()
        super().close()


def setup_parser(parser: argparse.ArgumentParser) -> None:
    add_board_options(
        parser,
        required=True,
        help=f"console URL: {usage(CONSOLE)}",
        ssh=False,
        lab=False,
    )
    parser.add_argument(
        "--transcript",
        type=Path,
        help=f"where to save the transcript (default: {transcript.DEFAULT_DIRECTORY}/...)",
    )


def _pass_through(link: ConsoleLink, keys: int, screen: int) -> None:
    """Copy keys to the board and the board to the screen until the quit key or end of input."""
    while True:
        ready, _, _ = select.select([keys], [], [], POLL)
        if ready:
            typed = os.read(keys, 1024)
            if not typed:
                return  # end of input (not a terminal): nothing more to send
            quit_at = typed.find(QUIT_KEY)
            if quit_at >= 0:
                if quit_at:
                    link.write(typed[:quit_at])
                return
            link.write(typed)
        if link.read_some(Deadline(POLL)):
            os.write(screen, bytes(link.buffer))
            link.buffer.clear()


def run(args: argparse.Namespace) -> int:
    address = parse_console_url(args.board)
    path = args.transcript or transcript.default_path(address.port)
    record = _SessionTranscript(path, args.board)
    # Typed at a login prompt, the password reaches the board one key at a time:
    # the transcript redacts it over the reassembled stream all the same.
    record.add_secret(os.environ.get(PASSWORD_VARIABLE, "").encode())
    link = ConsoleLink(address, record)
    keys, screen = sys.stdin.fileno(), sys.stdout.fileno()
    saved = termios.tcgetattr(keys) if os.isatty(keys) else None
    print(f"evbench: connected to {args.board}; Ctrl-] quits", file=sys.stderr, flush=True)
    try:
        if saved is not None:
            tty.setraw(keys)
        _pass_through(link, keys, screen)
    finally:
        if saved is not None:
            termios.tcsetattr(keys, termios.TCSADRAIN, saved)
        link.close()
    print(f"\r\nevbench: disconnected; transcript: {path}", file=sys.stderr)
    return ExitCode.OK
