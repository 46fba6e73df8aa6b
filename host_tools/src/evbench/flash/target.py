"""Where an image may be written: the checks that keep dd from wiping a laptop.

A block device is refused when it (or anything on it) is mounted, is swap,
holds the running root filesystem, is read-only, is not removable (unless
allow_fixed), or is smaller than the image. A regular file is always allowed
(for tests and for preparing images). Anything else is refused.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evbench.flash import blockdevs
from evbench_agent.errors import UserError


@dataclass(frozen=True)
class Target:
    path: Path
    is_block_device: bool
    size: int | None  # None for a regular file: it grows to the image size
    model: str

    def describe(self) -> str:
        if not self.is_block_device:
            return f"{self.path} (regular file)"
        return f"{self.path} ({self.model}, {self.size / 2**30:.1f} GiB, {self.size} bytes)"


def inspect_target(path: Path, allow_fixed: bool = False) -> Target:
    """The target if it may be written; UserError naming the reason otherwise."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if str(path).startswith("/dev/") or not path.parent.is_dir():
            raise UserError(
                f"{path} does not exist", hint="list the devices with 'lsblk'"
            ) from None
        return Target(path, False, None, "new file")
    except OSError as error:
        raise UserError(f"cannot inspect {path}: {error.strerror}") from error
    if stat.S_ISREG(mode):
        return Target(path, False, None, "regular file")
    if not stat.S_ISBLK(mode):
        raise UserError(
            f"{path} is neither a block device nor a regular file; refusing to write it",
            hint="give the whole device, e.g. /dev/sdX or /dev/mmcblkN (see 'lsblk')",
        )
    name = blockdevs.name_of(path.stat().st_rdev)
    if name is None:
        raise UserError(f"{path}: the kernel does not list this block device in /sys")
    return _check_block_device(path, name, allow_fixed)


def _check_block_device(path: Path, name: str, allow_fixed: bool) -> Target:
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
    return Target(path, True, blockdevs.size_bytes(name), blockdevs.describe(name))


def check_fits(target: Target, image_size: int) -> None:
    if target.size is not None and image_size > target.size:
        raise UserError(
            f"the image ({image_size} bytes) is larger than {target.describe()}; nothing written",
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


def open_for_writing(target: Target) -> int:
    """Read-write (to read back); O_EXCL on a device fails if anything mounted it meanwhile."""
    flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_EXCL if target.is_block_device else os.O_CREAT
    try:
        return os.open(target.path, flags, 0o644)
    except OSError as error:
        raise UserError(f"cannot open {target.path} for writing: {error.strerror}") from error
