"""The bmap parser on the real bmaptool's files (formats 1.3 and 1.2 derived from its 2.0 output
by the documented differences) and on hostile ones (issue 16 item 4: fuzzing cases, hypothesis
properties): a Bmap or the project's own errors, never anything else. The hand-written bmap
follows bmaptool's 2.0 layout, its checksums from hashlib, not from evbench.
"""

import hashlib
import re
import tempfile
from pathlib import Path

import pytest
from flash_images import SMALL_SIZE, mapped_spans, module_images
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evbench.cli import evbench
from evbench.flash.bmap import Bmap, parse_bmap
from evbench.flash.plan import find_bmap
from evbench_core.errors import CheckFailed, EvbenchError, UserError

images = module_images  # made by bmaptool


def seal(text: str, kind: str, tag: str) -> str:
    """Put the file's own checksum in `tag`, computed over the text with zeros in its place."""
    zeros = "0" * len(hashlib.new(kind).hexdigest())
    text = re.sub(rf"<{tag}>\s*\w+\s*</{tag}>", f"<{tag}> {zeros} </{tag}>", text)
    digest = hashlib.new(kind, text.encode()).hexdigest()
    return text.replace("0" * len(digest), digest, 1)


def to_v13(text: str, image: Path) -> str:
    """Format 1.3: SHA-1 only, `sha1` attributes, <BmapFileSHA1>, no <ChecksumType>."""
    text = text.replace('<bmap version="2.0">', '<bmap version="1.3">')
    text = re.sub(r"\s*<ChecksumType>.*?</ChecksumType>", "", text)
    text = text.replace("BmapFileChecksum>", "BmapFileSHA1>")

    def sha1_range(match: re.Match) -> str:
        first, last = int(match.group(2)), int(match.group(3) or match.group(2))
        digest = hashlib.sha1(image.read_bytes()[first * 4096 : (last + 1) * 4096]).hexdigest()
        return f'<Range sha1="{digest}">{match.group(1)}'

    text = re.sub(r'<Range chksum="\w+">(\s*(\d+)(?:-(\d+))?\s*)', sha1_range, text)
    return seal(text, "sha1", "BmapFileSHA1")


def to_v12(text: str) -> str:
    """Format 1.2: no checksums at all."""
    text = text.replace('<bmap version="2.0">', '<bmap version="1.2">')
    text = re.sub(r"\s*<ChecksumType>.*?</ChecksumType>", "", text)
    text = re.sub(r"\s*<BmapFileChecksum>.*?</BmapFileChecksum>", "", text)
    return re.sub(r'<Range chksum="\w+">', "<Range>", text)


