"""The serial console transport: the raw line, login, checksummed frames, a shell
session and file transfers, on which board.py builds the Board protocol."""

from evbench.boards.serial.board import SerialBoard

__all__ = ["SerialBoard"]
