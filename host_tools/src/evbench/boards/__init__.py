"""Boards by URL. Each transport is a module or package of this folder behind the Board
protocol (base.py), declaring its URL schemes with `@scheme` on its parser (urls.py holds
the registry); every module is collected when this package is imported, so a new transport
is one new module (docs/boards.md lists them; a module named `_...` is a helper)."""

from __future__ import annotations

from evbench.boards.base import (
    Board,
    BoardOptions,
    CommandResult,
    ConnectionLost,
    RemoteBoard,
    StreamedCommand,
)
from evbench.boards.urls import collect, scheme_of, schemes
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


# Last: the transports import this package's modules above.
collect(__path__, __name__)

__all__ = [
    "Board",
    "BoardOptions",
    "CommandResult",
    "ConnectionLost",
    "RemoteBoard",
    "StreamedCommand",
    "open_board",
]
