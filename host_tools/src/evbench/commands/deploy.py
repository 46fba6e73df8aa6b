"""evbench deploy: install or update the agent on a board (no pip, no network there)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from evbench.boards import RemoteBoard
from evbench.commands._board_options import add_board_options, open_board_from
from evbench.usecases import deploy
from evbench_core.errors import ExitCode, UserError

NAME = "deploy"
HELP = "install or update the agent on a board"


def setup_parser(parser: argparse.ArgumentParser) -> None:
    add_board_options(parser, required=True)
    parser.add_argument(
        "--force", action="store_true", help="install even over an up-to-date or image agent"
    )
    parser.add_argument(
        "--native",
        type=Path,
        metavar="DIR",
        help="also copy the native codec harnesses built in DIR for the board, and its "
        "C link responder (docs/native-codecs.md)",
    )


def run(args: argparse.Namespace) -> int:
    with (
        open_board_from(args) as board,
        tempfile.TemporaryDirectory(prefix="evbench-deploy-") as staging,
    ):
        if not isinstance(board, RemoteBoard):  # the local board
            raise UserError(
                "the local board runs the agent installed beside evbench: nothing to deploy",
                hint="deploy to a board address such as ssh://root@board",
            )
        install = deploy.ensure_agent(board, Path(staging), force=args.force)
        if args.native is not None:
            from evbench.usecases import deploy_native

            names = deploy_native.deploy_harnesses(board, args.native)
            print(f"native executables: {', '.join(names)}", file=sys.stderr)
    where = "in the image" if install.source == "image" else " ".join(install.command)
    print(
        f"agent {install.version} (results format {install.results_format}) {where}: "
        f"{install.action}",
        file=sys.stderr,
    )
    return ExitCode.OK
