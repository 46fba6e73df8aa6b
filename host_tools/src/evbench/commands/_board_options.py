"""The board options, `--board URL` and `--accept-new-host-key`: one definition for every command.

Every command that talks to a board adds them with `add_board_options`, so the
flags are spelled, explained and defaulted alike everywhere.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from evbench_agent.options import duration

if TYPE_CHECKING:
    from evbench.boards import Board

HOST_KEY_HELP = "trust an unknown SSH host key and save it to known_hosts"


def add_board_options(
    parser: argparse.ArgumentParser,
    *,
    default: str | None = None,
    required: bool = False,
    help: str | None = None,
    ssh: bool = True,
    lab: bool = True,
) -> None:
    """Add `--board` (with `default`, or `required`) and, for SSH boards, the host-key switch.

    `ssh=False` is for a command whose boards are never reached over SSH (the
    serial console): a host-key switch there would do nothing. `lab=False` is for a
    command that never takes a labgrid place (the console, flashing): no place switches.
    `help` defaults to every scheme the boards register (boards/urls.py).
    """
    if help is None:
        from evbench.boards.urls import usage

        help = f"board URL: {usage()}"
    if default is not None:
        help = f"{help} (default: {default})"
    parser.add_argument("--board", default=default, required=required, metavar="URL", help=help)
    if lab:
        _add_lab_options(parser)
    if ssh:
        parser.add_argument("--accept-new-host-key", action="store_true", help=HOST_KEY_HELP)


def _add_lab_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--place-timeout",
        # The run options' own reader: finite and above 0 (nan or inf would wait forever).
        type=duration,
        metavar="TIME",
        help="labgrid:// boards: how long to wait for the place before giving up with exit 2, "
        "e.g. 30m, 90s (default 600 s)",
    )
    parser.add_argument(
        "--power-cycle",
        action="store_true",
        help="labgrid:// boards: switch the board off and on through its place's power "
        "resource before connecting, and wait for it to answer",
    )


def open_board_from(args: argparse.Namespace) -> Board:
    """The board the options of `add_board_options` name (their defaults where not added)."""
    from evbench.boards import open_board  # the transports, only for a command that runs

    return open_board(
        args.board,
        accept_new_host_key=getattr(args, "accept_new_host_key", False),
        place_timeout=getattr(args, "place_timeout", None),
        power_cycle=getattr(args, "power_cycle", False),
    )
