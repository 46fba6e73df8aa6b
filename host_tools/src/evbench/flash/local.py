"""Flash an SD card, a USB disk or a regular file attached to this machine."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from evbench.flash import blockdevs
from evbench.flash import target as targets
from evbench.flash.plan import FlashPlan
from evbench.flash.progress import FlashProgress
from evbench.flash.writer import FileSink, FlashReport, write_image
from evbench_core.errors import UserError

log = logging.getLogger(__name__)


def _refuse_own_inputs(target: targets.Target, plan: FlashPlan) -> None:
    """The target must not be the image or its bmap: not the file itself, nor a device
    that writes into it: a loop device reading it (or a partition, device-mapper or md
    device stacked on one), through any number of loop devices reading loop devices.
    Files are compared by device and inode as the kernel holds them, not by name (a loop's
    file may have lost its name: a removed hard link)."""
    inputs = [plan.image] + ([plan.bmap.path] if plan.bmap and plan.bmap.path else [])
    mine = {}
    for path in inputs:
        status = path.stat()
        if target.identity == ("file", str(status.st_dev), str(status.st_ino)):
            raise UserError(
                f"the target {target.path} is the file {path} itself; nothing was written",
                hint="give another --device",
            )
        mine[(status.st_dev, status.st_ino)] = path
    if not target.is_block_device:
        return
    name = blockdevs.name_of(int(target.identity[1]))
    try:
        chain = blockdevs.backing_chain(name) if name else []
    except OSError as error:
        raise UserError(
            f"cannot tell which files the target {target.path} writes into "
            f"({error.strerror or error}); nothing was written",
            hint="losetup -l lists what each loop device reads",
        ) from None
    for through, device, inode in chain:
        source = mine.get((device, inode))
        if source is not None:
            via = f" (through {' > '.join(through)})" if len(through) > 1 else ""
            raise UserError(
                f"the target {target.path} is a loop device reading {source} itself{via}: "
                "writing it would destroy the image; nothing was written",
                hint="give another --device (losetup -l lists what each loop device reads)",
            )


def check_target(device: Path, plan: FlashPlan, allow_fixed: bool) -> targets.Target:
    """A target on this machine as it may be written (not in use, read-only, a fixed disk
    unless `allow_fixed`, nor the image or its bmap); UserError otherwise. Also for
    `--board local`, whose board is this machine."""
    target = targets.inspect_target(device, allow_fixed)
    log.debug("target: %s", target)
    _refuse_own_inputs(target, plan)
    return target


def flash_local(
    plan: FlashPlan,
    device: Path,
    allow_fixed: bool,
    assume_yes: bool,
    announce: Callable[[str], None],
) -> FlashReport:
    """Check the target, ask, write and verify; `announce` hears the lines said before writing."""
    target = check_target(device, plan, allow_fixed)
    plan.check_fits(target, announce)
    targets.confirm(target, plan.describe(), assume_yes)
    fd = targets.open_for_writing(target, plan.image_size, allow_fixed)
    try:
        announce(f"flashing {plan.describe()} to {target.describe()}")
        sink = FileSink(fd)
        try:
            with plan.source, FlashProgress(plan.bytes_to_write, "flash") as progress:
                return write_image(plan.source, sink, plan.bmap, progress)
        finally:
            sink.close()
    finally:
        os.close(fd)
