"""evbench history: every run in one store; trends, change points and a trend page.

    evbench history add RUN_DIR...          index verified runs (a partial one as partial)
    evbench history list [--board B] [--since DATE] [--codec C] [--profile P]
    evbench history show METRIC --board B --codec C [--profile P]
    evbench history export --csv FILE       every record of every run
    evbench history check [--since DATE]    exit 3 on a new, unaccepted regression
    evbench history accept --board B --run RUN_ID --reason TEXT [--series S]
    evbench history prune --keep N|Nd       the newest N runs per board, or N days
    evbench history copy FROM TO            SQLite <-> PostgreSQL, or any two stores
    evbench history report --out DIR        the self-contained trend page

The store is --history URL, else EVBENCH_HISTORY, else an SQLite file in the
user's data directory ($XDG_DATA_HOME/evbench/history.sqlite).
"""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, overload

from evbench.commands import _outputs
from evbench_agent.command_line import Parser, add_output_options
from evbench_core.errors import CheckFailed, EvbenchError, ExitCode, UserError
from evbench_core.log_output import quiet

if TYPE_CHECKING:  # the store loads only when a history command runs
    from evbench.history.store import Store
    from evbench.history.trends import Status

NAME = "history"
HELP = "index runs in a results store; trends, change points, checks and a trend page"

_DAYS = re.compile(r"(\d+)d")


