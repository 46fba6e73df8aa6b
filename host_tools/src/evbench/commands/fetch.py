"""evbench fetch: collect a run from a board by its id, verified against its SHA256SUMS."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from evbench.boards import RemoteBoard
from evbench.commands._board_options import add_board_options, open_board_from
from evbench.usecases import deploy, remote_run
from evbench_core import results
from evbench_core.errors import ExitCode, UserError
from evbench_core.run_ids import check_run_id

NAME = "fetch"
HELP = "collect a run from a board by its id (waits for it to end)"


def setup_parser(parser: argparse.ArgumentParser) -> None:
    add_board_options(parser, required=True)
    parser.add_argument("run_id", help="the run id `evbench run` printed")
    parser.add_argument("--out", type=Path, help="where to put it (default: results/RUN_ID)")


def _prepare(out: Path, run_id: str) -> None:
    """A new or empty directory, or the same run fetched in part before (resumed)."""
    manifest = out / results.MANIFEST
    if manifest.is_file() and results.read_document(manifest).get("run_id") == run_id:
        return
    # Copies cut off before they were verified are not results: start them again.
    for part in out.glob(".*.part") if out.is_dir() else ():
        part.unlink()
    results.prepare_output(out)


def run(args: argparse.Namespace) -> int:
    check_run_id(args.run_id)  # before the board is asked
    out = (args.out or Path("results") / args.run_id).resolve()
    with open_board_from(args) as board:
        if not isinstance(board, RemoteBoard):  # the local board
            raise UserError("local runs are written straight to their --out: nothing to fetch")
        with tempfile.TemporaryDirectory(prefix="evbench-deploy-") as staging:
            install = deploy.ensure_agent(board, Path(staging))
        session = remote_run.RemoteRun(board, install.command, args.run_id)
        current = session.status()
        if current["state"] == "absent":
            raise UserError(
                f"there is no run {args.run_id} on {args.board}",
                hint="check the id: `evbench run` prints it when it starts",
            )
        _prepare(out, args.run_id)
        if current["state"] == "running":
            print(f"evbench: run {args.run_id} is still running; waiting", file=sys.stderr)
            current = session.follow(lambda line: None)
        current = session.settle(current)
        session.fetch(out, current)
    if (out / results.COMPLETE).exists():
        print(f"results: {out}", file=sys.stderr)
        return ExitCode.OK
    manifest = out / results.MANIFEST
    said = results.read_document(manifest).get("reason") if manifest.exists() else None
    reason = said or "not complete"
    print(f"PARTIAL run ({reason}): partial results in {out}", file=sys.stderr)
    return ExitCode.PARTIAL
