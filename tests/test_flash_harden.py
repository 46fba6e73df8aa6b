"""Flash cannot destroy its source nor be sent elsewhere (issue 16 item 3, issue 44 item 11): a
loop device reading the image, a card too small, a target or its directory swapped after
inspection (the seam `evbench.flash.target.before_open`), a path changing while inspected.
"""

import contextlib
import hashlib
import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from flash_images import MiB, assert_flashed, fill, flash, flash_board, module_images, small_spans
from test_flash_devices import loop_device

from evbench.flash import target as targets
from evbench_core.errors import UserError

pytestmark = pytest.mark.integration

images = module_images
board = flash_board
#: The image of the loop tests: 2 MiB, whole sectors for losetup.
SIZE = 2 * MiB


def to_device(board: str | None, device: str) -> tuple[str, ...]:
    """The arguments that send the image to `device` here (None) or on `board`: a loop device
    is a fixed disk, here and on the local board (this machine)."""
    on = ("--board", board) if board else ()
    return (*on, "--allow-fixed", "--device", device, "--yes")


@pytest.fixture
def victim(tmp_path):
    """A loop device that the swaps point at, and its bytes, which must stay as they are."""
    backing = fill(tmp_path / "victim.img", 8 * MiB)
    with loop_device(backing) as device:
        yield device, backing.read_bytes()


def unwritten(device: str, before: bytes) -> bool:
    return Path(device).read_bytes() == before


def swap_before_open(monkeypatch, swap) -> list[str]:
    """Run `swap(target)` between inspection and opening; the list records that it ran."""
    ran: list[str] = []

    def seam(target) -> None:
        swap(target)
        ran.append(str(target.path))

    monkeypatch.setattr(targets, "before_open", seam)
    return ran


def swap_for(path: Path, device: str, kind: str) -> None:
    """`path` (replaced if any) becomes a "symlink" to `device` or a "device node" of it (as a
    stray /dev entry would be)."""
    path.unlink(missing_ok=True)
    if kind == "symlink":
        path.symlink_to(device)
    else:
        os.mknod(path, 0o600 | stat.S_IFBLK, Path(device).stat().st_rdev)


@pytest.mark.parametrize(
    ("depth", "link"),
    [
        pytest.param(1, None, id="a loop over the image"),
        pytest.param(2, None, id="a loop over a loop over the image"),
        pytest.param(3, None, id="three stacked loops"),
        pytest.param(1, "removed", id="a loop over a removed hard link of the image"),
        pytest.param(2, "removed", id="a loop over a loop over a removed hard link"),
        pytest.param(1, "name taken", id="another file now at the backing name"),
    ],
)
def test_a_loop_device_reading_the_image_itself_is_refused(tmp_path, capsys, depth, link):
    image, before = tmp_path / "disk.img", os.urandom(SIZE)
    image.write_bytes(before)
    backing = tmp_path / "link.img" if link else image
    if link:
        os.link(image, backing)
    with contextlib.ExitStack() as stack:
        loops = [stack.enter_context(loop_device(backing))]
        while len(loops) < depth:
            loops.append(stack.enter_context(loop_device(Path(loops[-1]))))
        if link:
            backing.unlink()  # the loop's backing_file now names a file that is gone
            sysfs = Path(f"/sys/block/{Path(loops[0]).name}/loop/backing_file")
            assert sysfs.read_text().strip().endswith("(deleted)")
        if link == "name taken":
            backing.write_bytes(bytes(SIZE))  # a different file under the same name
        code, out, err = flash(capsys, image, "--no-bmap", *to_device(None, loops[-1]))
    assert code == 2, out + err
    assert "loop device reading" in err and "nothing was written" in err, err
    assert "verified" not in out + err
    # The chain is named from the device given down to the loop that reads the image.
    chain = " > ".join(Path(loop).name for loop in reversed(loops))
    assert (f"(through {chain})" in err) == (depth > 1), err
    assert image.read_bytes() == before


def test_a_stacked_loop_over_another_file_is_still_flashed(tmp_path, capsys):
    # The check refuses only the image's own chain: a loop over a loop over a card file.
    image = tmp_path / "disk.img"
    image.write_bytes(os.urandom(SIZE))
    card = fill(tmp_path / "card.img", 2 * SIZE)
    with loop_device(card) as lower, loop_device(Path(lower)) as upper:
        code, out, err = flash(capsys, image, "--no-bmap", *to_device(None, upper))
    assert code == 0, err
    assert "verified" in out + err
    assert card.read_bytes()[:SIZE] == image.read_bytes()