def _store_option(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    parser.add_argument(
        "--history",
        metavar="URL",
        default=default,
        help="the store: a path, sqlite:///PATH or postgresql://USER@HOST/DB "
        "(default: EVBENCH_HISTORY, else $XDG_DATA_HOME/evbench/history.sqlite)",
    )


def setup_parser(parser: argparse.ArgumentParser) -> None:
    _store_option(parser)  # before the action (`history --history URL add RUN`) or after it
    actions = parser.add_subparsers(dest="action", required=True, parser_class=Parser)

    add = actions.add_parser("add", help="index run directories (verified against SHA256SUMS)")
    add.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")

    listing = actions.add_parser("list", help="the runs in the store, oldest first")
    for name in ("board", "codec", "profile"):
        listing.add_argument(f"--{name}")
    listing.add_argument("--since", metavar="DATE", help="ISO date, or N days back (7d)")

    show = actions.add_parser("show", help="one metric of one board over time, with its interval")
    show.add_argument("metric", metavar="METRIC", help="e.g. decode, or cpu_util[phase=codec]")
    show.add_argument("--board", required=True)
    show.add_argument("--codec", required=True, help="the codec ('-' for a codec-less metric)")
    show.add_argument("--profile")
    show.add_argument("--suite")

    export = actions.add_parser("export", help="every record of every run as CSV")
    export.add_argument("--csv", required=True, metavar="FILE", help="the CSV file ('-': stdout)")
    export.add_argument("--board")
    export.add_argument("--since", metavar="DATE")

    check = actions.add_parser("check", help="change points; exit 3 on a new regression")
    check.add_argument("--since", metavar="DATE", help="changes from then on are new (ISO, 7d)")
    check.add_argument("--board")
    check.add_argument("--criteria", type=Path, metavar="FILE", help="thresholds (default 5%%)")

    accept = actions.add_parser("accept", help="mark a known change so checks pass it")
    accept.add_argument("--board", required=True)
    accept.add_argument("--run", required=True, metavar="RUN_ID", help="the first run after it")
    accept.add_argument("--series", default="*", help="suite/profile/codec/metric (default: all)")
    accept.add_argument("--reason", required=True, help="why the change is expected")
    accept.add_argument("--by", help="who accepts it (default: the login name)")

    prune = actions.add_parser("prune", help="delete old runs: keep N per board, or N days")
    prune.add_argument("--keep", required=True, metavar="N|Nd")
    prune.add_argument("--dry-run", action="store_true", help="only say what would go")

    copy = actions.add_parser("copy", help="copy every run of one store into another")
    copy.add_argument("source", metavar="FROM", help="a store URL")
    copy.add_argument("target", metavar="TO", help="a store URL")

    report = actions.add_parser("report", help="write the trend page (trends.html) into DIR")
    report.add_argument("--out", required=True, type=Path, metavar="DIR")
    report.add_argument("--board")

    for action in (add, listing, show, export, check, accept, prune, report):
        _store_option(action, argparse.SUPPRESS)
    # -v, --quiet and --debug after the action too (`history check --quiet` under cron).
    for action in (add, listing, show, export, check, accept, prune, copy, report):
        add_output_options(action, argparse.SUPPRESS)


def _since(text: str | None) -> str | None:
    """An ISO date or date-time, or N days back, as the ISO text start times compare with."""
    if not text:
        return None
    days = _DAYS.fullmatch(text.strip())
    if days:
        from evbench.history.pruning import days_back

        return days_back(int(days.group(1))).isoformat(timespec="seconds")
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        raise UserError(f"--since {text!r} is not a date", hint="write 2026-11-30 or 7d") from None
    return text


#: Actions that only read: they open the store read-only (docs/history.md).
READ_ONLY = frozenset({"list", "show", "export", "check", "report"})


def _open(args: argparse.Namespace, url: str | None = None, read_only: bool = False) -> Store:
    from evbench.history import default_url, open_store, parse_url

    where = parse_url(url) if url else default_url(getattr(args, "history", None))
    return open_store(where, read_only or args.action in READ_ONLY)


@overload
def _board(store: Store, given: str) -> str: ...
@overload
def _board(store: Store, given: None) -> None: ...
def _board(store: Store, given: str | None) -> str | None:
    """A board as the store names it; `bench-3` finds `name:bench-3` when that is the only one."""
    if given is None:
        return None
    boards = store.boards()
    if given in boards:
        return given
    matching = [b for b in boards if b.split(":", 1)[-1] == given]
    if len(matching) == 1:
        return matching[0]
    if not matching:
        raise UserError(
            f"no board {given!r} in the store", hint="boards: " + (", ".join(boards) or "none")
        )
    raise UserError(f"{given!r} names several boards: {', '.join(matching)}")


def run(args: argparse.Namespace) -> int:
    return ACTIONS[args.action](args)


def _add(args: argparse.Namespace) -> int:
    from evbench.history.indexing import index_run
    from evbench_core import results

    # `history add results/*` also meets what the documented workflow puts beside the
    # runs (criteria.json, junit.xml, the store itself, screenshots): not runs, skipped
    # with a note. A directory with a manifest is a run, and its errors count.
    # A path that does not exist is an error, as before (a mistyped run).
    runs = [p for p in args.runs if not p.exists() or (p / results.MANIFEST).is_file()]
    for path in args.runs:
        if path not in runs:
            why = "a file" if path.is_file() else f"no {results.MANIFEST}"
            print(f"evbench: skipped {path}: not a run directory ({why})", file=sys.stderr)
    if not runs:
        raise UserError(
            "none of the paths given is a run directory", hint="give directories of evbench runs"
        )
    status = ExitCode.OK
    with _open(args) as store:
        for directory in runs:
            try:
                indexed = index_run(directory)
                added = store.add(indexed)
            except EvbenchError as error:  # one bad run does not stop the others
                print(f"evbench: error: {error}", file=sys.stderr)
                status = max(status, error.exit_code)
                continue
            flag = " (PARTIAL)" if indexed.row.partial else ""
            what = "added" if added else "already in the store"
            print(f"{what}: {indexed.row.run_id}{flag} board {indexed.row.board} "
                  f"({indexed.row.board_source}) -> {store.url.display}")  # fmt: skip
    return status


def _list(args: argparse.Namespace) -> int:
    from evbench.history.queries import run_cells
    from evbench.report.table import format_rows

    with _open(args) as store:
        runs = store.runs(_board(store, args.board), _since(args.since), args.codec, args.profile)
        headers, rows = run_cells(runs)
        print(format_rows(headers, rows) if rows else "no runs")
        print(f"{len(rows)} runs in {store.url.display}", file=sys.stderr)
    return ExitCode.OK


def _show(args: argparse.Namespace) -> int:
    from evbench.history.queries import find_series, series_cells
    from evbench.report.table import format_rows

    with _open(args) as store:
        board = _board(store, args.board)
        key = find_series(store, board, args.metric, args.codec, args.profile, args.suite)
        headers, rows = series_cells(store, board, key)
    print(f"{board}: {'/'.join(key)}")
    print(format_rows(headers, rows))
    print("Median [95% CI of the median] (n) per run; partial runs are shown, not trended.")
    return ExitCode.OK


def _export(args: argparse.Namespace) -> int:
    from evbench.history.queries import export_csv

    with _open(args) as store:
        text = export_csv(store, _board(store, args.board), _since(args.since))
    if args.csv == "-":
        sys.stdout.write(text)
    else:
        _outputs.write_file(Path(args.csv), text.encode(), "--csv")
        print(f"{text.count(chr(10)) - 1} records -> {args.csv}", file=sys.stderr)
    return ExitCode.OK


def _check(args: argparse.Namespace) -> int:
    from evbench.history.trends import regressions, survey
    from evbench.report import criteria

    limits = criteria.load(args.criteria) if args.criteria else criteria.Criteria()
    since = _since(args.since)
    with _open(args) as store:
        found = survey(store, _board(store, args.board))
    # New changes, and older ones the nights since have placed again (shown, never failed).
    shown = [
        c
        for c in found.changes
        if not since or (c.first_seen_date or c.date) >= since
        or (c.replaced and c.placed_date >= since)
    ]  # fmt: skip
    for change in shown:
        print(change.describe() + (f" [accepted: {change.accepted['reason']}]"
                                   if change.accepted else ""))  # fmt: skip
    # Under --quiet a night where nothing moved prints nothing (cron mails only output).
    if not quiet():
        changed = {(c.board, c.series, c.qualifier) for c in shown}
        short = [s for s in found.statuses if (s.too_short or s.scan_short)
                 and (s.series.board, s.series.key, s.series.qualifier) not in changed]  # fmt: skip
        if short:
            print(_too_short_line(short))
        watched = len(found.statuses) - len(found.too_short)
        # Two lengths: the watch's, and the segmentation's (a watched series may not yet
        # have the nights to place an older change): the line above counts both.
        scan_short = sum(1 for s in found.statuses if s.scan_short)
        print(
            f"{len(shown)} change points"
            + (f" first shown since {since}" if since else "")
            + f"; {len(found.statuses)} tested series: {watched} watched"
            + (f" ({scan_short} too short yet to place an older change)" if scan_short else "")
            + f", {len(found.too_short)} too short to watch (context metrics are never tested)",
            file=sys.stderr,
        )
    failing = regressions(found.changes, limits, since)
    if failing:
        raise CheckFailed(
            f"{len(failing)} new regression(s): "
            + "; ".join(
                f"{c.board} {c.series_name} {c.pct:+.1f}% from run {c.run_id} "
                f"(after {c.previous_run_id})"
                for c in failing
            ),
            hint="a known change: evbench history accept --board B --run RUN_ID --reason WHY",
        )
    return ExitCode.OK


def _too_short_line(short: list[Status]) -> str:
    """The series too short to judge, in one line: how many, the nights they have, what
    the watch and the segmentation need, and the first few names."""
    from evbench.history.nightly_watch import WINDOW

    have = sorted({s.nights for s in short})
    watch = max(s.watch_needed for s in short) + WINDOW
    scan = max(s.needed for s in short)
    names = ", ".join(f"{s.series.board} {s.series.name}" for s in short[:3])
    more = f" and {len(short) - 3} more" if len(short) > 3 else ""
    nights = f"{have[0]}" if len(have) == 1 else f"{have[0]} to {have[-1]}"
    return (
        f"too short: {len(short)} tested series have {nights} nights: the watch tests a "
        f"series from its night {watch} on, the segmentation places an older change "
        f"anywhere from night {scan}: {names}{more}"
    )


def _accept(args: argparse.Namespace) -> int:
    who = args.by or getpass.getuser()
    if not args.reason.strip():
        raise UserError("--reason is empty", hint="say why the change is expected")
    with _open(args) as store:
        board = _board(store, args.board)
        new = store.accept(board, args.run, args.series, who, args.reason.strip())
    print(f"{'accepted' if new else 'already accepted'}: {board} {args.series} at {args.run} "
          f"by {who}")  # fmt: skip
    return ExitCode.OK


def _prune(args: argparse.Namespace) -> int:
    from evbench.history.pruning import prune

    with _open(args) as store:
        doomed = prune(store, args.keep, args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    print(f"{verb} {len(doomed)} runs" + (f": {', '.join(doomed)}" if doomed else ""))
    return ExitCode.OK


def _copy(args: argparse.Namespace) -> int:
    from evbench.history.copying import copy

    if args.history:
        raise UserError(
            "history copy takes both stores as FROM and TO, not --history",
            hint=f"evbench history copy {args.history} TO",
        )
    with _open(args, args.source, read_only=True) as source, _open(args, args.target) as target:
        copied = copy(source, target)
        where = f"{source.url.display} -> {target.url.display}"
        for error in copied.refused:
            print(f"evbench: error: {error}", file=sys.stderr)
        refused = f", {len(copied.refused)} refused" if copied.refused else ""
        print(f"{copied.added} runs copied, {copied.already} already there{refused}, "
              f"{copied.acceptances} acceptances: {where}")  # fmt: skip
    return max((error.exit_code for error in copied.refused), default=ExitCode.OK)


def _report(args: argparse.Namespace) -> int:
    from evbench.history.trend_page import PAGE, render

    def progress(message: str) -> None:
        if not quiet():
            print(message, file=sys.stderr, flush=True)

    with _open(args) as store:
        page, plots, found = render(store, _board(store, args.board), progress)
    _outputs.make_directory(args.out, "--out")
    path = args.out / PAGE
    _outputs.write_file(path, page.encode(), "--out")
    print(path)
    print(f"{plots} plots, {len(found)} change points", file=sys.stderr)
    return ExitCode.OK


ACTIONS = {
    "add": _add,
    "list": _list,
    "show": _show,
    "export": _export,
    "check": _check,
    "accept": _accept,
    "prune": _prune,
    "copy": _copy,
    "report": _report,
}
