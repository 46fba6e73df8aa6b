"""Reading a file a user names (samples, generator rules, a JSON map) that must be a
regular file: a FIFO, a device or a directory is refused at once instead of blocking
for ever or reading without end, and at most `cap` bytes are read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from evbench_core.errors import UserError


def read_regular(path: Path, cap: int, what: str) -> bytes:
    """The bytes of `path` (at most `cap`); UserError for anything but a regular file."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once rather than waiting
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise UserError(f"cannot read the {what} {path}: {error.strerror}") from None
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):  # before fdopen: it refuses a directory itself
        os.close(fd)
        raise UserError(
            f"the {what} {path} is not a regular file",
            hint="give a file (a FIFO, device or directory cannot be read whole)",
        )
    with os.fdopen(fd, "rb") as stream:
        if status.st_size > cap:
            raise UserError(f"the {what} {path} is {status.st_size} bytes, over {cap}")
        try:
            data = stream.read(cap + 1)
        except OSError as error:
            raise UserError(f"cannot read the {what} {path}: {error.strerror}") from None
    if len(data) > cap:
        raise UserError(f"the {what} {path} is over {cap} bytes")
    return data


__all__ = ["read_regular"]