def write(folder: Path, content: str | bytes) -> Path:
    path = folder / "image.bmap"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_bmaptool_v2_sha256_v13_sha1_and_v12_without_checksums(images, tmp_path):
    image, path = images["plain"], images["bmap"]
    bmap = parse_bmap(path)
    assert (bmap.version, bmap.checksum_type) == ("2.0", "sha256")
    assert (bmap.image_size, bmap.block_size) == (SMALL_SIZE, 4096)
    assert bmap.blocks_count == -(-SMALL_SIZE // 4096)
    spans = mapped_spans(path.read_text(), 4096, SMALL_SIZE)
    assert [bmap.byte_span(r) for r in bmap.ranges] == spans
    assert bmap.mapped_bytes == sum(length for _, length in spans)
    data = image.read_bytes()
    for block_range in bmap.ranges:
        start, length = bmap.byte_span(block_range)
        assert hashlib.sha256(data[start : start + length]).hexdigest() == block_range.checksum
    old = parse_bmap(write(tmp_path, to_v13(path.read_text(), image)))
    assert (old.version, old.checksum_type) == ("1.3", "sha1")
    assert all(len(r.checksum) == 40 for r in old.ranges)
    assert [r.first for r in old.ranges] == [r.first for r in bmap.ranges]
    oldest = parse_bmap(write(tmp_path, to_v12(path.read_text())))
    assert oldest.checksum_type is None and all(r.checksum is None for r in oldest.ranges)


def test_bmap_is_found_beside_the_image_as_yocto_names_it(tmp_path):
    image = tmp_path / "core-image.wic.xz"
    image.write_bytes(b"")
    assert find_bmap(image) is None
    (tmp_path / "core-image.wic.bmap").write_text("x")
    assert find_bmap(image) == tmp_path / "core-image.wic.bmap"


#: An 8192-byte image of two 4096-byte blocks; block 0 holds DATA, block 1 is a hole.
DATA = bytes(range(256)) * 16
DIGEST = hashlib.sha256(DATA).hexdigest()
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def bmap_text(
    image_size: str = "8192", blocks: str = "2", mapped: str = "1", kind: str = "sha256",
    first_range: str = "0", range_checksum: str = DIGEST, version: str = "2.0",
    declaration: str = '<?xml version="1.0" ?>',
) -> str:  # fmt: skip
    return (
        f"{declaration}\n"
        f'<bmap version="{version}">\n'
        f"    <ImageSize> {image_size} </ImageSize>\n"
        "    <BlockSize> 4096 </BlockSize>\n"
        f"    <BlocksCount> {blocks} </BlocksCount>\n"
        f"    <MappedBlocksCount> {mapped} </MappedBlocksCount>\n"
        f"    <ChecksumType> {kind} </ChecksumType>\n"
        f"    <BmapFileChecksum> {'0' * 64} </BmapFileChecksum>\n"
        "    <BlockMap>\n"
        f'        <Range chksum="{range_checksum}"> {first_range} </Range>\n'
        "    </BlockMap>\n"
        "</bmap>\n"
    )


def sealed(**fields: str) -> str:
    return seal(bmap_text(**fields), "sha256", "BmapFileChecksum")


def test_the_hand_written_bmap_is_read_as_written(tmp_path):
    bmap = parse_bmap(write(tmp_path, sealed()))
    assert (bmap.image_size, bmap.block_size, bmap.blocks_count) == (8192, 4096, 2)
    assert [(r.first, r.last) for r in bmap.ranges] == [(0, 0)]
    assert bmap.ranges[0].checksum == DIGEST


HUGE = "9" * 5000  # beyond Python's 4300-digit int() limit
DECLARING = '<?xml version="1.0" encoding="{}"?>'

#: name: (the bmap file, the error, what its message says; None: any message will do).
REFUSED = {
    "non-ASCII file checksum": (bmap_text().replace("0" * 64, "\u00e9" * 64), UserError, None),
    "unknown XML encoding": (sealed(declaration=DECLARING.format("x-evbench")), UserError, None),
    "UTF-16 in an ASCII file": (sealed(declaration=DECLARING.format("utf-16")), UserError, None),
    # Superscript two passes str.isdigit() but not int().
    "superscript digit size": (sealed(image_size="\u00b2"), UserError, None),
    # Arabic-Indic digits: int() reads them, bmaptool never writes them.
    "Arabic-Indic digit size": (sealed(image_size="\u0668\u0661\u0669\u0662"), UserError, None),
    "Arabic-Indic digit range": (sealed(first_range="\u0660"), UserError, None),
    "4300+ digit image size": (sealed(image_size=HUGE), UserError, None),
    "4300+ digit range": (sealed(first_range=HUGE), UserError, None),
    "4300+ digit range end": (sealed(first_range=f"0-{HUGE}"), UserError, None),
    "4300+ digit version": (sealed(version=f"{HUGE}.0"), UserError, None),
    # Inconsistent with itself, each sealed so that only the inconsistency is wrong.
    "blocks count not the size's": (sealed(blocks="1"), UserError, "8192 bytes is not 1 blocks"),
    "range beyond the image": (sealed(first_range="2"), UserError, "lies beyond the image"),
    "mapped count not the ranges'": (sealed(mapped="7"), UserError, "ranges cover 1 blocks"),
    "format version 3.0": (sealed(version="3.0"), UserError, "format version 3.0"),
    "md5 checksums": (sealed(kind="md5"), UserError, "checksum type 'md5'"),
    "not XML": ("<html>not a bmap</html", UserError, "not valid XML"),
    "a range checksum edited after sealing": (
        sealed().replace(DIGEST, ("1" if DIGEST[0] != "1" else "2") + DIGEST[1:]),
        CheckFailed,
        "its own sha256 checksum does not match",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_broken_and_hostile_bmaps_are_refused_with_a_clear_error(tmp_path, case):
    content, error, says = REFUSED[case]
    with pytest.raises(error, match=says) as refused:
        parse_bmap(write(tmp_path, content))
    message = str(refused.value)
    assert message.startswith("bmap ") or "is not a bmap file" in message
    assert len(message) < 400, "the error must not echo thousands of characters"


def test_the_command_line_exits_2_naming_the_problem(tmp_path, capsys):
    image = tmp_path / "image.img"
    image.write_bytes(DATA + bytes(4096))
    huge, out = write(tmp_path, REFUSED["4300+ digit image size"][0]), tmp_path / "out"
    for bmap, says in (
        (huge, "<ImageSize> has 5000 digits"),
        # A bmap that exists but is not a file (a device) is named as what it is.
        ("/dev/zero", "the bmap /dev/zero does not exist or is not a file"),
    ):
        code = evbench(["flash", str(image), "--bmap", str(bmap), "--device", str(out)])
        err = capsys.readouterr().err
        assert code == 2, err
        assert says in err and "internal error" not in err
        assert not out.exists()


def _only_own_errors(content: str | bytes) -> Bmap | None:
    with tempfile.TemporaryDirectory() as folder:
        try:
            return parse_bmap(write(Path(folder), content))
        except EvbenchError:
            return None


@SETTINGS
@given(st.binary(max_size=2048))
def test_any_bytes_give_a_bmap_or_our_own_error(content):
    _only_own_errors(content)


@SETTINGS
@given(st.data())
def test_a_valid_bmap_with_any_byte_changed_gives_a_bmap_or_our_own_error(data):
    raw = bytearray(sealed().encode())
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    _only_own_errors(bytes(raw))


FIELD = st.one_of(
    st.text(max_size=12),
    st.from_regex(r"[0-9]{1,30}", fullmatch=True),
    st.integers(-(10**6), 10**30).map(str),
)


@SETTINGS
@given(
    image_size=FIELD,
    blocks=FIELD,
    mapped=FIELD,
    kind=st.sampled_from(["sha256", "sha1", "SHA256", "md5", ""]) | st.text(max_size=6),
    first_range=FIELD | st.tuples(FIELD, FIELD).map("-".join),
    version=st.sampled_from(["2.0", "1.4", "1.3", "1.2", "0.9", "3.0"]) | st.text(max_size=6),
)
def test_any_field_values_give_a_consistent_bmap_or_our_own_error(
    image_size, blocks, mapped, kind, first_range, version
):
    fields = {"image_size": image_size, "blocks": blocks, "mapped": mapped, "kind": kind}
    fields |= {"first_range": first_range, "version": version}
    if any(c in value for value in fields.values() for c in "<>&\"'\r\x00"):
        fields = {k: v.translate(str.maketrans("", "", "<>&\"'\r\x00")) for k, v in fields.items()}
    bmap = _only_own_errors(sealed(**fields))
    if bmap is not None:  # what the parser accepts is consistent, whatever it was fed
        assert bmap.blocks_count == -(-bmap.image_size // bmap.block_size)
        assert all(0 <= r.first <= r.last < bmap.blocks_count for r in bmap.ranges)
        assert sum(r.blocks for r in bmap.ranges) == bmap.mapped_blocks
