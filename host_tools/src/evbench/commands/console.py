"""evbench console: an interactive pass-through to a board's console, like picocom.

Keys go to the board as typed (the local terminal in raw mode); Ctrl-] quits.
Every byte both ways lands in a timestamped transcript.
"""

from __future__ import annotations

import argparse
import os
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
    record = transcript.Transcript(path, args.board)
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
