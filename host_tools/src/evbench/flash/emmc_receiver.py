"""Runs ON THE BOARD (python3, standard library only): writes what evbench flash streams.

    python3 emmc_receiver.py inspect DEVICE       -> one JSON line: kind, size, model, busy
    python3 emmc_receiver.py write DEVICE [--unlock-boot] [--size N] < frames

Frames on standard input (lines are ASCII, at most MAX_LINE bytes):
    W <offset> <length>\\n<length bytes>         write the bytes at offset
    R <offset> <length> <algorithm> <digest>\\n  a range to verify once all is written
    E\\n                                         end: sync, read every range back, report
It prints one JSON line, {"ok": true, ...} or {"ok": false, "error": ...}, and
exits 0, 2 (refused: nothing written) or 3 (failed: the device is incomplete).
blockdevs.py and readback.py sit beside this file (the host copies all three).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:  # the type checker reads the siblings where the host package keeps them
    from evbench.flash import blockdevs
    from evbench.flash.readback import read_back_digest
else:  # on the board they sit beside this file, on sys.path[0]
    import blockdevs
    from readback import read_back_digest

MAX_LINE = 256
#: One W frame carries at most this much: a larger length read from the wire is a fault.
MAX_FRAME = 16 * 1024 * 1024
ALGORITHMS = ("sha256", "sha1")


class Refused(Exception):
    exit_code = 2


class Failed(Exception):
    exit_code = 3


def inspect(path: str) -> dict:
    """What the device is and whether something on the board uses it.

    `identity` is what write() must find again on the descriptor it opens:
    the device number of a block device, the (device, inode) of a file.
    """
    try:
        status = Path(path).stat()
    except FileNotFoundError:
        return {"path": path, "kind": "missing"}
    if stat.S_ISREG(status.st_mode):
        return {
            "path": path,
            "kind": "file",
            "size": None,
            "model": "regular file",
            "busy": None,
            "identity": [status.st_dev, status.st_ino],
        }
    if not stat.S_ISBLK(status.st_mode):
        return {"path": path, "kind": "other"}
    name = blockdevs.name_of(status.st_rdev)
    if name is None:
        raise Refused(f"{path}: the kernel does not list this block device in /sys")
    return {
        "path": path,
        "kind": "block",
        "identity": [status.st_rdev],
        "name": name,
        "size": blockdevs.size_bytes(name),
        "model": blockdevs.describe(name),
        "busy": blockdevs.why_busy(name),
        "read_only": blockdevs.read_only(name),
    }


def _refuse_unless_writable(info: dict, image_size: int | None) -> None:
    if info["kind"] not in ("block", "file"):
        raise Refused(f"{info['path']} is {info['kind']}: not a block device or regular file")
    if info.get("busy"):
        raise Refused(f"{info['path']} is in use on the board ({info['busy']})")
    if info["size"] is not None and image_size is not None and image_size > info["size"]:
        raise Refused(f"the image ({image_size} bytes) is larger than {info['path']}")


def _unlock_boot_partition(info: dict) -> None:
    # eMMC boot partitions come up read-only (force_ro) until told otherwise.
    flag = Path("/sys/class/block") / str(info.get("name")) / "force_ro"
    if info["kind"] == "block" and flag.exists():
        flag.write_text("0")


def _line(stream: BinaryIO) -> list[str]:
    raw = stream.readline(MAX_LINE + 1)
    if not raw.endswith(b"\n"):
        raise Failed("the stream from the host ended or broke mid-frame")
    return raw.decode("ascii").split()


def _read_exactly(stream: BinaryIO, length: int) -> bytes:
    data = stream.read(length)
    if len(data) != length:
        raise Failed("the stream from the host ended inside a data frame")
    return data


def receive(fd: int, stream: BinaryIO, state: dict) -> None:
    ranges = []
    while True:
        fields = _line(stream)
        if fields[:1] == ["W"] and len(fields) == 3:
            offset, length = int(fields[1]), int(fields[2])
            if length > MAX_FRAME or offset < 0:
                raise Failed(f"a frame of {length} bytes at {offset} is out of bounds")
            view = memoryview(_read_exactly(stream, length))
            while view:
                written = os.pwrite(fd, view, offset)
                view, offset = view[written:], offset + written
                state["bytes"] += written
        elif fields[:1] == ["R"] and len(fields) == 5 and fields[3] in ALGORITHMS:
            ranges.append((int(fields[1]), int(fields[2]), fields[3], fields[4]))
        elif fields == ["E"]:
            break
        else:
            raise Failed(f"unexpected frame {' '.join(fields)[:60]!r}")
    os.fsync(fd)
    for offset, length, algorithm, expected in ranges:
        found = read_back_digest(fd, offset, length, algorithm)
        if found != expected:
            raise Failed(
                f"read-back mismatch for bytes {offset}-{offset + length - 1}: "
                f"the device holds {algorithm} {found}, the host sent {expected}"
            )
        state["ranges"] += 1


def _check_opened(fd: int, info: dict) -> None:
    """The opened descriptor is what was inspected (nothing swapped the path meanwhile)."""
    status = os.fstat(fd)
    if info["kind"] == "block":
        found = [status.st_rdev] if stat.S_ISBLK(status.st_mode) else None
    else:
        found = [status.st_dev, status.st_ino] if stat.S_ISREG(status.st_mode) else None
    if found != info["identity"]:
        raise Refused(f"{info['path']} changed since it was inspected; nothing was written")


def write(path: str, image_size: int | None, unlock_boot: bool) -> dict:
    # Resolved once (a /dev/disk/by-id name keeps working), then opened without
    # following links and checked on the descriptor, as the host does for a local target.
    path = os.path.realpath(path)
    info = inspect(path)
    _refuse_unless_writable(info, image_size)
    if unlock_boot:
        _unlock_boot_partition(info)
    flags = os.O_RDWR | os.O_NOFOLLOW | (os.O_EXCL if info["kind"] == "block" else 0)
    state = {"bytes": 0, "ranges": 0}
    started = time.monotonic()
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise Refused(f"cannot open {path}: {error.strerror}") from error
    try:
        _check_opened(fd, info)
    except Refused:
        os.close(fd)
        raise
    try:
        receive(fd, sys.stdin.buffer, state)
    except (OSError, ValueError) as error:
        raise Failed(f"{type(error).__name__}: {error} (wrote {state['bytes']} bytes)") from error
    except Failed as error:
        raise Failed(f"{error} (wrote {state['bytes']} bytes)") from error
    finally:
        os.close(fd)
    return {"ok": True, **state, "seconds": round(time.monotonic() - started, 3)}


def main(argv: list[str]) -> int:
    try:
        if len(argv) == 2 and argv[0] == "inspect":
            print(json.dumps(inspect(argv[1])))
            return 0
        if len(argv) >= 2 and argv[0] == "write":
            size = int(argv[argv.index("--size") + 1]) if "--size" in argv else None
            print(json.dumps(write(argv[1], size, "--unlock-boot" in argv)))
            return 0
        raise Refused("usage: emmc_receiver.py inspect DEVICE | write DEVICE [--size N]")
    except (Refused, Failed) as error:
        print(json.dumps({"ok": False, "error": str(error)}))
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
