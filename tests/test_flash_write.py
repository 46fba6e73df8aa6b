"""evbench flash to regular-file targets pre-filled with a pattern: only mapped ranges written (a
file target becomes exactly the image, unmapped ranges as holes, as bmaptool makes it), verified.
"""

import os
import random
import re

import pytest
from conftest import require_command
from flash_images import (
    COMPRESSORS,
    SMALL_SIZE,
    MiB,
    assert_flashed,
    compress,
    fill,
    flash,
    flash_board,
    flip_byte,
    module_images,
    small_spans,
    untouched,
)
from test_flash_bmap import seal, to_v12, to_v13

images = module_images
board = flash_board


@pytest.mark.parametrize(
    ("kind", "version"),
    [*((kind, "2.0") for kind in ["plain", *COMPRESSORS]), ("xz", "1.3"), ("xz", "1.2")],
)
def test_only_mapped_ranges_are_written(images, kind, version, tmp_path, capsys):
    # As bmaptool does: a larger file is cut to the image's size, its old contents never
    # showing through the unmapped ranges. The old formats are derived from bmaptool's.
    spans = small_spans(images)
    text = images["bmap"].read_text()
    bmap = tmp_path / "disk.bmap"
    bmap.write_text(
        {"2.0": text, "1.3": to_v13(text, images["plain"]), "1.2": to_v12(text)}[version]
    )
    target = fill(tmp_path / "card", 3 * SMALL_SIZE)
    code, out, err = flash(capsys, images[kind], "--bmap", bmap, "--device", target)
    assert code == 0, err
    assert_flashed(target, images["plain"], spans, as_file=True)
    written = sum(length for _, length in spans)
    assert f"wrote {written} bytes" in out
    # 1.2 has no checksums: every range is read back instead.
    assert ("read back" in out) == (version == "1.2"), out
    assert (f"{len(spans)} range checksums from the bmap" in out) == (version != "1.2"), out
    # Holes, not written zeros: the file holds about the mapped bytes (ext4 allocates 4 KiB).
    assert target.stat().st_blocks * 512 <= written + len(spans) * 4096


def test_without_a_bmap_the_whole_image_is_written_and_read_back(images, tmp_path, capsys):
    target = fill(tmp_path / "card", SMALL_SIZE + 8192)
    code, out, err = flash(capsys, images["gz"], "--no-bmap", "--device", target)
    assert code == 0, err
    # The larger file is cut to the image: nothing of the old 8 KiB tail survives.
    assert target.read_bytes() == images["plain"].read_bytes()
    assert "read back after fsync" in out


def test_a_new_file_target_gets_the_image_size_with_holes(images, tmp_path, capsys):
    target = tmp_path / "new.img"
    code, _, err = flash(capsys, images["xz"], "--bmap", images["bmap"], "--device", target)
    assert code == 0, err
    assert target.read_bytes() == images["plain"].read_bytes()


@pytest.mark.parametrize("board", ["host", "local"], indirect=True)
def test_a_flipped_range_checksum_fails_with_exit_3(images, board, tmp_path, capsys):
    text = images["bmap"].read_text()
    checksums = re.findall(r'chksum="(\w+)"', text)
    wrong = checksums[1][:10] + ("0" if checksums[1][10] != "0" else "1") + checksums[1][11:]
    bmap = tmp_path / "flipped.bmap"
    bmap.write_text(seal(text.replace(checksums[1], wrong), "sha256", "BmapFileChecksum"))
    target = fill(tmp_path / "card", SMALL_SIZE)
    on = ("--board", board) if board else ()
    code, out, err = flash(capsys, images["xz"], "--bmap", bmap, *on, "--device", target)
    assert code == 3
    assert "checksum mismatch for blocks" in err and f"the bmap says {wrong}" in err
    assert re.search(r"wrote \d+ of \d+ bytes before stopping", err)
    assert "wrote" not in out.replace("flashing", "")  # no success summary
    assert "read back" not in out


def test_a_flipped_byte_in_the_compressed_image_fails_with_exit_3(images, tmp_path, capsys):
    damaged = flip_byte(images["xz"], tmp_path / "disk.img.xz", at=0.3)
    target = fill(tmp_path / "card", SMALL_SIZE)
    code, out, err = flash(capsys, damaged, "--bmap", images["bmap"], "--device", target)
    assert code == 3
    assert "corrupt" in err and "download the image again" in err
    assert "verified" not in out


