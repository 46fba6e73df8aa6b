"""Boards by URL: `local` now; `ssh://` and `serial://` in their own modules."""

from __future__ import annotations

from evbench.boards.base import Board, CommandResult, StreamedCommand
from evbench_agent.errors import UserError

SCHEMES = ("local",)


def open_board(url: str) -> Board:
    """The board a `--board` URL names."""
    if url == "local":
        from evbench.boards.local import LocalBoard

        return LocalBoard()
    raise UserError(
        f"unsupported board {url!r}",
        hint=f"use one of: {', '.join(SCHEMES)}",
    )


__all__ = ["Board", "CommandResult", "StreamedCommand", "open_board"]
