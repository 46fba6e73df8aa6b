"""evbench flash to real block devices and its safety checks: loop devices stand in for SD cards
and a board's eMMC (local, and over a real sshd), fixed disks to their kernel (--allow-fixed);
`partx` adds partitions. Fit and swapped targets: test_flash_harden.
"""

import json
import os
import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from conftest import require, require_command
from flash_images import (
    BOARD_PYTHON,
    MiB,
    assert_flashed,
    compress,
    fill,
    flash,
    flash_board,
    make_bmap,
    make_image,
    mapped_spans,
    module_images,
    small_spans,
    untouched,
)

pytestmark = pytest.mark.integration
RECEIVER = Path(__file__).parent.parent / "host_tools/src/evbench/flash/emmc_receiver.py"
BLOCKDEVS = RECEIVER.with_name("blockdevs.py")
READBACK = RECEIVER.with_name("readback.py")

images = module_images
board = flash_board

#: The acceptance image: 256 MiB with 20 MiB of data in 40 extents of 512 KiB.
ACCEPTANCE_SIZE = 256 * MiB
ACCEPTANCE_EXTENTS = [(i * 6 * MiB + i * 8192, 512 * 1024) for i in range(40)]


def run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


@contextmanager
def loop_device(backing: Path) -> Iterator[str]:
    require(Path("/dev/loop-control").exists(), "/dev/loop-control (loop devices)")
    device = run(require_command("losetup"), "--find", "--show", str(backing))
    try:
        yield device
    finally:
        subprocess.run([require_command("losetup"), "-d", device], check=False)


@contextmanager
def mounted(device: str, folder: Path) -> Iterator[Path]:
    run(require_command("mkfs.ext4"), "-q", "-F", device)
    folder.mkdir()
    run(require_command("mount"), device, str(folder))
    try:
        yield folder
    finally:
        subprocess.run([require_command("umount"), str(folder)], check=False)


def write_mbr(path: Path, first_sector: int, sectors: int) -> None:
    """One Linux partition in an MBR (the 16-byte entry at 446, then 0x55AA)."""
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", first_sector, sectors)
    with path.open("r+b") as handle:
        handle.seek(446)
        handle.write(entry + bytes(48) + b"\x55\xaa")


@pytest.mark.slow
def test_acceptance_256_mib_wic_xz_to_a_file_and_a_loop_device(tmp_path, capsys):
    image = make_image(tmp_path / "core-image.wic", ACCEPTANCE_SIZE, ACCEPTANCE_EXTENTS)
    assert image.stat().st_blocks * 512 == 20 * MiB  # sparse: 20 MiB of data
    bmap = make_bmap(require_command("bmaptool"), image, tmp_path / "core-image.wic.bmap")
    packed = compress(image, "xz", tmp_path / "core-image.wic.xz")
    spans = mapped_spans(bmap.read_text(), 4096, ACCEPTANCE_SIZE)
    assert sum(length for _, length in spans) == 20 * MiB
    file_target = fill(tmp_path / "card.img", ACCEPTANCE_SIZE)
    code, out, err = flash(capsys, packed, "--device", file_target)  # the bmap is found beside it
    assert code == 0, err
    assert f"wrote {20 * MiB} bytes" in out and "40 range checksums from the bmap" in out
    assert_flashed(file_target, image, spans, as_file=True)
    backing = fill(tmp_path / "loop-backing.img", ACCEPTANCE_SIZE)
    with loop_device(backing) as device:
        code, out, err = flash(capsys, packed, "--device", device, "--allow-fixed", "--yes")
        assert code == 0, err
        assert f"wrote {20 * MiB} bytes" in out
        assert_flashed(device, image, spans)


@pytest.mark.parametrize("board", ["host", "local"], indirect=True)
def test_a_loop_device_is_fixed_unless_allowed_and_asks_first(images, tmp_path, capsys, board):
    # The local board is this machine: its disks are the host's, fixed ones as much.
    on = ("--board", board) if board else ()
    backing = fill(tmp_path / "backing.img", 8 * MiB)
    before = backing.read_bytes()
    with loop_device(backing) as device:
        code, _, err = flash(capsys, images["xz"], *on, "--device", device, "--yes")
        assert code == 2 and "fixed disk" in err and "--allow-fixed" in err
        assert backing.read_bytes() == before
        # Without --yes and without a terminal to answer, nothing is written.
        allowed = (*on, "--device", device, "--allow-fixed")
        code, _, err = flash(capsys, images["xz"], *allowed)
        assert code == 2 and "not confirmed" in err
        assert backing.read_bytes() == before
        code, _, err = flash(capsys, images["xz"], *allowed, "--yes")
        assert code == 0, err
        assert_flashed(device, images["plain"], small_spans(images))


