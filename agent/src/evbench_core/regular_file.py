"""Reading a file a user names (samples, generator rules, a JSON map) or a run holds
that must be a regular file: a FIFO, a device or a directory is refused at once instead
of blocking for ever or reading without end, and at most `cap` bytes are read."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from evbench_core.errors import UserError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFile(OSError):
    """`path` exists but is no regular file (its strerror says what it is)."""


def open_regular(path: Path, follow: bool = True) -> BinaryIO:
    """`path` open for reading, if it is a regular file; OSError otherwise, NotRegularFile
    for a directory, FIFO, device or socket, and (`follow=False`) for a symbolic link."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once rather than waiting
        fd = os.open(path, flags if follow else flags | os.O_NOFOLLOW)
    except OSError as error:
        if error.errno == errno.ELOOP and not follow and Path(path).is_symlink():
            raise NotRegularFile(error.errno, "not a regular file (a symbolic link)") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # before fdopen: it refuses a directory itself
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(mode)), "not a file")
        raise NotRegularFile(0, f"not a regular file ({kind})")
    return os.fdopen(fd, "rb")


def read_regular(path: Path, cap: int, what: str) -> bytes:
    """The bytes of `path` (at most `cap`); UserError for anything but a regular file."""
    try:
        stream = open_regular(path)
    except NotRegularFile:
        raise UserError(
            f"the {what} {path} is not a regular file",
            hint="give a file (a FIFO, device or directory cannot be read whole)",
        ) from None
    except OSError as error:
        raise UserError(f"cannot read the {what} {path}: {error.strerror}") from None
    with stream:
        size = os.fstat(stream.fileno()).st_size
        if size > cap:
            raise UserError(f"the {what} {path} is {size} bytes, over {cap}")
        try:
            data = stream.read(cap + 1)
        except OSError as error:
            raise UserError(f"cannot read the {what} {path}: {error.strerror}") from None
    if len(data) > cap:
        raise UserError(f"the {what} {path} is over {cap} bytes")
    return data


__all__ = ["NotRegularFile", "open_regular", "read_regular"]
