"""What a flash will write: the bmap, the image stream, and a one-line description of both.

Plain arguments only (no argparse): the local and the board flash both plan the
same way, and everything here is refused before a byte is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evbench.flash.bmap import Bmap, parse_bmap
from evbench.flash.source import COMPRESSED_SUFFIXES, ImageSource
from evbench.flash.target import Target, check_fits
from evbench_core.errors import UserError


def find_bmap(image: Path) -> Path | None:
    """The bmap beside an image, as Yocto names it: x.wic.xz -> x.wic.bmap (or x.wic.xz.bmap)."""
    stem = image.name
    for suffix in COMPRESSED_SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    for name in (f"{stem}.bmap", f"{image.name}.bmap"):
        candidate = image.with_name(name)
        if candidate.is_file():
            return candidate
    return None


def load_bmap(image: Path, bmap_path: Path | None = None, use_bmap: bool = True) -> Bmap | None:
    """The bmap given, or the one found beside the image; None without one (or not wanted)."""
    if not use_bmap:
        return None
    if bmap_path is not None and not bmap_path.is_file():
        raise UserError(
            f"the bmap {bmap_path} does not exist or is not a file", hint="or flash with --no-bmap"
        )
    path = bmap_path or find_bmap(image)
    return parse_bmap(path) if path is not None else None


def open_source(image: Path, bmap: Bmap | None) -> ImageSource:
    """The image stream, refused before writing when its plain size disagrees with the bmap."""
    if not image.is_file():
        raise UserError(f"the image {image} does not exist or is not a file")
    source = ImageSource(image, bmap.image_size if bmap else None)
    plain = source.plain_size
    if bmap is not None and plain is not None and plain != bmap.image_size:
        raise UserError(
            f"the image {image} is {plain} bytes, its bmap {bmap.path} says "
            f"{bmap.image_size}; nothing was written",
            hint="the bmap belongs to another image: give the right one with --bmap",
        )
    return source


def describe_plan(image: Path, source: ImageSource, bmap: Bmap | None) -> str:
    if bmap is None:
        return f"{image} ({source.compression}, whole image, no bmap)"
    return (
        f"{image} ({source.compression}, bmap {bmap.version}: "
        f"{bmap.mapped_bytes / 2**20:.1f} MiB mapped of {bmap.image_size / 2**20:.1f} MiB)"
    )


@dataclass(frozen=True)
class FlashPlan:
    """An image, its stream and its bmap, checked against each other."""

    image: Path
    source: ImageSource
    bmap: Bmap | None

    @property
    def image_size(self) -> int | None:
        """The plain image's size, when the bmap or the stream knows it ahead."""
        return self.bmap.image_size if self.bmap else self.source.plain_size

    def declared_size(self) -> int | None:
        """The plain image's size as known before writing: the bmap's, the plain file's,
        or what the compressed format declares (xz's index, zstd's frame headers); None
        for gzip and bzip2, which declare none."""
        return self.image_size if self.image_size is not None else self.source.declared_size()

    def check_fits(
        self, target: Target, announce: Callable[[str], None], where: str = ""
    ) -> int | None:
        """Refuse a target smaller than the image before anything is written, and return
        the size checked; when the format declares none, say so and return None."""
        size = self.declared_size()
        if size is not None:
            check_fits(target, size, where)
        elif target.size is not None:
            announce(
                f"{self.image} ({self.source.compression}) declares no plain size ahead: "
                f"whether it fits {target.describe()}{where} is known only as it is written"
            )
        return size

    @property
    def bytes_to_write(self) -> int | None:
        return self.bmap.mapped_bytes if self.bmap else self.image_size

    def describe(self) -> str:
        return describe_plan(self.image, self.source, self.bmap)


def plan_flash(image: Path, bmap_path: Path | None = None, use_bmap: bool = True) -> FlashPlan:
    """The plan for writing `image`, or UserError/CheckFailed before anything is written."""
    bmap = load_bmap(image, bmap_path, use_bmap)
    return FlashPlan(image, open_source(image, bmap), bmap)
