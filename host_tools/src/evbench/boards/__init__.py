"""Boards by URL. Each transport lives in its own module or package behind the Board
protocol (base.py); each scheme is registered by its parser in urls.py, which names the
transport that opens it (docs/boards.md lists them)."""

from __future__ import annotations

from evbench.boards.base import (
    Board,
    BoardOptions,
    CommandResult,
    ConnectionLost,
    RemoteBoard,
    StreamedCommand,
)
from evbench.boards.urls import scheme_of, schemes
from evbench_core.errors import UserError


def open_board(
    url: str,
    *,
    accept_new_host_key: bool = False,
    place_timeout: float | None = None,
    power_cycle: bool = False,
) -> Board:
    """The board a `--board` URL names (its transport imported only now).

    An unknown scheme is a UserError naming the known ones (urls.py's registry);
    `place_timeout`: how long a `labgrid://` board waits for its place (None: its default);
    `power_cycle`: switch the board off and on before connecting (a scheme with a power switch).
    """
    entry = scheme_of(url)
    if power_cycle and not entry.power_switch:
        able = ", ".join(f"{each.name}://" for each in schemes() if each.power_switch)
        raise UserError(
            f"--power-cycle needs a board with a power switch ({able}), not {url}",
            hint="power the board yourself",
        )
    options = BoardOptions(accept_new_host_key, place_timeout, power_cycle)
    return entry.board_class().from_url(url, options)


__all__ = [
    "Board",
    "BoardOptions",
    "CommandResult",
    "ConnectionLost",
    "RemoteBoard",
    "StreamedCommand",
    "open_board",
]
