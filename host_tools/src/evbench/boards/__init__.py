"""Boards by URL: `local` now; `ssh://` and `serial://` in their own modules."""

from __future__ import annotations

from evbench.boards.base import Board, CommandResult, ConnectionLost, StreamedCommand
from evbench_agent.errors import UserError

SCHEMES = (
    "local",
    "ssh://[USER@]HOST[:PORT]",
    "serial:///dev/TTY[?baud=N&user=NAME]",
    "rfc2217://HOST:PORT",
    "socket://HOST:PORT",
)


def open_board(url: str, *, accept_new_host_key: bool = False) -> Board:
    """The board a `--board` URL names."""
    if url == "local":
        from evbench.boards.local import LocalBoard

        return LocalBoard()
    if url.startswith("ssh://"):
        from evbench.boards.ssh import SshBoard

        return SshBoard(url, accept_new_host_key=accept_new_host_key)
    if url.startswith(("serial://", "rfc2217://", "socket://")):
        from evbench.boards.serial import SerialBoard

        return SerialBoard(url)
    raise UserError(
        f"unsupported board {url!r}",
        hint=f"use one of: {', '.join(SCHEMES)}",
    )


__all__ = ["Board", "CommandResult", "ConnectionLost", "StreamedCommand", "open_board"]