@pytest.mark.parametrize(
    ("board", "kind", "bmap"),
    [
        ("host", "xz", False),
        ("host", "zst", False),
        ("host", "xz", True),
        ("local", "xz", False),
        ("local", "zst", False),
        ("local", "xz", True),
        ("local", "plain", False),
        ("ssh", "xz", False),
    ],
    indirect=["board"],
)
def test_an_image_too_large_for_the_device_is_refused_before_writing(
    images, tmp_path, capsys, board, kind, bmap
):
    # The image is 4 MiB + 1000 bytes (as xz's index, zstd's frame header, the bmap or the
    # file say); the device 2 MiB, as sysfs reports it where it is.
    card = fill(tmp_path / "card.img", 2 * MiB)
    before = card.read_bytes()
    with loop_device(card) as device:
        given = ("--bmap", images["bmap"]) if bmap else ("--no-bmap",)
        code, out, err = flash(capsys, images[kind], *given, *to_device(board, device))
        assert unwritten(device, before), "the device was written"
    assert code == 2, err
    assert f"the image ({4 * MiB + 1000} bytes) is larger than {device}" in err
    where = f" on {board}" if board else ""
    assert f"{2 * MiB} bytes){where}; nothing was written" in err
    assert len(err.strip().splitlines()) <= 2  # the error and its hint
    assert "flashing" not in out and "wrote" not in out


@pytest.mark.parametrize("board", ["host", "local"], indirect=True)
def test_a_gzip_image_says_before_writing_that_its_fit_is_unknown(images, tmp_path, capsys, board):
    card = fill(tmp_path / "card.img", 2 * MiB)
    with loop_device(card) as device:
        code, out, err = flash(capsys, images["gz"], "--no-bmap", *to_device(board, device))
    note = f"{images['gz']} (gz) declares no plain size ahead: whether it fits {device}"
    assert note in out and "known only as it is written" in out
    assert out.index(note) < out.index("flashing")
    assert code == 3, err  # found as the device filled up: the writer failed


@pytest.mark.parametrize(
    ("target", "swap", "says"),
    [
        ("card.img", "symlink", ["changed", "nothing was written"]),
        ("new.img", "symlink", ["changed"]),  # a new file that appears as a symlink
        # no symlink at all: O_NOFOLLOW opens the node; only fstat on the descriptor tells
        ("card.img", "device node", ["no longer a regular file"]),
        # the new file's directory swapped for a link to another one, or for another one
        ("cards/new.img", "a link", ["changed", "nothing was written"]),
        ("cards/new.img", "another directory", ["its directory is another one"]),
    ],
)
def test_a_target_swapped_after_inspection_is_not_written(
    images, victim, tmp_path, capsys, monkeypatch, target, swap, says
):
    device, before = victim
    path, folder, other = tmp_path / target, tmp_path / "cards", tmp_path / "other"
    folder.mkdir()
    other.mkdir()
    if target == "card.img":
        fill(path, SIZE)

    def swap_it(_target) -> None:
        if swap in ("symlink", "device node"):
            swap_for(path, device, swap)
            return
        folder.rename(tmp_path / "cards.moved")
        if swap == "a link":
            folder.symlink_to(other)
        else:
            other.rename(folder)

    ran = swap_before_open(monkeypatch, swap_it)
    code, out, err = flash(capsys, images["xz"], "--device", path)
    assert unwritten(device, before), "the swapped-in device was written"
    assert ran, "the swap never happened"
    assert code == 2 and all(said in err for said in says), err
    assert "wrote" not in out
    # Nothing in the directory swapped in (through the link or renamed), nor the moved one.
    assert [*folder.iterdir(), *tmp_path.glob("cards.moved/*")] == []


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
        swap_for(path, inspected, kind)
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


# The board's receiver (flash --board) opens its device the same way: imported here from its
# folder, the swap injected by wrapping inspect(), which runs right before write() opens it.
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


@pytest.mark.parametrize("board", ["host", "local"], indirect=True)
def test_the_image_itself_is_never_the_target(images, tmp_path, capsys, board):
    # A file target is emptied before writing: were it the image (here through a link, so the
    # names differ), the image would be lost. Its bmap likewise. The local board is this
    # machine: its receiver cannot tell, so the host checks as it does without --board.
    image, bmap = tmp_path / "disk.img", tmp_path / "disk.img.bmap"
    image.write_bytes(images["plain"].read_bytes())
    bmap.write_bytes(images["bmap"].read_bytes())
    (tmp_path / "card.img").symlink_to(image)
    on = ("--board", board) if board else ()
    for target in (image, tmp_path / "card.img", bmap):
        code, out, err = flash(capsys, image, "--bmap", bmap, *on, "--device", target, "--yes")
        assert code == 2 and "flashing" not in out, out
        error, hint = err.strip().splitlines()  # one line, and what to do
        assert error.endswith("itself; nothing was written") and "another --device" in hint
    assert image.read_bytes() == images["plain"].read_bytes()
    assert bmap.read_bytes() == images["bmap"].read_bytes()


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
    # Another process flips the path's directory between a link and a file while the target
    # is inspected over and over: a Target or a refusal, never an OSError from mid-swap.
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
