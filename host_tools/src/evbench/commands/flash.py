"""evbench flash: write an image to an SD card (or file), or to a board's eMMC over SSH.

Only argparse, pathlib and the board options at import time: `evbench flash` starts as fast as
bmaptool, and the flash package (and the boards for --board) load when it runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evbench.commands._board_options import add_board_options

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
    parser.add_argument(
        "--allow-fixed",
        action="store_true",
        help="allow a non-removable disk (here, or with --board local)",
    )
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    add_board_options(
        parser, help="flash this board's device over its transport (ssh://...)", lab=False
    )
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


def _say(line: str) -> None:
    print(line, flush=True)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `evbench --help` and other commands never pay for them.
    from evbench.flash.plan import plan_flash
    from evbench_core.errors import ExitCode, UserError

    if args.board is None and (args.bootloader or args.reboot or args.boot_partition):
        raise UserError("--bootloader, --boot-partition and --reboot need --board")
    plan = plan_flash(args.image, args.bmap, use_bmap=not args.no_bmap)
    if args.board is not None:
        from evbench.flash.emmc import flash_board

        flash_board(
            args.board,
            plan,
            args.device,
            bootloader=args.bootloader,
            boot_partition=args.boot_partition,
            assume_yes=args.yes,
            allow_fixed=args.allow_fixed,
            reboot_after=args.reboot,
            accept_new_host_key=args.accept_new_host_key,
            announce=_say,
        )
        return ExitCode.OK
    from evbench.flash.local import flash_local

    report = flash_local(plan, Path(args.device), args.allow_fixed, args.yes, _say)
    _say(report.summary())
    return ExitCode.OK
