"""evbench compare: runs side by side, the change of each measurement and its verdict.

One row per codec and record identity; each later run is tested against the
first on the suites' replicates (evbench.report.compare, docs/method.md). Two
runs cannot tell a change from night-to-night noise: a tested row whose verdict
names a side is "not confirmed: 2 nights", unless the board's history (--history,
else EVBENCH_HISTORY, else the default store, when it holds that board) confirms
it against the spread of that row's nights (evbench.history.night_spread).
With --baseline RUN the exit code is 3 when a tested row changed beyond
--max-change (50 % by default, either way), or the history confirms a change
worse than its threshold, or a fact (size) grew beyond its threshold, naming
it; 2 when no tested row can be compared at all, with why.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evbench.commands import _outputs
from evbench.report import table, terminal
from evbench_core.errors import CheckFailed, ExitCode, UserError

if TYPE_CHECKING:
    from evbench.report import compare
    from evbench.report.context import RunContext

NAME = "compare"
#: The columns that name a row of compare's tables (suite, profile, codec, metric): each
#: column group of a table too wide for the terminal repeats them (table.format_rows).
KEYS = 4
HELP = "compare runs (boards, platforms, nights); --baseline fails on regressions"


def setup_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="*", type=Path, metavar="RUN_DIR", help="run directories")
    parser.add_argument("--baseline", type=Path, metavar="RUN_DIR", help="the reference run")
    parser.add_argument(
        "--criteria", type=Path, metavar="FILE", help="JSON thresholds per metric (default 5%%)"
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--csv", type=Path, metavar="FILE", help="write the table as CSV here")
    parser.add_argument(
        "--max-change",
        type=float,
        default=50.0,
        metavar="PERCENT",
        help="fail (exit 3) on a tested row that changed more than this, either way "
        "(default 50%%): two runs alone confirm nothing smaller",
    )
    parser.add_argument(
        "--history",
        metavar="URL",
        help="confirm changes against this board's nights in this results history "
        "(default: EVBENCH_HISTORY, else $XDG_DATA_HOME/evbench/history.sqlite, when it "
        "holds the board); read only",
    )
    parser.add_argument(
        "--no-history", action="store_true", help="compare the runs alone, without history"
    )


def _fitted(text: str, columns: int | None, indent: str = "") -> str:
    """`text` wrapped to a terminal of `columns` (at most terminal.MAX_PROSE); as it is
    when the output is not a terminal (None), as before."""
    if columns is None:
        return text
    return "\n".join(terminal.wrap(text, terminal.prose(columns), indent))


def _verdict_lines(contexts: list[Any], names: list[str], columns: int = 120) -> list[str]:
    """Each run's one-line verdicts (report.verdict_line), named by the run, within the
    line's width and `columns`: the answer of each run before how the runs differ."""
    from evbench.report import sections, verdict_line

    lines = []
    for name, context in zip(names, contexts, strict=True):
        found = sections.compare_context(context)
        if found is not None:
            width = min(verdict_line.WIDTH, columns) - len(name) - 2
            lines += [f"{name}: {line}" for line in verdict_line.lines(found, width=width)]
    return lines


def run(args: argparse.Namespace) -> int:
    # Imported here: the report package loads matplotlib, which `evbench --help` needs not.
    from evbench.report import compare, exports

    contexts, result, said_history = _compared(args)
    width = terminal.width()  # 120 when not a terminal
    tables = terminal.table_width()  # split into column groups on a terminal; whole if piped
    _print_runs(contexts, result.labels, width, tables)
    print()
    headers, body = compare.cells(result)
    print(table.format_rows(headers, body, width=tables, keys=KEYS))
    print(_fitted(compare.NOTES, tables))
    context_headers, context_body = compare.context_cells(result)
    if context_body:
        print()
        print(table.format_rows(context_headers, context_body, width=tables, keys=KEYS))
    _print_notes(result, tables, said_history, args.max_change)
    if not result.tested:
        why = "no tested row can be compared between these runs"
        if result.left_out:
            why += f" ({len(result.left_out)} rows not comparable, listed above)"
        raise UserError(why, hint="compare runs of the same codecs, payloads and settings")
    files = {}  # both made before either is written
    if args.csv:
        files["--csv"] = (args.csv, exports.table_csv(headers, body).encode())
    if args.junit:
        files["--junit"] = (args.junit, _junit(result, contexts[-1].records, contexts[-1].run_id))
    for option, (path, data) in files.items():
        _outputs.write_file(path, data, option, runs_read=[c.directory for c in contexts])
    if result.regressions:
        raise _failed(result)
    if any(c.partial for c in contexts):
        print("some runs are partial: their figures may be incomplete", file=sys.stderr)
    return ExitCode.OK


def _compared(
    args: argparse.Namespace,
) -> tuple[list[RunContext], compare.Comparison, str]:
    """The runs (the baseline first), their comparison, and the line saying which history
    confirmed its changes; a UserError for fewer than two runs or a bad --max-change."""
    from evbench.report import compare, criteria
    from evbench.report.context import load_context

    directories = ([args.baseline] if args.baseline else []) + list(args.runs)
    if len(directories) < 2:
        raise UserError("compare needs two runs or more", hint="evbench compare RUN_A RUN_B")
    limits = criteria.load(args.criteria) if args.criteria else criteria.Criteria()
    contexts = [load_context(directory) for directory in directories]
    if not args.max_change > 0:
        raise UserError("--max-change must be a positive percentage", hint="--max-change 50")
    with contextlib.ExitStack() as stack:
        nights, said_history = _history(args, contexts, stack)
        result = compare.compare(
            contexts,
            limits,
            baseline=args.baseline is not None,
            max_change=args.max_change,
            nights=nights,
        )
    return contexts, result, said_history


