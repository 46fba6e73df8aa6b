"""evbench report: write report.md, report.html, summary.csv, comparison.csv and junit.xml
into a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evbench_core.errors import ExitCode, UserError

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
    from evbench.report.context import load_context
    from evbench.report.headline import partial_headline
    from evbench_core import results

    run = results.load_run(run_dir)
    # What the written report checks too: missing files, checksums, the run's status.
    context = load_context(run_dir)
    print_tables(run, argparse.Namespace(baseline_codec="json", candidate_codec="protobuf"))
    if run.complete and not context.partial:
        return ExitCode.OK
    print(partial_headline(context.manifest, context.missing, context.problems), file=sys.stderr)
    return ExitCode.PARTIAL


def _refuse_what_is_not_a_run(run_dir: Path) -> None:
    """Before anything is written: a run directory has its manifest.json (every run
    writes it before it measures) or, a run that lost it, at least one sample set evbench
    can read. A folder with neither is not a run, whatever else it holds (an empty or
    foreign samples.jsonl got five report files written beside it)."""
    from evbench_core import results

    if not run_dir.is_dir():
        return  # the report's own reading says what is wrong, as before
    if (run_dir / results.MANIFEST).is_file():
        return
    if not (run_dir / results.SAMPLES).is_file():
        return  # "holds no evbench results", from the report's own reading, writing nothing
    if next(iter(results.read_samples(run_dir, errors="skip")), None) is None:
        raise UserError(
            f"{run_dir} is not a run directory: no {results.MANIFEST}, and its "
            f"{results.SAMPLES} holds no sample set evbench wrote; nothing was written there",
            hint="give a directory written by evbench run or evbench-agent run",
        )


def run(args: argparse.Namespace) -> int:
    _refuse_what_is_not_a_run(args.run_dir)
    if args.terminal:
        return _terminal(args.run_dir)
    from evbench.report.writer import write_report  # matplotlib: only when a report is drawn

    written = write_report(args.run_dir)
    for path in written.files:
        print(path)
    context = written.context
    if context.partial:
        missing = [f"missing {', '.join(context.missing)}"] if context.missing else []
        what = "; ".join(missing + context.problems) or "status not complete"
        print(written.headline, file=sys.stderr)
        print(f"PARTIAL run rendered ({what})", file=sys.stderr)
        return ExitCode.PARTIAL
    return ExitCode.OK