@pytest.mark.parametrize("partition", [False, True], ids=["the device", "one of its partitions"])
def test_a_device_that_is_mounted_is_refused(images, tmp_path, capsys, partition):
    backing = tmp_path / "backing.img"
    backing.write_bytes(bytes(16 * MiB))
    if partition:
        write_mbr(backing, 2048, 12 * 2048)
    with loop_device(backing) as device, ExitStack() as stack:
        mount, on = device, ""
        if partition:
            partx = require_command("partx")
            run(partx, "--add", device)
            stack.callback(subprocess.run, [partx, "--delete", device], check=False)
            mount, on = f"{device}p1", f" (on {Path(device).name}p1)"
            require(Path(mount).exists(), f"the partition node {mount} made by partx")
        stack.enter_context(mounted(mount, tmp_path / "mnt"))
        code, out, err = flash(capsys, images["xz"], "--device", device, "--allow-fixed", "--yes")
    assert code == 2, err
    assert f"it is in use (mounted at {tmp_path / 'mnt'}{on}); nothing was written" in err, err
    assert "wrote" not in out


@pytest.mark.parametrize("board", ["host", "local", "ssh"], indirect=True)
def test_the_root_device_and_its_disk_are_refused_here_and_on_a_board(images, board, capsys):
    root = Path("/").stat().st_dev
    require(os.major(root) != 0, "a root filesystem on a block device")
    holder = Path(f"/sys/dev/block/{os.major(root)}:{os.minor(root)}").resolve()
    disk = holder.parent if (holder / "partition").exists() else holder
    where = ("--allow-fixed",) if board is None else ("--board", board)
    for device in sorted({f"/dev/{holder.name}", f"/dev/{disk.name}"}):
        # No --yes and no terminal: even a broken check could not write past the prompt.
        code, out, err = flash(capsys, images["xz"], *where, "--device", device)
        assert code == 2, err
        assert "root filesystem" in err and "nothing was written" in err, (device, err)
        assert "flashing" not in out


def test_a_device_failing_mid_write_is_not_reported_as_success(tmp_path, capsys):
    # A loop device over a sparse file on a 1 MiB tmpfs: the device accepts 6 MiB into its
    # cache, then the writes to the full backing store fail, as a dying card's do.
    image = tmp_path / "data.img"
    image.write_bytes(os.urandom(6 * MiB))
    store = tmp_path / "store"
    store.mkdir()
    run(require_command("mount"), "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(store))
    try:
        (store / "backing.img").write_bytes(b"")
        os.truncate(store / "backing.img", 8 * MiB)
        with loop_device(store / "backing.img") as device:
            code, out, err = flash(capsys, image, "--device", device, "--allow-fixed", "--yes")
        assert code == 3
        assert "the device did not store them" in err or "failed" in err
        assert "verified" not in out
    finally:
        subprocess.run([require_command("umount"), str(store)], check=False)


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
    local = ("--board", "local", "--device", emmc, "--bootloader", deploy)
    code, out, err = flash(capsys, images["xz"], *local)
    assert code == 0, err
    assert_flashed(emmc, images["plain"], spans)
    assert f"{len(spans)} range(s) read back on the board" in out
    assert f"{len(spans)} range checksums from the bmap" in out
    written = boot0.read_bytes()
    for name, offset in (("tiboot3.bin", 0), ("tispl.bin", 0x80000), ("u-boot.img", 0x280000)):
        data = (deploy / name).read_bytes()
        assert written[offset : offset + len(data)] == data, name
    assert "mmc partconf 0 1 1 1" in out and "boot mode switches" in out


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
    local = ("--board", "local", "--device", emmc, "--bootloader", deploy)
    code, _, err = flash(capsys, images["xz"], *local)
    assert code == 2 and says.format(emmc=emmc) in err, err
    assert untouched(emmc), "refused before writing"


def test_a_loop_device_standin_is_flashed_and_read_back_on_the_board(
    images, board, tmp_path, capsys
):
    spans = small_spans(images)
    backing = fill(tmp_path / "emmc.img", 8 * MiB)
    with loop_device(backing) as device:
        on = ("--board", board, "--device", device, "--allow-fixed", "--yes")  # a fixed disk
        code, out, err = flash(capsys, images["xz"], *on)
        assert code == 0, err
        assert_flashed(device, images["plain"], spans)
    assert f"to {device} on {board}" in out
    assert f"{len(spans)} range(s) read back on the board" in out
    # No --bootloader: the command says what is still needed to boot from it.
    assert "still needed: write tiboot3.bin, tispl.bin and u-boot.img" in out


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
    # The board's python3: vermin finds the minimum version; imports are standard or siblings.
    vermin = Path(sys.executable).with_name("vermin")  # requirements-dev.txt, in the venv
    require(vermin.exists(), "vermin (requirements-dev.txt)")
    argv = [vermin, "--no-tips", "--violations", "-t=3.10-", RECEIVER, BLOCKDEVS, READBACK]
    result = subprocess.run(argv, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    for source in (RECEIVER, BLOCKDEVS, READBACK):
        imported = re.findall(r"^(?:from|import) (\w+)", source.read_text(), re.MULTILINE)
        assert set(imported) - {"blockdevs", "readback"} <= set(sys.stdlib_module_names), source
