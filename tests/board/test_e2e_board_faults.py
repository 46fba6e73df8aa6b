"""The virtual board's fault path: a boot that never reaches the login prompt
fails with the console transcript and leaves no QEMU behind."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from conftest import require_command
from evboard_image import ensure_board
from evboard_qemu import CMDLINE, BoardBootError, VirtualBoard

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]


def test_a_boot_without_its_root_disk_fails_with_the_transcript(tmp_path: Path) -> None:
    require_command("qemu-system-aarch64")
    # A root device that does not exist: the initramfs gives up after 30 s.
    cmdline = CMDLINE.replace("root=/dev/vda", "root=/dev/vdz")
    board = VirtualBoard(ensure_board(), tmp_path, cmdline=cmdline)
    try:
        with pytest.raises(BoardBootError) as failure:
            board.boot(boot_timeout=150)
        pid = board.pid
    finally:
        board.stop()
    message = str(failure.value)
    assert "no login prompt within 150 s" in message
    assert "evboard-initramfs: cannot mount /dev/vdz" in message  # the transcript is attached
    assert pid is not None and not psutil.pid_exists(pid)  # killed and reaped
