"""How decisive the answer is here: runs of the agent, and how many seed rows each decided.

    .venv/bin/python benchmarks/decisiveness.py --runs 10                  # the default plan
    .venv/bin/python benchmarks/decisiveness.py --runs 10 -- --until-decided --budget 10m

Each run is `evbench-agent run --out DIR` plus the arguments after `--`; its answer is
read back as every reader reads it (comparison.compare_run: the run's margins, a
sequential run's looks). Per run: the seed profile's tested rows, how many were
decided (a winner, equal or negligible), the rows left open, the looks and the wall
time. At the end: runs with at least 12 of 13 decided and with every row decided
(Clopper-Pearson intervals), and the median wall time. A benchmark, not a test: its
figures go to the note and benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evbench_core import comparison, results
from evbench_core.analysis.identity import TESTED

sys.path.insert(0, str(Path(__file__).parent))
from verdict_calibration import clopper_pearson

AGENT = Path(sys.executable).with_name("evbench-agent")


def one_run(extra: list[str], profile: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="evbench-decisive-") as parent:
        out = Path(parent) / "run"
        started = time.monotonic()
        done = subprocess.run(
            [str(AGENT), "run", "--out", str(out), *extra],
            capture_output=True,
            text=True,
            timeout=3600,
        )
        wall = time.monotonic() - started
        if done.returncode != 0:
            return {"failed": done.stderr[-500:], "wall_s": wall}
        run = results.load_run(out)
        found = comparison.compare_run(run, *comparison.SEED_PAIR)
        tested = [r for r in found.rows if r.role == TESTED and r.identity.profile == profile]
        open_rows = [r.label for r in tested if r.verdict and not r.verdict.decided]
        return {
            "tested": len(tested),
            "decided": len(tested) - len(open_rows),
            "open": open_rows,
            "looks": found.looks,
            "wall_s": round(wall, 1),
            "load": os.getloadavg()[0],
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--profile", default="seed")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    parser.add_argument("extra", nargs="*", help="after --: evbench-agent run arguments")
    args = parser.parse_args(argv)
    found = []
    for number in range(1, args.runs + 1):
        figures = one_run(args.extra, args.profile)
        found.append(figures)
        print(f"run {number}: {json.dumps(figures)}", flush=True)
    usable = [f for f in found if "failed" not in f]
    most = sum(1 for f in usable if f["decided"] >= f["tested"] - 1)  # type: ignore[operator]
    every = sum(1 for f in usable if f["decided"] == f["tested"])
    for what, count in (("at most one row open", most), ("every row decided", every)):
        low, high = clopper_pearson(count, len(usable))
        print(f"{what}: {count} of {len(usable)} runs (95 % CI {low:.0%} to {high:.0%})")
    if usable:
        print(f"median wall time {statistics.median(f['wall_s'] for f in usable):.0f} s")  # type: ignore[misc]
    print(f"failed runs: {len(found) - len(usable)}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
