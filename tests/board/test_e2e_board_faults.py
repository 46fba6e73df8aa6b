"""The virtual board's fault path: a boot that never reaches the login prompt
fails with the console transcript and leaves no QEMU behind."""

import time
from pathlib import Path

import psutil
import pytest
from conftest import require_command
from evboard_fixture import board_image
from evboard_qemu import CMDLINE, BoardBootError, VirtualBoard

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]
#: Far more than the boot to the initramfs giving up takes (30 s after the kernel starts).
BOOT_TIMEOUT_S = 300


def test_a_boot_without_its_root_disk_fails_with_the_transcript(tmp_path: Path) -> None:
    require_command("qemu-system-aarch64")
    # A root device that does not exist: the initramfs gives up after 30 s and says so,
    # and the boot fails then, not at its deadline.
    cmdline = CMDLINE.replace("root=/dev/vda", "root=/dev/vdz")
    board = VirtualBoard(board_image(), tmp_path, cmdline=cmdline)
    try:
        started = time.monotonic()
        with pytest.raises(BoardBootError) as failure:
            board.boot(boot_timeout=BOOT_TIMEOUT_S)
        failed_after = time.monotonic() - started
        pid = board.pid
    finally:
        board.stop()
    message = str(failure.value)
    assert "no root file system (evboard-initramfs: cannot mount /dev/vdz)" in message
    assert failed_after < BOOT_TIMEOUT_S - 30, failed_after  # at the initramfs's word
    assert "cannot mount /dev/vdz; dropping to a shell" in message  # the transcript is attached
    assert pid is not None and not psutil.pid_exists(pid)  # killed and reaped
