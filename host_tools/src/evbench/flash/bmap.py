"""The bmap file: which blocks of an image hold data, and their checksums.

Reads the formats bmaptool writes: 1.0-1.2 (no checksums), 1.3 (SHA-1,
`sha1` attributes, `BmapFileSHA1`), 1.4 and 2.x (`ChecksumType`, `chksum`
attributes, `BmapFileChecksum`). Everything is validated before a byte is
written: the file's own checksum, the block counts, and every range.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from evbench_core.errors import CheckFailed, UserError

#: A bmap for a multi-terabyte image is a few MiB; anything larger is not a bmap.
MAX_BMAP_BYTES = 64 * 1024 * 1024
SUPPORTED_MAJOR = 2
CHECKSUM_TYPES = ("sha256", "sha1")
_HEX = re.compile(r"[0-9a-f]+")
#: ASCII digits only: str.isdigit and \\d accept other scripts' digits, which int() may refuse.
_NUMBER = re.compile(r"[0-9]+")
_RANGE = re.compile(r"([0-9]+)(?:\s*-\s*([0-9]+))?")
_VERSION = re.compile(r"([0-9]{1,6})\.([0-9]{1,6})")
#: A block count or byte size this long is no real image (2**64 has 20 digits); it also
#: keeps int() far from Python's 4300-digit conversion limit.
MAX_DIGITS = 24


@dataclass(frozen=True)
class BlockRange:
    """Blocks `first`..`last` (inclusive) and the checksum of their bytes, if the bmap has one."""

    first: int
    last: int
    checksum: str | None = None

    @property
    def blocks(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True)
class Bmap:
    version: str
    image_size: int
    block_size: int
    blocks_count: int
    mapped_blocks: int
    checksum_type: str | None
    ranges: tuple[BlockRange, ...]
    path: Path | None = None

    def byte_span(self, block_range: BlockRange) -> tuple[int, int]:
        """The byte offset and length of a range (the last block may end with the image)."""
        start = block_range.first * self.block_size
        end = min((block_range.last + 1) * self.block_size, self.image_size)
        return start, end - start

    @property
    def mapped_bytes(self) -> int:
        return sum(self.byte_span(r)[1] for r in self.ranges)


def whole_image_map(image_size: int, block_size: int = 4096) -> Bmap:
    """A map of every block, for an image without a bmap (written whole)."""
    blocks = -(-image_size // block_size)
    ranges = (BlockRange(0, blocks - 1),) if blocks else ()
    return Bmap("none", image_size, block_size, blocks, blocks, None, ranges)


def _text(root: ElementTree.Element, tag: str, path: Path) -> str:
    element = root.find(tag)
    if element is None or element.text is None or not element.text.strip():
        raise UserError(f"bmap {path}: the <{tag}> element is missing or empty")
    return element.text.strip()


def _shown(text: str) -> str:
    """`text` for an error message: quoted, and cut when it is long."""
    return repr(text) if len(text) <= 60 else f"{text[:40]!r}... ({len(text)} characters)"


def _whole_number(text: str, what: str, path: Path) -> int:
    if not _NUMBER.fullmatch(text):
        raise UserError(f"bmap {path}: {what} is {_shown(text)}, not a whole number")
    if len(text) > MAX_DIGITS:
        raise UserError(f"bmap {path}: {what} has {len(text)} digits; no image is that large")
    return int(text)


def _number(root: ElementTree.Element, tag: str, path: Path) -> int:
    return _whole_number(_text(root, tag, path), f"<{tag}>", path)


def _checksum_names(major: int, minor: int) -> tuple[str, str, str] | None:
    """(checksum type, range attribute, file checksum element) for a format version;
    None for the versions without checksums."""
    if major >= 2 or (major, minor) == (1, 4):
        return "", "chksum", "BmapFileChecksum"  # the type is in <ChecksumType>
    if minor >= 3:
        return "sha1", "sha1", "BmapFileSHA1"
    return None


def _checked_checksums(
    root: ElementTree.Element, raw: bytes, major: int, minor: int, path: Path
) -> tuple[str | None, str | None]:
    """(checksum type, range attribute) once the file's own checksum is verified;
    (None, None) for the versions without checksums."""
    names = _checksum_names(major, minor)
    if names is None:
        return None, None
    kind, attribute, file_checksum_tag = names
    if kind == "":
        kind = _text(root, "ChecksumType", path).lower()
    if kind not in CHECKSUM_TYPES:
        raise UserError(f"bmap {path}: checksum type {_shown(kind)} is not one of {CHECKSUM_TYPES}")
    _verify_file_checksum(raw, _text(root, file_checksum_tag, path), kind, path)
    return kind, attribute


def _verify_file_checksum(raw: bytes, stored: str, kind: str, path: Path) -> None:
    # The checksum is taken over the file with its own value replaced by ASCII zeros.
    if len(stored) != len(hashlib.new(kind).hexdigest()) or not _HEX.fullmatch(stored.lower()):
        raise UserError(f"bmap {path}: the file checksum {_shown(stored)} is not a {kind} digest")
    position = raw.find(stored.encode("ascii"))
    if position < 0:  # written with an encoding that is not ASCII-compatible
        raise UserError(f"bmap {path}: its checksum is not stored as ASCII text")
    zeroed = raw[:position] + b"0" * len(stored) + raw[position + len(stored) :]
    calculated = hashlib.new(kind, zeroed).hexdigest()
    if calculated != stored.lower():
        raise CheckFailed(
            f"bmap {path}: its own {kind} checksum does not match "
            f"(calculated {calculated}, the file says {stored}); nothing was written",
            hint="the bmap file is damaged or was edited: fetch it again with the image",
        )


def _parse_range(element: ElementTree.Element, attribute: str | None, path: Path) -> BlockRange:
    text = (element.text or "").strip()
    match = _RANGE.fullmatch(text)
    if not match:
        raise UserError(f"bmap {path}: range {_shown(text)} is not 'N' or 'FIRST-LAST'")
    first = _whole_number(match.group(1), "a range", path)
    last = _whole_number(match.group(2), "a range", path) if match.group(2) else first
    checksum = element.get(attribute) if attribute else None
    return BlockRange(first, last, checksum.strip().lower() if checksum else None)


def _validate_ranges(bmap: Bmap, path: Path) -> None:
    digest_length = len(hashlib.new(bmap.checksum_type).hexdigest()) if bmap.checksum_type else 0
    previous_last = -1
    for block_range in bmap.ranges:
        where = f"bmap {path}: range {block_range.first}-{block_range.last}"
        if block_range.last < block_range.first:
            raise UserError(f"{where} ends before it starts")
        if block_range.first <= previous_last:
            raise UserError(f"{where} overlaps or precedes the range before it")
        if block_range.last >= bmap.blocks_count:
            raise UserError(
                f"{where} lies beyond the image ({bmap.blocks_count} blocks of "
                f"{bmap.block_size} bytes)",
                hint="the bmap does not belong to this image",
            )
        checksum = block_range.checksum
        if checksum is not None and (
            len(checksum) != digest_length or not _HEX.fullmatch(checksum)
        ):
            raise UserError(f"{where}: {_shown(checksum)} is not a {bmap.checksum_type} checksum")
        previous_last = block_range.last
    mapped = sum(r.blocks for r in bmap.ranges)
    if mapped != bmap.mapped_blocks:
        raise UserError(
            f"bmap {path}: the ranges cover {mapped} blocks, <MappedBlocksCount> says "
            f"{bmap.mapped_blocks}"
        )


def parse_bmap(path: Path) -> Bmap:
    """Read and validate a bmap file; raise UserError, or CheckFailed for a bad checksum."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_BMAP_BYTES + 1)
    except OSError as error:
        raise UserError(f"cannot read the bmap {path}: {error.strerror}") from error
    if len(raw) > MAX_BMAP_BYTES:
        raise UserError(f"{path} is larger than {MAX_BMAP_BYTES} bytes: not a bmap file")
    try:
        root = ElementTree.fromstring(raw)
    except (ElementTree.ParseError, LookupError, ValueError, RecursionError) as error:
        # LookupError and ValueError: an XML declaration naming an unknown or multi-byte
        # encoding; expat reports everything else as ParseError.
        raise UserError(f"bmap {path} is not valid XML: {error}") from error
    version = root.get("version", "")
    match = _VERSION.fullmatch(version)
    if root.tag != "bmap" or not match:
        raise UserError(f"{path} is not a bmap file (no <bmap version='N.M'> root)")
    major, minor = int(match.group(1)), int(match.group(2))
    if major > SUPPORTED_MAJOR or major < 1:
        raise UserError(
            f"bmap {path} has format version {version}; this evbench reads 1.x and 2.x",
            hint="update evbench, or make the bmap with an older bmaptool",
        )
    kind, attribute = _checked_checksums(root, raw, major, minor, path)
    block_map = root.find("BlockMap")
    if block_map is None:
        raise UserError(f"bmap {path}: the <BlockMap> element is missing")
    bmap = Bmap(
        version=version,
        image_size=_number(root, "ImageSize", path),
        block_size=_number(root, "BlockSize", path),
        blocks_count=_number(root, "BlocksCount", path),
        mapped_blocks=_number(root, "MappedBlocksCount", path),
        checksum_type=kind,
        ranges=tuple(_parse_range(e, attribute, path) for e in block_map.findall("Range")),
        path=path,
    )
    if bmap.block_size == 0 or bmap.blocks_count != -(-bmap.image_size // bmap.block_size):
        raise UserError(
            f"bmap {path}: {bmap.image_size} bytes is not {bmap.blocks_count} blocks of "
            f"{bmap.block_size} bytes"
        )
    _validate_ranges(bmap, path)
    return bmap
