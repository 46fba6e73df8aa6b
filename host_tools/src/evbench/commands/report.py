"""evbench report: write report.md, report.html, summary.csv, comparison.csv and junit.xml
into a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evbench_agent.errors import ExitCode

NAME = "report"
HELP = "render a run directory: report.md, self-contained report.html, CSV and JUnit"


def setup_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run directory")
    parser.add_argument(
        "--terminal",
        action="store_true",
        help="print the run's full tables here (answer, comparison, medians per codec, bus "
        "budget) instead of writing the report files",
    )


def _terminal(run_dir: Path) -> int:
    """What `evbench run --details` prints, for a run measured earlier."""
    from evbench.commands.run import print_tables
    from evbench_agent import results

    run = results.load_run(run_dir)
    print_tables(run, argparse.Namespace(baseline_codec="json", candidate_codec="protobuf"))
    return ExitCode.OK if run.complete else ExitCode.PARTIAL


def run(args: argparse.Namespace) -> int:
    if args.terminal:
        return _terminal(args.run_dir)
    from evbench.report.writer import write_report  # matplotlib: only when a report is drawn

    written = write_report(args.run_dir)
    for path in written.files:
        print(path)
    context = written.context
    if context.partial:
        what = ", ".join(context.missing + context.problems) or "status not complete"
        print(written.headline, file=sys.stderr)
        print(f"PARTIAL run rendered ({what})", file=sys.stderr)
        return ExitCode.PARTIAL
    return ExitCode.OK
