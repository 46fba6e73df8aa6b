"""Flash an SD card, a USB disk or a regular file attached to this machine."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from evbench.flash import target as targets
from evbench.flash.plan import FlashPlan
from evbench.flash.progress import FlashProgress
from evbench.flash.writer import FileSink, FlashReport, write_image


def flash_local(
    plan: FlashPlan,
    device: Path,
    allow_fixed: bool,
    assume_yes: bool,
    announce: Callable[[str], None],
) -> FlashReport:
    """Check the target, ask, write and verify; `announce` hears the line said before writing."""
    target = targets.inspect_target(device, allow_fixed)
    image_size = plan.image_size
    if image_size is not None:
        targets.check_fits(target, image_size)
    targets.confirm(target, plan.describe(), assume_yes)
    fd = targets.open_for_writing(target, image_size, allow_fixed)
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
