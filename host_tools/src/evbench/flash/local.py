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
from evbench_agent.errors import UserError

log = logging.getLogger(__name__)


def _refuse_own_inputs(target: targets.Target, plan: FlashPlan) -> None:
    """The target must not be the image or its bmap: not the file itself, nor a loop
    device (or a partition, device-mapper or md device stacked on one) reading it."""
    inputs = [plan.image] + ([plan.bmap.path] if plan.bmap and plan.bmap.path else [])
    for path in inputs:
        status = path.stat()
        if target.identity == ("file", str(status.st_dev), str(status.st_ino)):
            raise UserError(
                f"the target {target.path} is the file {path} itself; nothing was written",
                hint="give another --device",
            )
    if not target.is_block_device:
        return
    name = blockdevs.name_of(int(target.identity[1]))
    mine = {(p.stat().st_dev, p.stat().st_ino): p for p in inputs}
    for backing in blockdevs.backing_files(name) if name else ():
        try:
            status = Path(backing).stat()
        except OSError:
            continue  # a backing file gone from its path cannot be one of ours
        source = mine.get((status.st_dev, status.st_ino))
        if source is not None:
            raise UserError(
                f"the target {target.path} is a loop device reading {source} itself: "
                "writing it would destroy the image; nothing was written",
                hint="give another --device (losetup -l lists what each loop device reads)",
            )


def flash_local(
    plan: FlashPlan,
    device: Path,
    allow_fixed: bool,
    assume_yes: bool,
    announce: Callable[[str], None],
) -> FlashReport:
    """Check the target, ask, write and verify; `announce` hears the lines said before writing."""
    target = targets.inspect_target(device, allow_fixed)
    log.debug("target: %s", target)
    _refuse_own_inputs(target, plan)
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
