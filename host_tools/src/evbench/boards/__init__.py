"""Boards by URL: `local`, `ssh://`, the serial console (`serial://`, `rfc2217://`,
`socket://`) and a labgrid place (`labgrid://`). URLs are parsed in urls.py; each
transport lives in its own module or package."""

from __future__ import annotations

from evbench.boards.base import (
    Board,
    CommandResult,
    ConnectionLost,
    RemoteBoard,
    StreamedCommand,
)
from evbench.boards.urls import transport_of
from evbench_agent.errors import UserError


def open_board(
    url: str,
    *,
    accept_new_host_key: bool = False,
    place_timeout: float | None = None,
    power_cycle: bool = False,
) -> Board:
    """The board a `--board` URL names (each transport imported only when used).

    `place_timeout`: how long a `labgrid://` board waits for its place (None: its default);
    `power_cycle`: switch a `labgrid://` board off and on before connecting.
    """
    transport = transport_of(url)
    if transport == "labgrid":
        from evbench.boards.labgrid import LabgridBoard

        return LabgridBoard(url, accept_new_host_key, place_timeout, power_cycle)
    if power_cycle:
        raise UserError(
            f"--power-cycle needs a labgrid:// board (its place's power switch), not {url}",
            hint="power the board yourself, or run it from a labgrid place",
        )
    if transport == "local":
        from evbench.boards.local import LocalBoard

        return LocalBoard()
    if transport == "ssh":
        from evbench.boards.ssh import SshBoard

        return SshBoard(url, accept_new_host_key=accept_new_host_key)
    from evbench.boards.serial import SerialBoard

    return SerialBoard(url)


__all__ = [
    "Board",
    "CommandResult",
    "ConnectionLost",
    "RemoteBoard",
    "StreamedCommand",
    "open_board",
]
