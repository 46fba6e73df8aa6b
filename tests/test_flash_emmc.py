"""evbench flash --board: the eMMC path, with a file or loop device standing in for the eMMC.

The board is this machine: first through the built-in local board, then
through a real OpenSSH sshd on loopback (tests/sshd.py), as a lab PC reaches
a board booted from its SD card. The receiver runs under the Debian python3,
as it would under the board's own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require, require_command
from flash_images import SMALL_SIZE, MiB, assert_flashed, fill, flash, mapped_spans, small_image_set
from test_flash_bmap import seal
from test_flash_devices import loop_device

pytestmark = pytest.mark.integration
RECEIVER = Path(__file__).parent.parent / "host_tools/src/evbench/flash/emmc_receiver.py"
BLOCKDEVS = RECEIVER.with_name("blockdevs.py")
READBACK = RECEIVER.with_name("readback.py")
BOARD_PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    require_command("xz")
    return small_image_set(tmp_path_factory.mktemp("emmc"), require_command("bmaptool"))


@pytest.fixture
def spans(images):
    return mapped_spans(images["bmap"].read_text(), 4096, SMALL_SIZE)


def root_disk() -> str:
    root = Path("/").stat().st_dev
    require(os.major(root) != 0, "a root filesystem on a block device")
    return "/dev/" + Path(f"/sys/dev/block/{os.major(root)}:{os.minor(root)}").resolve().name


def bootloader(tmp_path: Path, tiboot3: bytes, tispl: bytes, u_boot: bytes) -> Path:
    """A deploy directory holding the three bootloader files."""
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    for name, data in (("tiboot3.bin", tiboot3), ("tispl.bin", tispl), ("u-boot.img", u_boot)):
        (deploy / name).write_bytes(data)
    return deploy


def test_local_board_file_standin_with_bootloader(images, spans, tmp_path, capsys):
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


def test_bootloader_that_does_not_fit_its_slot_is_refused(images, tmp_path, capsys):
    emmc = fill(tmp_path / "mmcblk0", 8 * MiB)
    fill(tmp_path / "mmcblk0boot0", 4 * MiB)
    deploy = bootloader(tmp_path, bytes(600_000), bytes(10), bytes(10))
    code, _, err = flash(
        capsys, images["xz"], "--board", "local", "--device", emmc, "--bootloader", deploy
    )
    assert code == 2 and "tiboot3.bin (600000 bytes) does not fit its 524288-byte slot" in err
    assert emmc.read_bytes() == fill(tmp_path / "fresh", 8 * MiB).read_bytes(), "refused first"


def test_a_missing_boot_partition_is_refused_before_writing(images, tmp_path, capsys):
    emmc = fill(tmp_path / "mmcblk0", 8 * MiB)
    deploy = bootloader(tmp_path, b"blob", b"blob", b"blob")
    code, _, err = flash(
        capsys, images["xz"], "--board", "local", "--device", emmc, "--bootloader", deploy
    )
    assert code == 2 and f"{emmc}boot0 on local is missing" in err
    assert emmc.read_bytes() == fill(tmp_path / "fresh", 8 * MiB).read_bytes()


def test_local_board_loop_device_standin(images, spans, tmp_path, capsys):
    backing = fill(tmp_path / "emmc.img", 8 * MiB)
    with loop_device(backing) as device:
        code, out, err = flash(
            capsys, images["xz"], "--board", "local", "--device", device, "--yes"
        )
        assert code == 0, err
        assert "read back on the board" in out
        assert_flashed(device, images["plain"], spans)


def test_the_boards_root_device_is_refused(images, capsys):
    code, out, err = flash(capsys, images["xz"], "--board", "local", "--device", root_disk())
    assert code == 2
    assert "root filesystem" in err and "nothing was written" in err
    assert "flashing" not in out


def test_a_bad_range_checksum_fails_on_the_board_path(images, tmp_path, capsys):
    text = images["bmap"].read_text()
    first = re.findall(r'chksum="(\w+)"', text)[0]
    bmap = tmp_path / "bad.bmap"
    bmap.write_text(seal(text.replace(first, first[::-1]), "sha256", "BmapFileChecksum"))
    emmc = fill(tmp_path / "mmcblk0", 8 * MiB)
    code, out, err = flash(
        capsys, images["xz"], "--bmap", bmap, "--board", "local", "--device", emmc
    )
    assert code == 3 and "checksum mismatch for blocks" in err
    assert "read back" not in out


@pytest.mark.parametrize(
    "kind, bmap", [("xz", False), ("zst", False), ("xz", True), ("plain", False)]
)
def test_an_image_too_large_for_the_boards_device_is_refused_before_writing(
    images, tmp_path, capsys, kind, bmap
):
    # the image is 4 MiB + 1000 bytes plain (xz index, zstd frame header, bmap or the
    # file itself say so); the board's device 2 MiB, as sysfs reports it on the board
    card = fill(tmp_path / "emmc.img", 2 * MiB)
    before = card.read_bytes()
    with loop_device(card) as device:
        extra = ("--bmap", images["bmap"]) if bmap else ("--no-bmap",)
        code, out, err = flash(
            capsys, images[kind], *extra, "--board", "local", "--device", device, "--yes"
        )
        with open(device, "rb") as written:
            assert written.read() == before, "the board's device was written"
    assert code == 2, err
    assert f"the image ({4 * MiB + 1000} bytes) is larger than {device}" in err
    assert f"{2 * MiB} bytes) on local; nothing was written" in err
    assert len(err.strip().splitlines()) <= 2  # the error and its hint
    assert "flashing" not in out


def test_a_gzip_image_says_its_size_is_unknown_before_writing(images, tmp_path, capsys):
    card = fill(tmp_path / "emmc.img", 2 * MiB)
    with loop_device(card) as device:
        code, out, err = flash(
            capsys, images["gz"], "--no-bmap", "--board", "local", "--device", device, "--yes"
        )
    assert f"{images['gz']} (gz) declares no plain size ahead: whether it fits {device}" in out
    assert "known only as it is written" in out
    assert code == 3, err  # the device filled up: the board's receiver failed


def test_over_ssh_an_image_too_large_for_the_device_is_refused(
    images, sshd, ssh_home, tmp_path, capsys
):
    card = fill(tmp_path / "emmc.img", 2 * MiB)
    before = card.read_bytes()
    url = ssh_url(sshd, tmp_path)
    with loop_device(card) as device:
        code, _, err = flash(
            capsys, images["xz"], "--no-bmap", "--board", url, "--device", device, "--yes"
        )
    assert code == 2, err
    assert f"the image ({4 * MiB + 1000} bytes) is larger than" in err
    assert f"{2 * MiB} bytes) on ssh://" in err
    assert card.read_bytes() == before


def receiver(device: Path, frames: bytes) -> tuple[int, dict]:
    result = subprocess.run(
        [BOARD_PYTHON, str(RECEIVER), "write", str(device)], input=frames, capture_output=True
    )
    return result.returncode, json.loads(result.stdout.decode().splitlines()[-1])


def test_receiver_refuses_broken_streams(tmp_path):
    require(Path(BOARD_PYTHON).exists(), BOARD_PYTHON)
    target = fill(tmp_path / "emmc", MiB)
    for frames, error in (
        (b"W 0 100\n" + bytes(50), "ended inside a data frame"),
        (b"W 0 99999999999\n", "out of bounds"),
        (b"W 0 4\nabcdR 0 4 sha256 " + b"0" * 64 + b"\nE\n", "read-back mismatch"),
        (b"W 0 4\nabcd", "ended or broke"),
    ):
        code, answer = receiver(target, frames)
        assert code == 3 and error in answer["error"], frames


def ssh_url(sshd, tmp_path: Path) -> str:
    return f"ssh://{sshd.user}@127.0.0.1:{sshd.port}?dir={tmp_path}/board&python={BOARD_PYTHON}"


def test_over_ssh_to_a_loop_device_standin(images, spans, sshd, ssh_home, tmp_path, capsys):
    backing = fill(tmp_path / "emmc.img", 8 * MiB)
    with loop_device(backing) as device:
        code, out, err = flash(
            capsys, images["xz"], "--board", ssh_url(sshd, tmp_path), "--device", device, "--yes"
        )
        assert code == 0, err
        assert_flashed(device, images["plain"], spans)
    assert f"{len(spans)} range(s) read back on the board" in out
    assert "on ssh://" in out


def test_over_ssh_the_root_device_is_refused(images, sshd, ssh_home, tmp_path, capsys):
    url = ssh_url(sshd, tmp_path)
    code, _, err = flash(capsys, images["xz"], "--board", url, "--device", root_disk(), "--yes")
    assert code == 2 and "root filesystem" in err


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
