"""evbench flash --board: the eMMC path, with a file or loop device standing in for the eMMC.

The board is this machine: through the built-in local board, and through a real OpenSSH
sshd on loopback (flash_images.flash_board). Whether an image fits the board's device is
tested in test_flash_harden.py; that its root device is refused, in test_flash_devices.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require
from flash_images import (
    BOARD_PYTHON,
    MiB,
    assert_flashed,
    fill,
    flash,
    flash_board,
    module_images,
    small_spans,
    untouched,
)
from test_flash_devices import loop_device

pytestmark = pytest.mark.integration
RECEIVER = Path(__file__).parent.parent / "host_tools/src/evbench/flash/emmc_receiver.py"
BLOCKDEVS = RECEIVER.with_name("blockdevs.py")
READBACK = RECEIVER.with_name("readback.py")

images = module_images
board = flash_board


def bootloader(tmp_path: Path, tiboot3: bytes, tispl: bytes, u_boot: bytes) -> Path:
    """A deploy directory holding the three bootloader files."""
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    for name, data in (("tiboot3.bin", tiboot3), ("tispl.bin", tispl), ("u-boot.img", u_boot)):
        (deploy / name).write_bytes(data)
    return deploy


def test_local_board_file_standin_with_bootloader(images, tmp_path, capsys):
    spans = small_spans(images)
    emmc = fill(tmp_path / "mmcblk0", 8 * MiB)
    boot0 = fill(tmp_path / "mmcblk0boot0", 4 * MiB)
    blobs = (os.urandom(300_000), os.urandom(1_500_000), os.urandom(1_000_000))
    deploy = bootloader(tmp_path, *blobs)
    code, out, err = flash(
        capsys, images["xz"], "--board", "local", "--device", emmc, "--bootloader", deploy
    )
    assert code == 0, err
    assert_flashed(emmc, images["plain"], spans)
    assert f"{len(spans)} range(s) read back on the board" in out
    assert f"{len(spans)} range checksums from the bmap" in out
    written = boot0.read_bytes()
    for name, offset in (("tiboot3.bin", 0), ("tispl.bin", 0x80000), ("u-boot.img", 0x280000)):
        data = (deploy / name).read_bytes()
        assert written[offset : offset + len(data)] == data, name
    assert "mmc partconf 0 1 1 1" in out and "boot mode switches" in out


def test_without_bootloader_the_command_says_what_is_still_needed(images, tmp_path, capsys):
    emmc = fill(tmp_path / "mmcblk0", 8 * MiB)
    code, out, err = flash(capsys, images["gz"], "--board", "local", "--device", emmc)
    assert code == 0, err
    assert "still needed: write tiboot3.bin, tispl.bin and u-boot.img" in out


@pytest.mark.parametrize(
    ("tiboot3", "boot0", "says"),
    [
        (bytes(600_000), True, "tiboot3.bin (600000 bytes) does not fit its 524288-byte slot"),
        (b"blob", False, "{emmc}boot0 on local is missing"),
    ],
    ids=["a bootloader too large for its slot", "no boot partition"],
)
def test_a_bootloader_that_cannot_be_written_is_refused_first(
    images, tmp_path, capsys, tiboot3, boot0, says
):
    emmc = fill(tmp_path / "mmcblk0", 8 * MiB)
    if boot0:
        fill(tmp_path / "mmcblk0boot0", 4 * MiB)
    deploy = bootloader(tmp_path, tiboot3, b"blob", b"blob")
    code, _, err = flash(
        capsys, images["xz"], "--board", "local", "--device", emmc, "--bootloader", deploy
    )
    assert code == 2 and says.format(emmc=emmc) in err, err
    assert untouched(emmc), "refused before writing"


def test_a_loop_device_standin_is_flashed_and_read_back_on_the_board(
    images, board, tmp_path, capsys
):
    spans = small_spans(images)
    backing = fill(tmp_path / "emmc.img", 8 * MiB)
    with loop_device(backing) as device:
        code, out, err = flash(capsys, images["xz"], "--board", board, "--device", device, "--yes")
        assert code == 0, err
        assert_flashed(device, images["plain"], spans)
    assert f"to {device} on {board}" in out
    assert f"{len(spans)} range(s) read back on the board" in out


def test_receiver_refuses_broken_streams(tmp_path):
    require(Path(BOARD_PYTHON).exists(), BOARD_PYTHON)
    argv = [BOARD_PYTHON, str(RECEIVER), "write", str(fill(tmp_path / "emmc", MiB))]
    for frames, error in (
        (b"W 0 100\n" + bytes(50), "ended inside a data frame"),
        (b"W 0 99999999999\n", "out of bounds"),
        (b"W 0 4\nabcdR 0 4 sha256 " + b"0" * 64 + b"\nE\n", "read-back mismatch"),
        (b"W 0 4\nabcd", "ended or broke"),
    ):
        result = subprocess.run(argv, input=frames, capture_output=True)
        answer = json.loads(result.stdout.decode().splitlines()[-1])
        assert result.returncode == 3 and error in answer["error"], frames


def test_receiver_needs_only_python_3_10_and_the_standard_library():
    # It runs on the board's python3: vermin checks the minimum version from the syntax and
    # library calls it uses; the imports must all be standard library (or its sibling).
    vermin = Path(sys.executable).with_name("vermin")  # requirements-dev.txt, in the venv
    require(vermin.exists(), "vermin (requirements-dev.txt)")
    argv = [vermin, "--no-tips", "--violations", "-t=3.10-", RECEIVER, BLOCKDEVS, READBACK]
    result = subprocess.run(argv, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    for source in (RECEIVER, BLOCKDEVS, READBACK):
        imported = re.findall(r"^(?:from|import) (\w+)", source.read_text(), re.MULTILINE)
        assert set(imported) - {"blockdevs", "readback"} <= set(sys.stdlib_module_names), source
