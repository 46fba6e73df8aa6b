"""Each lab entry against the same board's previous run of the same entry, from the history.

The previous run is the newest complete, earlier run in the history that

- has the same board identity and lab place (a labgrid place: `place:NAME`),
- was run by a lab as an entry of the same board (its LAB.yaml name and URL: two boards
  that share one machine's identity are still two boards) with the same suite, profile,
  codecs and options (the entry identity), as that lab's lab.json records it,
- measured the same profiles, codecs and plan, and whose run directory is on disk.

Another board's run of the same night is never the baseline, however close in time.
It is looked for in the store the entry's runs went to: LAB.yaml's `--history URL`
option, else EVBENCH_HISTORY's (none with `--no-history`).
The comparison is `evbench compare --baseline PREVIOUS NEW` itself, so its criteria and
its exit code 3 decide what fails; its table is kept beside the lab's logs, and its JUnit
file beside that says which way each failing metric went: a regression, or a gain beyond
--max-change (which fails too, as a sign the two runs may not measure the same thing, but
is no regression).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evbench.boards.base import child_environment
from evbench.history import url
from evbench.lab import index
from evbench.report import exports
from evbench_core import results
from evbench_core.errors import EvbenchError, ExitCode, UserError

if TYPE_CHECKING:
    from evbench.history.url import StoreURL

COMPARE_TIMEOUT = 600.0
#: What makes two lab entries the same measurement of the same board.
ENTRY_FIELDS = ("board", "url", "suite", "profile", "codecs", "options")
#: How far above a run directory its lab directory is: LABDIR/runs/BOARD/ENTRY.
LAB_DEPTH = 2


def lab_entry(directory: Path) -> dict[str, Any] | None:
    """The lab.json entry that ran into `directory`, or None (not a lab's run)."""
    directory = Path(directory)
    if len(directory.parents) <= LAB_DEPTH:
        return None
    lab = directory.parents[LAB_DEPTH]
    try:
        document = index.read(lab)
    except UserError:  # none, or damaged: this run is not known as a lab's
        return None
    for entry in document["entries"]:
        if entry.get("run_dir") and (lab / entry["run_dir"]) == directory:
            return entry
    return None


def _identity(entry: dict[str, Any] | None) -> tuple | None:
    return None if entry is None else tuple(json.dumps(entry.get(k)) for k in ENTRY_FIELDS)


def history_of(run_argv: Sequence[str]) -> StoreURL | None:
    """The store `evbench run` with this argv adds its run to (None: --no-history), read
    with that command's own history options: an entry's `--history URL` in LAB.yaml's
    options is where its runs are, so where its previous run is looked for too."""
    from evbench.history import default_url
    from evbench.history.after_run import add_history_options

    parser = argparse.ArgumentParser(add_help=False)  # the run's other options pass by
    add_history_options(parser)
    args, _run_options = parser.parse_known_args(run_argv)
    return None if args.no_history else default_url(args.history)


def previous_run(out: Path, history: StoreURL | None = None) -> dict[str, Any] | None:
    """The history's row of the board's previous run of the same entry, or None; from
    `history` (default: EVBENCH_HISTORY's store, else the data directory's)."""
    from evbench.history import default_url, open_store

    manifest = json.loads((out / results.MANIFEST).read_text(encoding="utf-8"))
    run_id = manifest.get("run_id")
    with open_store(history or default_url(None), read_only=True) as store:
        this = store.run(run_id) if run_id else None
        if this is None:
            return None
        candidates = [
            row
            for row in store.runs(board=this["board"])
            if row["run_id"] != run_id
            and not row["partial"]
            and row["start_time"] < this["start_time"]
            and row.get("place") == this.get("place")
            and (row["profiles"], row["codecs"], row["quick"])
            == (this["profiles"], this["codecs"], this["quick"])
            and row.get("directory")
            and Path(row["directory"]).is_dir()
        ]
    entry = _identity(lab_entry(out))
    if entry is not None:  # a lab's run: only the same board's runs of the same entry
        candidates = [
            row for row in candidates if _identity(lab_entry(Path(row["directory"]))) == entry
        ]
    return candidates[-1] if candidates else None


def _failure_types(junit: Path) -> set[str]:
    """The <failure type>s of compare's JUnit file (none when it wrote none)."""
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return set()
    return {failure.get("type", exports.REGRESSION) for failure in root.iter("failure")}


def _outcome(exit_code: int, junit: Path) -> tuple[bool, bool]:
    """(regressed, improved beyond --max-change) from compare's exit code and its JUnit
    file. A failure that names no gain counts as a regression: a fact grown beyond its
    threshold, or a JUnit file compare could not write."""
    if exit_code != ExitCode.CHECK_FAILED:
        return False, False
    kinds = _failure_types(junit)
    gained = exports.GAIN_BEYOND in kinds
    return exports.REGRESSION in kinds or not gained, gained


def against_previous(
    out: Path, table: Path, run_argv: Sequence[str] | None = None
) -> dict[str, Any]:
    """{baseline, regressed, improved_beyond_max_change, exit_code, table} for lab.json;
    no baseline: the first night. `run_argv`: the entry's `evbench run` argv, whose
    --history or --no-history says which store its runs went to."""
    from evbench.history import default_url

    try:
        history = default_url(None) if run_argv is None else history_of(run_argv)
        if history is None:
            return {"baseline": None, "regressed": False,
                    "note": "no history: the entry runs with --no-history"}  # fmt: skip
        previous = previous_run(out, history)
    except (EvbenchError, OSError, ValueError) as error:
        return {"baseline": None, "regressed": False, "note": f"no history: {error}"}
    if previous is None:
        return {"baseline": None, "regressed": False, "note": "no previous run of this board"}
    argv = [
        sys.executable,
        "-m",
        "evbench",
        "compare",
        "--baseline",
        previous["directory"],
        str(out),
        "--junit",
        str(table.with_suffix(".xml")),
    ]
    table.parent.mkdir(parents=True, exist_ok=True)
    # The history compare confirms --baseline changes against is the entry's store, given
    # in the environment (a PostgreSQL URL may hold a password: never in argv); the
    # board's password it never needs.
    env = child_environment()
    env[url.ENVIRONMENT] = history.dsn or str(history.path)
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=COMPARE_TIMEOUT,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    results.write_atomic(table, (done.stdout + done.stderr).encode())
    regressed, gained = _outcome(done.returncode, table.with_suffix(".xml"))
    return {
        "baseline": previous["directory"],
        "baseline_run_id": previous["run_id"],
        "regressed": regressed,
        "improved_beyond_max_change": gained,
        "exit_code": done.returncode,
        "table": str(table),
    }
