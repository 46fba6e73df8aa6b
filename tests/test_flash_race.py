"""The flash target cannot be swapped between inspection and writing (issue 16, item 3).

An attacker (or a udev rule, or a careless script) who replaces the target path
after evbench inspected it must not get the write. The swap is injected through
the documented test seam `evbench.flash.target.before_open`, which runs between
inspection and opening; the targets are real loop devices (losetup), as in
test_flash_devices.py, and every check is on the bytes of the real devices.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import sys
from pathlib import Path

import pytest
from flash_images import SMALL_SIZE, MiB, assert_flashed, fill, flash, module_images, small_spans
from test_flash_devices import loop_device

from evbench.flash import target as targets

pytestmark = pytest.mark.integration

images = module_images


@pytest.fixture
def victim(tmp_path):
    """A loop device that the swaps point at, and its bytes, which must stay as they are."""
    backing = fill(tmp_path / "victim.img", 8 * MiB)
    with loop_device(backing) as device:
        yield device, backing.read_bytes()


def unwritten(device: str, before: bytes) -> bool:
    with open(device, "rb") as handle:
        return handle.read() == before


def swap_before_open(monkeypatch, swap) -> list[str]:
    """Run `swap(target)` between inspection and opening; the list records that it ran."""
    ran: list[str] = []

    def seam(target) -> None:
        swap(target)
        ran.append(str(target.path))

    monkeypatch.setattr(targets, "before_open", seam)
    return ran


def block_node(path: Path, device: str) -> None:
    """A second device node for `device` (as a stray /dev entry would be)."""
    os.mknod(path, 0o600 | stat.S_IFBLK, Path(device).stat().st_rdev)


def swap_for(path: Path, device: str, kind: str) -> None:
    """`path` (if any) becomes a "symlink" to `device` or a "device node" of it."""
    path.unlink(missing_ok=True)
    if kind == "symlink":
        path.symlink_to(device)
    else:
        block_node(path, device)


@pytest.mark.parametrize(
    ("exists", "kind", "says"),
    [
        (True, "symlink", ["changed", "nothing was written"]),
        (False, "symlink", ["changed"]),  # a new file that appears as a symlink
        # no symlink at all: O_NOFOLLOW opens the node; only fstat on the descriptor tells
        (True, "device node", ["no longer a regular file"]),
    ],
)
def test_a_file_swapped_for_a_device_is_not_written(
    images, victim, tmp_path, capsys, monkeypatch, exists, kind, says
):
    device, before = victim
    target = fill(tmp_path / "card.img", SMALL_SIZE) if exists else tmp_path / "new.img"
    ran = swap_before_open(monkeypatch, lambda _t: swap_for(target, device, kind))
    code, out, err = flash(capsys, images["xz"], "--device", target)
    assert unwritten(device, before), "the swapped-in device was written"
    assert ran, "the swap never happened"
    assert code == 2 and all(said in err for said in says), err
    assert "wrote" not in out


@pytest.mark.parametrize("kind", ["device node", "symlink"])
def test_a_device_path_repointed_after_inspection_never_writes_the_new_device(
    images, victim, tmp_path, capsys, monkeypatch, kind
):
    # A path that stays a block device node, but of another device: the device number
    # tells. A /dev/disk/by-id/... name is a symlink: it keeps working, and repointing it
    # after inspection changes nothing, because the resolved device is what gets opened.
    device, before = victim
    path = tmp_path / "usb-Card_Reader_0001-0:0"
    with loop_device(fill(tmp_path / "inspected.img", 8 * MiB)) as inspected:
        if kind == "symlink":
            path.symlink_to(inspected)
        else:
            block_node(path, inspected)
        ran = swap_before_open(monkeypatch, lambda _t: swap_for(path, device, kind))
        code, out, err = flash(capsys, images["xz"], "--device", path, "--allow-fixed", "--yes")
        assert ran, "the swap never happened"
        if kind == "device node":
            assert code == 2 and "another device" in err, err
        else:
            assert code == 0, err
            assert f"{path} -> {inspected}" in out  # both names, so the user sees what was meant
            assert_flashed(inspected, images["plain"], small_spans(images))
    assert unwritten(device, before), "the device the path was repointed to was written"


# The board's receiver (flash --board) opens its device the same way. It runs as a
# script on the board; here it is imported from its folder, and the swap is injected by
# wrapping its inspect(), which runs right before write() opens the device.
FRAMES = b"W 0 4\nEVIL" + b"R 0 4 sha256 " + hashlib.sha256(b"EVIL").hexdigest().encode() + b"\nE\n"


@pytest.mark.parametrize(
    ("swap_kind", "refusal"),
    # A link fails to open (O_NOFOLLOW); a node opens, and fstat tells it apart.
    [("symlink", "symbolic links"), ("device node", "changed since it was inspected")],
)
def test_the_boards_receiver_refuses_a_swapped_target(
    victim, tmp_path, monkeypatch, swap_kind, refusal
):
    monkeypatch.syspath_prepend(str(Path(targets.__file__).parent))
    import emmc_receiver

    device, before = victim
    target = fill(tmp_path / "emmc.img", MiB)
    # What the host would stream: the receiver reads sys.stdin.buffer.
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FRAMES)))
    inspect, ran = emmc_receiver.inspect, []

    def inspect_then_swap(path: str) -> dict:
        info = inspect(path)
        swap_for(target, device, swap_kind)
        ran.append(path)
        return info

    monkeypatch.setattr(emmc_receiver, "inspect", inspect_then_swap)
    with pytest.raises(emmc_receiver.Refused, match=refusal):
        emmc_receiver.write(str(target), None, False)
    assert unwritten(device, before), "the swapped-in device was written"
    assert ran, "the swap never happened"


def test_the_image_itself_is_never_the_target(images, tmp_path, capsys):
    # A file target is emptied before writing: were it the image (here through a link, so the
    # names differ), the image would be lost. Its bmap likewise.
    image = tmp_path / "disk.img"
    image.write_bytes(images["plain"].read_bytes())
    (tmp_path / "card.img").symlink_to(image)
    for target in (image, tmp_path / "card.img", images["bmap"]):
        code, _, err = flash(capsys, image, "--bmap", images["bmap"], "--device", target)
        assert code == 2 and "itself; nothing was written" in err, err
    assert image.read_bytes() == images["plain"].read_bytes()
