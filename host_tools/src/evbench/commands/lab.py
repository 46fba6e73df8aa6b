"""evbench lab: run a LAB.yaml matrix over many boards (`run`), or show its progress (`status`).

Exit codes of `lab run`: 0 every entry complete and no regression; 3 every entry
complete and a regression criterion failed; 4 some entry did not complete (its run is
kept, partial or failed, and lab.json says why).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from evbench.commands import _outputs
from evbench_core.errors import UserError

NAME = "lab"
HELP = "run a matrix of boards x suites x profiles x codecs (LAB.yaml), or show its status"


def setup_parser(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="lab_action", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="run every entry of LAB.yaml")
    run.add_argument("plan", type=Path, metavar="LAB.yaml")
    run.add_argument("--out", type=Path, metavar="LABDIR", help="default: labs/LAB-TIME")
    status = actions.add_parser("status", help="a lab's progress (also while it runs)")
    status.add_argument("lab_dir", type=Path, metavar="LABDIR")


def run(args: argparse.Namespace) -> int:
    if args.lab_action == "status":
        return _status(args.lab_dir)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    from evbench.lab import index, plan, report
    from evbench.lab.runner import LabRun

    lab_plan = plan.load(args.plan)  # a bad plan stops here: no lab directory
    out = args.out or Path("labs") / time.strftime("lab-%Y%m%dT%H%M%SZ", time.gmtime())
    out = out.resolve()
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out} is not empty", hint="give a new --out directory")
    _outputs.make_directory(out, "--out")
    lab_index = index.LabIndex(out, args.plan.resolve(), lab_plan.entries)
    boards = len({entry.board.label for entry in lab_plan.entries})
    print(
        f"lab: {len(lab_plan.entries)} entries on {boards} boards -> {out}",
        file=sys.stderr,
        flush=True,
    )
    try:
        code = LabRun(lab_plan, out, lab_index).run()
    finally:  # also after a second Ctrl-C: the page shows where every entry got to
        page = report.write(out, lab_index.document)
        _print(lab_index.document)
        print(f"lab report: {page}", file=sys.stderr)
    return code


def _print(document: dict) -> None:
    from evbench.report import table

    rows = [
        [
            entry["board"],
            f"{entry['suite']}/{entry['profile']}/{entry['codecs']}",
            entry["status"],
            "" if entry["exit_code"] is None else str(entry["exit_code"]),
            "" if entry["duration_s"] is None else f"{entry['duration_s']:.0f} s",
            entry.get("error") or "",
        ]
        for entry in document["entries"]
    ]
    headers = ["board", "entry", "status", "exit", "duration", "failure"]
    print(table.format_rows(headers, rows))


def _status(directory: Path) -> int:
    from evbench.lab import index

    document = index.read(directory)
    gone = index.runner_gone(document)
    if gone:  # killed outright: lab.json still says what was running when it died
        killed = {"running": "killed", "pending": "not run"}
        entries = [
            {**e, "status": killed.get(e["status"], e["status"])} for e in document["entries"]
        ]
        _print({**document, "entries": entries})
    else:
        _print(document)
    done = sum(e["status"] in index.FINAL_STATES for e in document["entries"])
    state = "finished" if document.get("finished") else "running"
    if gone:
        state = (
            f"not running: {gone}; it was killed (SIGKILL, the OOM killer, a power cut) "
            "before it could finish lab.json, so its entries shown killed or not run never "
            "finished (a labgrid place may still be held: the next run on it names the holder)"
        )
    print(f"\n{done} of {len(document['entries'])} entries done; the lab is {state}")
    return 0
