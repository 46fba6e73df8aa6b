"""evbench flash: write an image to an SD card (or file), or to a board's eMMC over SSH."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from evbench.board_options import add_board_options
from evbench.flash import target as targets
from evbench.flash.bmap import Bmap, find_bmap, parse_bmap
from evbench.flash.progress import FlashProgress
from evbench.flash.source import ImageSource
from evbench.flash.writer import FileSink, write_image
from evbench_agent.errors import UserError

NAME = "flash"
HELP = "write an image (plain, xz, gz, bz2, zstd; bmap-aware) to a card, a file or a board's eMMC"


def setup_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("image", type=Path, help="the image, e.g. core-image.wic.xz")
    parser.add_argument(
        "--device",
        required=True,
        help="the target: /dev/sdX, a regular file, or (with --board) "
        "the board's device such as /dev/mmcblk0",
    )
    maps = parser.add_mutually_exclusive_group()
    maps.add_argument("--bmap", type=Path, help="the bmap file (default: found beside the image)")
    maps.add_argument("--no-bmap", action="store_true", help="write the whole image, ignore a bmap")
    parser.add_argument("--allow-fixed", action="store_true", help="allow a non-removable disk")
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    add_board_options(parser, help="flash this board's device over its transport (ssh://...)")
    parser.add_argument(
        "--bootloader",
        type=Path,
        metavar="DIR",
        help="with --board: write tiboot3.bin, tispl.bin, u-boot.img to the eMMC boot partition",
    )
    parser.add_argument(
        "--boot-partition", help="with --bootloader: the boot partition (default: DEVICEboot0)"
    )
    parser.add_argument("--reboot", action="store_true", help="with --board: reboot when done")


def load_bmap(args: argparse.Namespace) -> Bmap | None:
    if args.no_bmap:
        return None
    path = args.bmap or find_bmap(args.image)
    if args.bmap is not None and not args.bmap.is_file():
        raise UserError(f"the bmap {args.bmap} does not exist", hint="or flash with --no-bmap")
    return parse_bmap(path) if path is not None else None


def open_source(args: argparse.Namespace, bmap: Bmap | None) -> ImageSource:
    """The image stream, refused before writing when its plain size disagrees with the bmap."""
    if not args.image.is_file():
        raise UserError(f"the image {args.image} does not exist or is not a file")
    source = ImageSource(args.image, bmap.image_size if bmap else None)
    plain = source.plain_size
    if bmap is not None and plain is not None and plain != bmap.image_size:
        raise UserError(
            f"the image {args.image} is {plain} bytes, its bmap {bmap.path} says "
            f"{bmap.image_size}; nothing was written",
            hint="the bmap belongs to another image: give the right one with --bmap",
        )
    return source


def describe_plan(args: argparse.Namespace, source: ImageSource, bmap: Bmap | None) -> str:
    if bmap is None:
        return f"{args.image} ({source.compression}, whole image, no bmap)"
    return (
        f"{args.image} ({source.compression}, bmap {bmap.version}: "
        f"{bmap.mapped_bytes / 2**20:.1f} MiB mapped of {bmap.image_size / 2**20:.1f} MiB)"
    )


def run(args: argparse.Namespace) -> int:
    if args.board is not None:
        from evbench.flash.emmc import flash_board

        return flash_board(args)
    if args.bootloader or args.reboot or args.boot_partition:
        raise UserError("--bootloader, --boot-partition and --reboot need --board")
    bmap = load_bmap(args)
    source = open_source(args, bmap)
    target = targets.inspect_target(Path(args.device), args.allow_fixed)
    image_size = bmap.image_size if bmap else source.plain_size
    if image_size is not None:
        targets.check_fits(target, image_size)
    plan = describe_plan(args, source, bmap)
    targets.confirm(target, plan, args.yes)
    fd = targets.open_for_writing(target)
    try:
        if not target.is_block_device and image_size and os.fstat(fd).st_size < image_size:
            os.ftruncate(fd, image_size)  # a file target gets the image's size, holes stay holes
        print(f"flashing {plan} to {target.describe()}", flush=True)
        total = bmap.mapped_bytes if bmap else image_size
        sink = FileSink(fd)
        try:
            with source, FlashProgress(total, "flash") as progress:
                report = write_image(source, sink, bmap, progress)
        finally:
            sink.close()
    finally:
        os.close(fd)
    print(report.summary(), flush=True)
    return 0
