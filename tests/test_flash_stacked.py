"""Flash cannot destroy its source through a chain of loop devices (issue 44, item 11):
an image flashed to a loop device reading a loop device over the image, or to a loop
device over a hard link of the image whose name was then removed, was overwritten and
reported "verified" (only the top loop's backing_file was compared, by name). Now the
kernel's own device and inode of every loop's file (LOOP_GET_STATUS64) are compared,
down every loop that reads a block device, and the flash is refused before writing.
Real loop devices (losetup), as in test_flash_harden.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from flash_images import MiB, fill, flash, piece
from test_flash_devices import loop_device

pytestmark = pytest.mark.integration

SIZE = 2 * MiB


def _image(path: Path) -> Path:
    path.write_bytes(piece(7, 0, SIZE))  # whole sectors for losetup
    return path


def _refused(code: int, out: str, err: str) -> None:
    assert code == 2, out + err
    assert "loop device reading" in err and "nothing was written" in err, err
    assert "verified" not in out + err


def test_a_loop_over_a_loop_over_the_image_is_refused(tmp_path, capsys):
    image = _image(tmp_path / "disk.img")
    before = image.read_bytes()
    with loop_device(image) as lower, loop_device(Path(lower)) as upper:
        code, out, err = flash(capsys, image, "--no-bmap", "--device", upper, "--allow-fixed",
                               "--yes")  # fmt: skip
    _refused(code, out, err)
    assert f"through {Path(upper).name} > {Path(lower).name}" in err
    assert image.read_bytes() == before


def test_three_stacked_loops_are_followed_to_the_image(tmp_path, capsys):
    image = _image(tmp_path / "disk.img")
    before = image.read_bytes()
    with (
        loop_device(image) as first,
        loop_device(Path(first)) as second,
        loop_device(Path(second)) as third,
    ):
        code, out, err = flash(capsys, image, "--no-bmap", "--device", third, "--allow-fixed",
                               "--yes")  # fmt: skip
    _refused(code, out, err)
    assert image.read_bytes() == before


def test_a_loop_over_a_removed_hard_link_of_the_image_is_refused(tmp_path, capsys):
    image = _image(tmp_path / "disk.img")
    before = image.read_bytes()
    link = tmp_path / "link.img"
    os.link(image, link)
    with loop_device(link) as device:
        link.unlink()  # the loop's backing_file now says "link.img (deleted)"
        backing = Path(f"/sys/block/{Path(device).name}/loop/backing_file").read_text()
        assert backing.strip().endswith("(deleted)")
        code, out, err = flash(capsys, image, "--no-bmap", "--device", device, "--allow-fixed",
                               "--yes")  # fmt: skip
    _refused(code, out, err)
    assert image.read_bytes() == before


def test_a_loop_over_a_loop_over_a_removed_hard_link_is_refused(tmp_path, capsys):
    image = _image(tmp_path / "disk.img")
    before = image.read_bytes()
    link = tmp_path / "link.img"
    os.link(image, link)
    with loop_device(link) as lower, loop_device(Path(lower)) as upper:
        link.unlink()
        code, out, err = flash(capsys, image, "--no-bmap", "--device", upper, "--allow-fixed",
                               "--yes")  # fmt: skip
    _refused(code, out, err)
    assert image.read_bytes() == before


def test_a_file_now_at_the_backing_name_does_not_hide_the_image(tmp_path, capsys):
    """The loop reads the image through a name that now belongs to another file."""
    image = _image(tmp_path / "disk.img")
    before = image.read_bytes()
    link = tmp_path / "link.img"
    os.link(image, link)
    with loop_device(link) as device:
        link.unlink()
        link.write_bytes(b"\0" * SIZE)  # a different file under the same name
        code, out, err = flash(capsys, image, "--no-bmap", "--device", device, "--allow-fixed",
                               "--yes")  # fmt: skip
    _refused(code, out, err)
    assert image.read_bytes() == before


def test_a_stacked_loop_over_another_file_is_still_flashed(tmp_path, capsys):
    """The check refuses only the image's own chain: a loop over a loop over a card file."""
    image = _image(tmp_path / "disk.img")
    card = fill(tmp_path / "card.img", 2 * SIZE)
    with loop_device(card) as lower, loop_device(Path(lower)) as upper:
        code, out, err = flash(capsys, image, "--no-bmap", "--device", upper, "--allow-fixed",
                               "--yes")  # fmt: skip
    assert code == 0, err
    assert "verified" in out + err
    assert card.read_bytes()[:SIZE] == image.read_bytes()
