"""The bmap parser against bmap files made by the real bmaptool (Debian bmap-tools).

bmaptool 3.6 writes only format 2.0 (sha256). The 1.3 (SHA-1) and 1.2 (no
checksums) files are derived from its output by the format's documented
differences (tag and attribute names, checksum type), then sealed with their
own file checksum, as bmaptool's own compatibility tests keep old formats.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from conftest import require_command
from flash_images import SMALL_EXTENTS, make_bmap, make_image, mapped_spans

from evbench.flash.bmap import parse_bmap
from evbench.flash.plan import find_bmap
from evbench_core.errors import CheckFailed, UserError

#: 4 MiB and 1000 bytes (flash_images.SMALL_SIZE): the last block is partial, as in real images.
IMAGE_SIZE = 4 * 1024 * 1024 + 1000


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bmap")
    image = make_image(folder / "disk.img", IMAGE_SIZE, SMALL_EXTENTS)
    bmap = make_bmap(require_command("bmaptool"), image, folder / "disk.bmap")
    return image, bmap


def seal(text: str, kind: str, tag: str) -> str:
    """Put the file's own checksum in `tag`, computed over the text with zeros in its place."""
    zeros = "0" * len(hashlib.new(kind).hexdigest())
    text = re.sub(rf"<{tag}>\s*\w+\s*</{tag}>", f"<{tag}> {zeros} </{tag}>", text)
    digest = hashlib.new(kind, text.encode()).hexdigest()
    return text.replace("0" * len(digest), digest, 1)


def range_sha1(image: Path, first: int, last: int) -> str:
    data = image.read_bytes()[first * 4096 : (last + 1) * 4096]
    return hashlib.sha1(data).hexdigest()


def to_v13(text: str, image: Path) -> str:
    """Format 1.3: SHA-1 only, `sha1` attributes, <BmapFileSHA1>, no <ChecksumType>."""
    text = text.replace('<bmap version="2.0">', '<bmap version="1.3">')
    text = re.sub(r"\s*<ChecksumType>.*?</ChecksumType>", "", text)
    text = text.replace("BmapFileChecksum>", "BmapFileSHA1>")

    def sha1_range(match: re.Match) -> str:
        first, last = int(match.group(2)), int(match.group(3) or match.group(2))
        return f'<Range sha1="{range_sha1(image, first, last)}">{match.group(1)}'

    text = re.sub(r'<Range chksum="\w+">(\s*(\d+)(?:-(\d+))?\s*)', sha1_range, text)
    return seal(text, "sha1", "BmapFileSHA1")


def to_v12(text: str) -> str:
    """Format 1.2: no checksums at all."""
    text = text.replace('<bmap version="2.0">', '<bmap version="1.2">')
    text = re.sub(r"\s*<ChecksumType>.*?</ChecksumType>", "", text)
    text = re.sub(r"\s*<BmapFileChecksum>.*?</BmapFileChecksum>", "", text)
    return re.sub(r'<Range chksum="\w+">', "<Range>", text)


def test_bmaptool_v2_sha256(made):
    image, path = made
    bmap = parse_bmap(path)
    assert (bmap.version, bmap.checksum_type) == ("2.0", "sha256")
    assert (bmap.image_size, bmap.block_size) == (IMAGE_SIZE, 4096)
    assert bmap.blocks_count == -(-IMAGE_SIZE // 4096)
    spans = mapped_spans(path.read_text(), 4096, IMAGE_SIZE)
    assert [bmap.byte_span(r) for r in bmap.ranges] == spans
    assert bmap.mapped_bytes == sum(length for _, length in spans)
    data = image.read_bytes()
    for block_range in bmap.ranges:
        start, length = bmap.byte_span(block_range)
        assert hashlib.sha256(data[start : start + length]).hexdigest() == block_range.checksum


def test_v13_sha1_and_v12_without_checksums(made, tmp_path):
    image, path = made
    v13 = tmp_path / "v13.bmap"
    v13.write_text(to_v13(path.read_text(), image))
    old = parse_bmap(v13)
    assert (old.version, old.checksum_type) == ("1.3", "sha1")
    assert all(len(r.checksum) == 40 for r in old.ranges)
    assert [r.first for r in old.ranges] == [r.first for r in parse_bmap(path).ranges]
    v12 = tmp_path / "v12.bmap"
    v12.write_text(to_v12(path.read_text()))
    oldest = parse_bmap(v12)
    assert oldest.checksum_type is None and all(r.checksum is None for r in oldest.ranges)


def test_edited_bmap_fails_its_own_checksum(made, tmp_path):
    _, path = made
    edited = tmp_path / "edited.bmap"

    def other_digit(m: re.Match) -> str:
        return m.group(1) + ("1" if m.group(2) != "1" else "2")

    edited.write_text(re.sub(r'(chksum=")(\w)', other_digit, path.read_text(), count=1))
    with pytest.raises(CheckFailed, match="its own sha256 checksum does not match"):
        parse_bmap(edited)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("<BlocksCount> 1025 ", "<BlocksCount> 1024 "), "is not 1024 blocks"),
        (lambda t: re.sub(r"> 1024 </Range>", "> 1025 </Range>", t), "lies beyond the image"),
        (lambda t: re.sub(r"<MappedBlocksCount> (\d+)", "<MappedBlocksCount> 7", t), "cover"),
        (lambda t: t.replace('version="2.0"', 'version="3.0"'), "format version 3.0"),
        (lambda t: t.replace("<ChecksumType> sha256 ", "<ChecksumType> md5 "), "md5"),
    ],
)
def test_inconsistent_bmap_is_refused(made, tmp_path, edit, message):
    _, path = made
    text = edit(path.read_text())
    assert text != path.read_text(), "the edit must change the bmap"
    broken = tmp_path / "broken.bmap"
    broken.write_text(seal(text, "sha256", "BmapFileChecksum"))
    with pytest.raises(UserError, match=message):
        parse_bmap(broken)


def test_not_a_bmap(tmp_path):
    junk = tmp_path / "junk.bmap"
    junk.write_text("<html>not a bmap</html")
    with pytest.raises(UserError, match="not valid XML"):
        parse_bmap(junk)


def test_bmap_is_found_beside_the_image_as_yocto_names_it(tmp_path):
    image = tmp_path / "core-image.wic.xz"
    image.write_bytes(b"")
    assert find_bmap(image) is None
    (tmp_path / "core-image.wic.bmap").write_text("x")
    assert find_bmap(image) == tmp_path / "core-image.wic.bmap"