def test_a_bmap_checksum_mismatch_writes_nothing(images, tmp_path, capsys):
    text = images["bmap"].read_text()
    bmap = tmp_path / "edited.bmap"
    bmap.write_text(text.replace("<MappedBlocksCount> ", "<MappedBlocksCount>  ", 1))
    target = fill(tmp_path / "card", SMALL_SIZE)
    code, _, err = flash(capsys, images["xz"], "--bmap", bmap, "--device", target)
    assert code == 3
    assert "its own sha256 checksum does not match" in err and "nothing was written" in err
    assert untouched(target)


def test_a_truncated_plain_image_is_refused_before_writing(images, tmp_path, capsys):
    cut = tmp_path / "disk.img"
    cut.write_bytes(images["plain"].read_bytes()[: 3 * 1024 * 1024])
    target = fill(tmp_path / "card", SMALL_SIZE)
    code, _, err = flash(capsys, cut, "--bmap", images["bmap"], "--device", target)
    assert code == 2
    assert f"its bmap {images['bmap']} says {SMALL_SIZE}" in err
    assert untouched(target)


def test_a_truncated_compressed_image_stops_at_the_fault(images, tmp_path, capsys):
    cut = tmp_path / "disk.img.zst"
    cut.write_bytes(images["zst"].read_bytes()[: images["zst"].stat().st_size * 2 // 3])
    target = fill(tmp_path / "card", SMALL_SIZE)
    code, out, err = flash(capsys, cut, "--bmap", images["bmap"], "--device", target)
    assert code == 3
    assert "corrupt" in err or "truncated" in err
    assert "verified" not in out


@pytest.mark.parametrize("kind", ["xz", "gz"])
def test_a_cut_off_image_says_how_many_bytes_the_target_got(kind, tmp_path, capsys):
    # Random data does not compress: half the compressed file is about half the data, so the
    # stream fails partway, the target holding some of the image.
    require_command(COMPRESSORS[kind][0])
    data = random.Random(kind).randbytes(3 * MiB)
    plain = tmp_path / "data.img"
    plain.write_bytes(data)
    whole = compress(plain, kind, tmp_path / f"whole.img.{kind}")
    cut = tmp_path / f"cut.img.{kind}"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    target = tmp_path / "new.img"  # a new file, written from byte 0 on: its size is the count
    code, out, err = flash(capsys, cut, "--no-bmap", "--device", target)
    assert code == 3, err
    written = target.stat().st_size
    assert 0 < written < len(data)
    assert target.read_bytes() == data[:written]
    # Neither format declares its size here (gzip never, a cut xz lost its index): no total.
    assert f"wrote {written} bytes before stopping; the target is incomplete" in err
    assert "Traceback" not in err and "internal error" not in err
    assert "verified" not in out
    # the decompressor's word, named once: "xz: FILE: ...", not "xz: /usr/bin/xz: FILE: ..."
    tool = COMPRESSORS[kind][0]
    assert f"of its data: {tool}: {cut}: " in err, err


def test_the_decompressor_is_not_given_the_board_password(images, tmp_path, capsys, monkeypatch):
    # The real xz, started through a script first on PATH that writes what it was given.
    xz, spy = require_command("xz"), tmp_path / "bin" / "xz"
    spy.parent.mkdir()
    spy.write_text(f'#!/bin/sh\nenv >> "{tmp_path}/xz.env"\nexec "{xz}" "$@"\n')
    spy.chmod(0o755)
    monkeypatch.setenv("PATH", f"{spy.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("EVBENCH_PASSWORD", "flash-sentinel-" + os.urandom(6).hex())
    target = tmp_path / "card.img"
    code, _, err = flash(capsys, images["xz"], "--no-bmap", "--device", target, "--yes")
    assert code == 0, err
    assert target.read_bytes() == images["plain"].read_bytes()
    given = (tmp_path / "xz.env").read_text()
    assert f"PATH={spy.parent}:" in given  # the script ran, with the rest of the environment
    assert "EVBENCH_PASSWORD" not in given


def test_bad_arguments_are_one_line_errors(images, tmp_path, capsys):
    code, _, err = flash(capsys, tmp_path / "missing.wic.xz", "--device", tmp_path / "x")
    assert code == 2 and "does not exist" in err
    code, _, err = flash(capsys, images["xz"], "--bmap", tmp_path / "none.bmap", "--device", "x")
    assert code == 2 and "does not exist" in err
    code, _, err = flash(capsys, images["xz"], "--device", "/dev/null", "--no-bmap")
    assert code == 2 and "neither a block device nor a regular file" in err
    code, _, err = flash(capsys, images["xz"], "--device", tmp_path / "x", "--reboot")
    assert code == 2 and "need --board" in err
