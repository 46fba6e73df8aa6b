"""Where an image may be written: the checks that keep dd from wiping a laptop.

A block device is refused when it (or anything on it) is mounted, is swap,
holds the running root filesystem, is read-only, is not removable (unless
allow_fixed), or is smaller than the image. A regular file is always allowed
(for tests and for preparing images); it becomes exactly the image. Anything
else is refused. The path is resolved and inspected once, then opened once
without following links, and every check is made again on the descriptor.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evbench.flash import blockdevs
from evbench_core.errors import UserError


@dataclass(frozen=True)
class Target:
    """A target as inspected: `path` is resolved (symlinks followed once), `given` as named."""

    path: Path
    is_block_device: bool
    size: int | None  # None for a regular file: it becomes exactly the image's size
    model: str
    #: What must be found again on the opened descriptor: ("block", rdev),
    #: ("file", st_dev, st_ino), or ("new",) for a file that does not exist yet.
    identity: tuple[str, ...] = ("unchecked",)
    given: Path | None = None

    def describe(self) -> str:
        name = str(self.path)
        if self.given is not None and self.given != self.path:
            name = f"{self.given} -> {self.path}"
        if not self.is_block_device:
            return f"{name} (regular file)"
        if self.size is None:  # a board's device that did not report its size
            return f"{name} ({self.model})"
        return f"{name} ({self.model}, {self.size / 2**30:.1f} GiB, {self.size} bytes)"


def inspect_target(path: Path, allow_fixed: bool = False) -> Target:
    """The target if it may be written; UserError naming the reason otherwise.

    The path is resolved here, once: a /dev/disk/by-id/... link names its device,
    and open_for_writing opens the resolved path without following links again.
    A path that changes while it is inspected (a link swapped mid-resolve, a
    directory renamed) is refused: "the target changed".
    """
    try:
        return _inspect(path, allow_fixed)
    except OSError as error:
        raise UserError(
            f"refusing to write {path}: the target changed while it was inspected "
            f"({error.strerror or error}); nothing was written",
            hint="something else is changing the target: check it and try again",
        ) from error


def _inspect(path: Path, allow_fixed: bool) -> Target:
    resolved = path.resolve()
    try:
        status = resolved.lstat()
    except FileNotFoundError:
        if str(resolved).startswith("/dev/") or not resolved.parent.is_dir():
            raise UserError(
                f"{path} does not exist", hint="list the devices with 'lsblk'"
            ) from None
        parent = resolved.parent.lstat()
        identity = ("new", str(parent.st_dev), str(parent.st_ino))
        return Target(resolved, False, None, "new file", identity, path)
    if stat.S_ISREG(status.st_mode):
        identity = ("file", str(status.st_dev), str(status.st_ino))
        return Target(resolved, False, None, "regular file", identity, path)
    if not stat.S_ISBLK(status.st_mode):
        raise UserError(
            f"{path} is neither a block device nor a regular file; refusing to write it",
            hint="give the whole device, e.g. /dev/sdX or /dev/mmcblkN (see 'lsblk')",
        )
    return _check_block_device(resolved, status.st_rdev, allow_fixed, path)


def _check_block_device(path: Path, rdev: int, allow_fixed: bool, given: Path) -> Target:
    name = blockdevs.name_of(rdev)
    if name is None:
        raise UserError(f"{path}: the kernel does not list this block device in /sys")
    reason = blockdevs.why_busy(name)
    if reason is not None:
        raise UserError(
            f"refusing to write {path}: it is in use ({reason}); nothing was written",
            hint="unmount it first (umount / swapoff), or pick another device with 'lsblk'",
        )
    if blockdevs.read_only(name):
        raise UserError(f"refusing to write {path}: the device is read-only (check the lock)")
    if not allow_fixed and not blockdevs.is_removable(name):
        raise UserError(
            f"refusing to write {path} ({blockdevs.describe(name)}): it is a fixed disk, "
            "not removable media; nothing was written",
            hint="if this really is the card or disk to overwrite, add --allow-fixed",
        )
    size, model = blockdevs.size_bytes(name), blockdevs.describe(name)
    return Target(path, True, size, model, ("block", str(rdev)), given)


def check_fits(target: Target, image_size: int, where: str = "") -> None:
    """Refuse a target smaller than the image; `where` names the board it is on."""
    if target.size is not None and image_size > target.size:
        raise UserError(
            f"the image ({image_size} bytes) is larger than {target.describe()}{where}; "
            "nothing was written",
            hint="use a larger card",
        )


def confirm(target: Target, what: str, assume_yes: bool, ask: Callable[[str], str] = input) -> None:
    """Ask before overwriting a device; refuse when nobody can answer."""
    if assume_yes or not target.is_block_device:
        return
    if not sys.stdin.isatty() and ask is input:
        raise UserError(
            f"not confirmed: writing {target.describe()} needs a 'yes'",
            hint="run it on a terminal, or add --yes after checking the device with 'lsblk'",
        )
    answer = ask(
        f"Write {what} to {target.describe()}?\nEverything on it will be lost. Type 'yes': "
    )
    if answer.strip().lower() != "yes":
        raise UserError("not confirmed: nothing was written")


#: Test seam: when set, called with the Target between inspection and opening, so a
#: test can swap the path as an attacker would (tests/test_flash_harden.py). Never set
#: outside tests; the checks after opening do not depend on it.
before_open: Callable[[Target], None] | None = None


def _changed(target: Target, what: str) -> UserError:
    return UserError(
        f"refusing to write {target.path}: {what} since it was inspected; nothing was written",
        hint="something else is changing the target: check it with 'lsblk' and try again",
    )


def open_for_writing(target: Target, image_size: int | None, allow_fixed: bool = False) -> int:
    """The target opened once, checked on the descriptor, and (a file) sized as the image.

    O_NOFOLLOW: a path swapped for a symlink fails to open. fstat: the opened object
    must be the one inspected (the same device number, or the same inode), and a
    block device passes its checks again. O_EXCL on a device fails if anything
    mounted it meanwhile. A regular file is emptied and set to the image's size, so
    unmapped ranges are holes and the file is exactly the image, as bmaptool makes it.
    """
    if before_open is not None:
        before_open(target)
    kind = target.identity[0]
    flags = os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    if kind == "block":
        flags |= os.O_EXCL
    elif kind == "new":
        flags |= os.O_CREAT | os.O_EXCL  # something that appeared meanwhile is refused
    parent = None if kind == "block" else _open_directory(target)
    try:
        if parent is None:
            fd = os.open(target.path, flags, 0o644)
        else:
            fd = os.open(target.path.name, flags, 0o644, dir_fd=parent)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EEXIST, errno.ENOENT, errno.ENOTDIR):
            raise _changed(target, f"the path changed ({error.strerror})") from error
        raise UserError(f"cannot open {target.path} for writing: {error.strerror}") from error
    finally:
        if parent is not None:
            os.close(parent)
    try:
        _check_opened(fd, target, image_size, allow_fixed)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_directory(target: Target) -> int:
    """The target's directory, opened one component at a time from / with O_NOFOLLOW
    (a link swapped in anywhere on the way fails to open), and for a new file checked
    to be the directory inspected: the file is then created inside it with openat, so
    no swap of a parent can send it elsewhere."""
    flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open("/", flags)
    try:
        for part in target.path.parent.parts[1:]:
            try:
                inner = os.open(part, flags, dir_fd=fd)
            except OSError as error:
                raise _changed(
                    target, f"its directory changed at {part!r} ({error.strerror})"
                ) from error
            os.close(fd)
            fd = inner
        if target.identity[0] == "new":
            status = os.fstat(fd)
            if (str(status.st_dev), str(status.st_ino)) != target.identity[1:]:
                raise _changed(target, "its directory is another one")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_opened(fd: int, target: Target, image_size: int | None, allow_fixed: bool) -> None:
    status = os.fstat(fd)
    kind = target.identity[0]
    if kind == "block":
        if not stat.S_ISBLK(status.st_mode) or str(status.st_rdev) != target.identity[1]:
            raise _changed(target, "it is another device or no longer a device")
        again = _check_block_device(target.path, status.st_rdev, allow_fixed, target.path)
        if image_size is not None:
            check_fits(again, image_size)
        return
    if not stat.S_ISREG(status.st_mode):
        raise _changed(target, "it is no longer a regular file")
    if kind == "file" and (str(status.st_dev), str(status.st_ino)) != target.identity[1:]:
        raise _changed(target, "it is another file")
    if kind not in ("file", "new"):
        raise _changed(target, f"it was never inspected ({kind})")
    os.ftruncate(fd, 0)  # old contents never survive in unmapped ranges
    if image_size is not None:
        os.ftruncate(fd, image_size)
