"""The read-back digest: what a target holds as the device returns it, not the page cache.

Standard library only and free of package imports: the eMMC receiver runs this
same file on the board (the host copies it beside emmc_receiver.py), and the
local writer uses it for files and cards, so both verify in one way.
"""

from __future__ import annotations

import hashlib
import os

#: Bytes read per pread while hashing.
READ_CHUNK = 1024 * 1024


def read_back_digest(fd: int, offset: int, length: int, algorithm: str = "sha256") -> str:
    """The hex digest of `length` bytes at `offset`, the cached pages dropped first."""
    os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
    digest = hashlib.new(algorithm)
    end = offset + length
    while offset < end:
        data = os.pread(fd, min(READ_CHUNK, end - offset), offset)
        if not data:
            break
        digest.update(data)
        offset += len(data)
    return digest.hexdigest()
