"""When the results cannot be written: a full disk, a read-only or forbidden directory.

Such a failure is the user's to fix (free space, another --out), not a bug: it
becomes `WriteFailed`, a user error that names the directory and what the
system said. A run keeps a small reserve of disk space from its start, released
when a write fails, so the manifest can still be rewritten to say what happened
(partial, and why) instead of staying "running".
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from evbench_core.errors import UserError

log = logging.getLogger(__name__)

#: Room kept for the run's last words (manifest, summary, checksums) after a write failed.
#: A quick run's final manifest is about 4 KB and its summary about 40 KB.
RESERVE_BYTES = 256 * 1024
#: The reserve's name: a dot file, so checksums and readers never list it.
RESERVE_NAME = ".space-reserve"


class WriteFailed(UserError):
    """The results directory refused a write (no space, no permission, read-only, I/O)."""


def failure(directory: Path, error: OSError) -> WriteFailed:
    """`error`, said as the user's problem with what to do about it."""
    reason = error.strerror or type(error).__name__
    return WriteFailed(
        f"cannot write the results in {directory}: {reason}",
        hint="free space there or choose another --out; what was written before is kept",
    )


@contextlib.contextmanager
def writing(directory: Path) -> Iterator[None]:
    """Turn an OSError raised inside into `WriteFailed` for `directory`."""
    try:
        yield
    except WriteFailed:
        raise
    except OSError as error:
        raise failure(directory, error) from error


class SpaceReserve:
    """A file of RESERVE_BYTES in the run directory, given back when a write fails."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / RESERVE_NAME

    def take(self) -> None:
        """Claim the space now; no room for it is a `WriteFailed` before anything runs."""
        try:
            with open(self.path, "wb") as stream:
                try:  # really allocated, where the file system can (tmpfs, ext4, xfs)
                    os.posix_fallocate(stream.fileno(), 0, RESERVE_BYTES)
                except (AttributeError, OSError):  # elsewhere: written blocks hold the space
                    stream.write(bytes(RESERVE_BYTES))
                stream.flush()
                os.fsync(stream.fileno())
        except OSError as error:
            self.release()
            raise failure(self.path.parent, error) from error

    def release(self) -> None:
        """Give the space back (idempotent)."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError as error:  # a directory gone read-only: nothing more to give
            log.debug("the space reserve %s stays: %s", self.path, error)


__all__ = ["failure", "writing"]