def _print_runs(
    contexts: list[RunContext], names: list[str], width: int, tables: int | None
) -> None:
    """Each run's verdict in one line per profile first, then which run is which, then
    the seed pair's table per run when every run measured the pair."""
    from evbench.report import compare
    from evbench_core.comparison import SEED_PAIR

    verdicts = _verdict_lines(contexts, names, width)
    if verdicts:
        print("\n".join(verdicts), end="\n\n")
    for name, context in zip(names, contexts, strict=True):
        flag = " (PARTIAL)" if context.partial else ""
        said = f"{name}: {context.directory} run {context.run_id}{flag}"
        print("\n".join(terminal.wrap(said, width, indent="  ")))
    if all(set(SEED_PAIR) <= set(c.codecs()) for c in contexts):
        print()
        print(table.format_rows(*compare.codec_cells(contexts, names, SEED_PAIR), width=tables))


def _print_notes(
    result: compare.Comparison, tables: int | None, said_history: str, max_change: float
) -> None:
    """What the tables do not say: worse rows too small to call, each later run's
    environment changes, the rows not in every run, the history used, and what two runs
    alone cannot confirm."""
    from evbench.report import compare

    names = result.labels
    uncalled = result.uncalled()
    if uncalled:
        said = "worse than the threshold but not called (n too small, so no regression): "
        print("\n" + _fitted(said + "; ".join(uncalled), tables, "  "))
    for label, moved in zip(names[1:], result.environment, strict=True):
        if moved:
            said = f"environment changed, {names[0]} -> {label} (not tested, may explain a row):"
            print("\n" + _fitted(said, tables, "  "))
            print("\n".join(_fitted(f"  {line}", tables, "  ") for line in moved))
    if result.left_out:
        print(f"\nnot comparable ({len(result.left_out)} rows, each not in every run):")
        print("\n".join(_fitted(f"  {line}", tables, "  ") for line in result.left_out))
    print("\n" + _fitted(said_history, tables, "  "))
    if any(c.status == compare.TWO_NIGHTS for row in result.rows for c in row.changes):
        two = (
            f"{compare.TWO_NIGHTS}: two runs cannot tell a change from night-to-night "
            "noise (processes of one run share its night); evbench history check confirms "
            f"changes over nights; only a change beyond --max-change {max_change:g}% "
            "fails here"
        )
        print("\n" + _fitted(two, tables))


def _failed(result: compare.Comparison) -> CheckFailed:
    """Exit 3, naming each failing metric: the regressions, then the gains beyond
    --max-change (a change this large fails either way, but one in the metric's better
    direction, faster, smaller or more messages a second, is no regression), then each
    later run's environment changes."""
    parts: list[str] = []
    if result.worse:
        parts.append(f"{len(result.worse)} metric(s) regressed: " + "; ".join(result.worse))
    if result.gains_beyond:
        parts.append(
            f"{len(result.gains_beyond)} metric(s) improved beyond --max-change (a change this "
            "large fails either way: check the runs measured the same thing): "
            + "; ".join(result.gains_beyond)
        )
    moves = zip(result.labels[1:], result.environment, strict=True)
    environment = "".join(
        f"; environment changed in {label}: " + ", ".join(moved) for label, moved in moves if moved
    )
    return CheckFailed(
        "; ".join(parts) + environment,
        hint="see the table above; thresholds come from --criteria (default 5%)",
    )


def _history(
    args: argparse.Namespace, contexts: list[RunContext], stack: contextlib.ExitStack
) -> tuple[compare.NightTest | None, str]:
    """The board's history to confirm changes against, and a line saying what was used."""
    from evbench.history import default_url, open_store
    from evbench.history.indexing import board_identity
    from evbench.history.night_spread import MIN_NIGHTS, BoardHistory

    if args.no_history:
        return None, "history: not used (--no-history)"
    boards = {board_identity(context.manifest)[0] for context in contexts}
    if len(boards) > 1:
        return None, "history: not used: the runs are of different boards"
    board = boards.pop()
    url = default_url(args.history)
    store = stack.enter_context(open_store(url, read_only=True))
    if board not in store.boards():
        return None, f"history: {url.display} holds no nights of board {board}"
    history = BoardHistory(store, board, [context.run_id for context in contexts])
    return history.test, (
        f"history: {url.display}, board {board}: each change is tested against the spread "
        "of that row's consecutive nights there (the compared runs aside; Student's t on "
        f"log ratios, Holm over the rows; {MIN_NIGHTS} nights or more needed to confirm)"
    )


def _junit(result: compare.Comparison, records: list[dict], run_id: str) -> bytes:
    """The newest run's records, each failing when its row regressed against the baseline."""
    from evbench.report import compare, exports

    regressed = {
        (row.codec, row.identity): row.changes[-1]
        for row in result.rows
        if row.changes and row.changes[-1].regression
    }
    failures, gains = {}, set()
    for record in records:
        codec = record.get("codec")  # None: machine-state records belong to no codec
        change = (
            regressed.get((codec, compare.record_identity(record))) if codec is not None else None
        )
        if change is not None and change.regression:
            failures[exports.record_key(record)] = change.regression
            if not change.worse:  # beyond --max-change, in the better direction
                gains.add(exports.record_key(record))
    return exports.junit_xml(run_id, records, failures, gains=gains)
