"""The bmap parser on hostile or broken files: it returns a Bmap or refuses with the
project's own errors (UserError, CheckFailed -> exit 2 or 3), never anything else.

The regression cases are the ones a fuzzing probe found crashing (issue 16, item 4);
the properties (hypothesis, a bounded budget for the fast tier) keep it that way.
The valid bmap here is written by hand from the format (bmaptool's 2.0 layout), its
checksums computed with hashlib, so no expectation comes from evbench itself.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_flash_bmap import seal

from evbench.cli import evbench
from evbench.flash.bmap import Bmap, parse_bmap
from evbench_core.errors import EvbenchError, UserError

#: An 8192-byte image of two 4096-byte blocks; block 0 holds DATA, block 1 is a hole.
DATA = bytes(range(256)) * 16
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def bmap_text(
    image_size: str = "8192", blocks: str = "2", mapped: str = "1", kind: str = "sha256",
    first_range: str = "0", range_checksum: str | None = None, version: str = "2.0",
    declaration: str = '<?xml version="1.0" ?>',
) -> str:  # fmt: skip
    checksum = range_checksum or hashlib.sha256(DATA).hexdigest()
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
        f'        <Range chksum="{checksum}"> {first_range} </Range>\n'
        "    </BlockMap>\n"
        "</bmap>\n"
    )


def sealed(**fields: str) -> str:
    return seal(bmap_text(**fields), "sha256", "BmapFileChecksum")


def write(folder: Path, content: str | bytes) -> Path:
    path = folder / "image.bmap"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_the_hand_written_bmap_is_read_as_written(tmp_path):
    bmap = parse_bmap(write(tmp_path, sealed()))
    assert (bmap.image_size, bmap.block_size, bmap.blocks_count) == (8192, 4096, 2)
    assert [(r.first, r.last) for r in bmap.ranges] == [(0, 0)]
    assert bmap.ranges[0].checksum == hashlib.sha256(DATA).hexdigest()


HUGE = "9" * 5000  # beyond Python's 4300-digit int() limit

REFUSED = {
    # The file checksum in another script: .encode("ascii") used to raise.
    "non-ASCII file checksum": bmap_text().replace("0" * 64, "\u00e9" * 64),
    # An encoding expat does not know: LookupError used to escape.
    "unknown XML encoding": sealed(declaration='<?xml version="1.0" encoding="x-evbench"?>'),
    # A multi-byte encoding declared (expat refused it already before; kept as a case).
    "UTF-16 declared in an ASCII file": sealed(
        declaration='<?xml version="1.0" encoding="utf-16"?>'
    ),
    # Superscript two passes str.isdigit() but not int().
    "superscript digit size": sealed(image_size="\u00b2"),
    # Arabic-Indic digits: int() reads them, bmaptool never writes them.
    "Arabic-Indic digit size": sealed(image_size="\u0668\u0661\u0669\u0662"),
    "Arabic-Indic digit range": sealed(first_range="\u0660"),
    "4300+ digit image size": sealed(image_size=HUGE),
    "4300+ digit range": sealed(first_range=HUGE),
    "4300+ digit range end": sealed(first_range=f"0-{HUGE}"),
    "4300+ digit version": sealed(version=f"{HUGE}.0"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_hostile_bmaps_are_refused_with_a_clear_error(tmp_path, case):
    with pytest.raises(UserError) as refused:
        parse_bmap(write(tmp_path, REFUSED[case]))
    message = str(refused.value)
    assert message.startswith("bmap ") or "is not a bmap file" in message
    assert len(message) < 400, "the error must not echo thousands of characters"


def test_the_command_line_exits_2_naming_the_problem(tmp_path, capsys):
    image = tmp_path / "image.img"
    image.write_bytes(DATA + bytes(4096))
    bmap = write(tmp_path, REFUSED["4300+ digit image size"])
    code = evbench(["flash", str(image), "--bmap", str(bmap), "--device", str(tmp_path / "out")])
    _, err = capsys.readouterr()
    assert code == 2, err
    assert "<ImageSize> has 5000 digits" in err and "internal error" not in err
    assert not (tmp_path / "out").exists()


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
