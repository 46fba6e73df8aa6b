"""Boards by URL: `local`, `ssh://` and the serial console (`serial://`, `rfc2217://`,
`socket://`). URLs are parsed in urls.py; each transport lives in its own module or package."""

from __future__ import annotations

from evbench.boards.base import (
    Board,
    CommandResult,
    ConnectionLost,
    RemoteBoard,
    StreamedCommand,
)
from evbench.boards.urls import transport_of


def open_board(url: str, *, accept_new_host_key: bool = False) -> Board:
    """The board a `--board` URL names (each transport imported only when used)."""
    transport = transport_of(url)
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
