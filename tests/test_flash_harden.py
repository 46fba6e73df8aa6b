"""Flash that cannot destroy its source, nor be sent elsewhere (an independent attack):

- an image flashed to a loop device that reads the image itself was destroyed and
  reported "verified": now refused before anything is written;
- a compressed image without a bmap on a too-small card was written until ENOSPC
  ("wrote 4194304 of 0 bytes"): the size xz's index and zstd's frame headers declare
  now refuses the card first;
- a new-file target was created through a parent directory swapped for a link (19 of
  60 races): the directory is now opened one component at a time without following
  links, checked to be the one inspected, and the file made inside it with openat;
- a path that changed while it was inspected gave an internal error (EINVAL from
  Path.resolve, 42 of 120 races): now "the target changed", exit 2.
Real loop devices (losetup), as in test_flash_devices.py; the swaps go through the
documented seam `evbench.flash.target.before_open` (test_flash_race.py).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import require_command
from flash_images import MiB, fill, small_image_set
from test_flash_devices import loop_device

from evbench.cli import evbench
from evbench.flash import target as targets
from evbench_core.errors import UserError

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    require_command("xz")
    require_command("zstd")
    return small_image_set(tmp_path_factory.mktemp("harden"), require_command("bmaptool"))


def flash(capsys, *argv):
    code = evbench(["flash", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def flash_without_bmap(capsys, image, device):
    return flash(capsys, image, "--no-bmap", "--device", device, "--allow-fixed", "--yes")


def test_a_loop_device_reading_the_image_itself_is_refused(images, tmp_path, capsys):
    image = tmp_path / "disk.img"
    image.write_bytes(images["plain"].read_bytes()[: 4 * MiB])  # whole sectors for losetup
    before = image.read_bytes()
    with loop_device(image) as device:
        code, out, err = flash_without_bmap(capsys, image, device)
    assert code == 2, err
    assert "loop device reading" in err and "nothing was written" in err
    assert "verified" not in out + err
    assert image.read_bytes() == before


@pytest.mark.parametrize("kind", ["xz", "zst"])
def test_a_compressed_image_too_large_for_the_card_is_refused_before_writing(
    images, tmp_path, capsys, kind
):
    # the image is 4 MiB + 1000 bytes plain; the card 2 MiB
    card = fill(tmp_path / "card.img", 2 * MiB)
    before = card.read_bytes()
    with loop_device(card) as device:
        code, out, err = flash_without_bmap(capsys, images[kind], device)
        with open(device, "rb") as written:
            assert written.read() == before, "the card was written"
    assert code == 2, err
    assert f"the image ({4 * MiB + 1000} bytes) is larger than" in err
    assert "wrote" not in out


def test_a_gzip_image_says_before_writing_that_its_fit_is_unknown(images, tmp_path, capsys):
    card = fill(tmp_path / "card.img", 2 * MiB)
    with loop_device(card) as device:
        code, out, err = flash_without_bmap(capsys, images["gz"], device)
    note = f"{images['gz']} (gz) declares no plain size ahead: whether it fits {device}"
    assert note in out and out.index(note) < out.index("flashing")
    assert code == 3, err  # found as the card filled up


@pytest.mark.parametrize(
    ("swapped_for", "says"),
    [
        ("a link", ["changed", "nothing was written"]),
        ("another directory", ["its directory is another one"]),
    ],
)
def test_a_new_file_is_not_created_through_a_parent_swapped(
    images, tmp_path, capsys, monkeypatch, swapped_for, says
):
    folder, moved, other = tmp_path / "cards", tmp_path / "cards.moved", tmp_path / "other"
    folder.mkdir()
    other.mkdir()

    def swap(_target) -> None:
        folder.rename(moved)
        if swapped_for == "a link":
            folder.symlink_to(other)
        else:
            other.rename(folder)

    monkeypatch.setattr(targets, "before_open", swap)
    code, _, err = flash(capsys, images["xz"], "--device", folder / "new.img")
    assert code == 2 and all(said in err for said in says), err
    # nothing in the directory swapped in (through the link or renamed), nor in the moved one
    assert list(folder.iterdir()) == [] and list(moved.iterdir()) == []


FLIPPER = """
import os, sys
flip, to = sys.argv[1], sys.argv[2]
link, plain = flip + ".link", flip + ".file"
while True:
    os.symlink(to, link)
    os.rename(link, flip)  # atomically: now a link
    open(plain, "w").close()
    os.rename(plain, flip)  # atomically: now a regular file
"""


def test_a_path_that_changes_while_it_is_inspected_is_the_target_changed(tmp_path):
    # another process turns the path's directory into a link and back into a file as
    # fast as it can, while the target is inspected over and over: each outcome must be
    # a Target or a refusal, never an OSError from resolving it mid-swap
    link_target = tmp_path / "link-target"
    link_target.mkdir()
    flip = tmp_path / "flip"
    flipper = subprocess.Popen([sys.executable, "-c", FLIPPER, str(flip), str(link_target)])
    outcomes = {"target": 0, "refused": 0}
    try:
        for _ in range(8000):
            try:
                targets.inspect_target(flip / "card.img")
                outcomes["target"] += 1
            except UserError:
                outcomes["refused"] += 1
            except OSError as error:  # the bug: an internal error
                pytest.fail(f"an OSError escaped after {sum(outcomes.values())}: {error!r}")
    finally:
        flipper.kill()
        flipper.wait()
    assert outcomes["refused"] > 0  # the swaps really met the inspection
