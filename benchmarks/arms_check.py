"""Two builds in one run (`--arm`), checked on this machine: A/A arms and a real pair.

Real `evbench-agent run --arm` runs of the codec suite (full plan unless told),
alternating:

- A/A: the same venv as both arms (`a=VENV --arm b=VENV`): every winner is false.
  Reports the runs with any winner, with its exact (Clopper-Pearson) 95 % interval.
- pair: BASELINE against CANDIDATE (protobuf 4.25 against the newest by default),
  the arms' order swapped every other run (a turn-order bias would flip with it).
  Reports per operation each run's verdict, % difference and p (Holm).

Each run's load average (1 min, before and after) is printed beside it: on a shared
machine that is the context of every figure. Not a test: run by hand, minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict_calibration import clopper_pearson

from evbench_core import results
from evbench_core.comparison import compare

ROOT = Path(__file__).resolve().parent.parent
AGENT = [sys.executable, "-m", "evbench_agent", "run", "--suite", "codec"]


def _run(arms: list[tuple[str, Path]], extra: list[str], out: Path) -> dict:
    argv = [*AGENT, *extra, "--out", str(out)]
    for name, venv in arms:
        argv += ["--arm", f"{name}={venv}"]
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip()[-500:]}")
    arms_found = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["arms"]
    samples = list(results.load_run(out).samples())
    rows = {}
    (base, _), (cand, _) = arms[0], arms[1]
    found = compare(samples, f"protobuf@{base}", f"protobuf@{cand}")
    for row in found.by_role("tested"):
        verdict = row.verdict
        rows[f"{row.identity.profile} {row.identity.metric}"] = {
            "winner": {"baseline": base, "candidate": cand}.get(row.outcome, row.outcome),
            "significant": verdict.significant,  # a winner named, whatever the words
            "pct": verdict.pct_diff,
            "p_holm": verdict.p_holm,
        }
    return {
        "arms": {name: (a["protobuf"], a["protobuf_backend"]) for name, a in arms_found.items()},
        "rows": rows,
        "seconds": time.monotonic() - started,
        "load": (load_before, os.getloadavg()[0]),
    }


def _line(kind: str, index: int, run: dict) -> str:
    cells = "; ".join(
        f"{label}: {row['winner']} {row['pct']:+.1f} % p {row['p_holm']:.3g}"
        for label, row in run["rows"].items()
    )
    load = run["load"]
    return (
        f"{kind} {index + 1}: {cells} [{run['seconds']:.0f} s, load {load[0]:.1f}->{load[1]:.1f}]"
    )


def _new_against_old(run: dict, row: dict) -> float:
    """The row's estimate as new / old - 1 (%), whichever arm was the baseline."""
    ratio = 1 + row["pct"] / 100  # candidate / baseline
    return row["pct"] if next(iter(run["arms"])) == "old" else (1 / ratio - 1) * 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=ROOT / ".venv-pb425")
    parser.add_argument("--candidate", type=Path, default=ROOT / ".venv")
    parser.add_argument("--aa-runs", type=int, default=10)
    parser.add_argument("--pair-runs", type=int, default=6)
    parser.add_argument("--profile", default="seed")
    parser.add_argument("--quick", action="store_true", help="the quick plan (8 x 3)")
    parser.add_argument("--budget-min", type=float, default=30.0, help="stop starting runs after")
    args = parser.parse_args()
    extra = ["--profile", args.profile] + (["--quick"] if args.quick else [])
    deadline = time.monotonic() + 60 * args.budget_min
    aa_runs, pair_runs = [], []
    with tempfile.TemporaryDirectory(prefix="evbench-arms-check-") as scratch:
        for index in range(max(args.aa_runs, args.pair_runs)):
            if time.monotonic() > deadline:
                print(f"budget of {args.budget_min:g} min spent: stopping", flush=True)
                break
            if index < args.aa_runs:
                same = [("a", args.candidate), ("b", args.candidate)]
                run = _run(same, extra, Path(scratch) / f"aa-{index}")
                aa_runs.append(run)
                print(_line("A/A", index, run), flush=True)
            if index < args.pair_runs:
                pair = [("old", args.baseline), ("new", args.candidate)]
                if index % 2:
                    pair.reverse()
                run = _run(pair, extra, Path(scratch) / f"pair-{index}")
                pair_runs.append(run)
                print(_line("pair", index, run) + f" {run['arms']}", flush=True)
    if aa_runs:
        false = sum(any(row["significant"] for row in run["rows"].values()) for run in aa_runs)
        low, high = clopper_pearson(false, len(aa_runs))
        rows = sum(len(run["rows"]) for run in aa_runs)
        wrong = sum(row["significant"] for run in aa_runs for row in run["rows"].values())
        print(
            f"A/A: {false} of {len(aa_runs)} runs named a (false) winner "
            f"(95 % CI {100 * low:.1f} % to {100 * high:.1f} %); {wrong} of {rows} rows"
        )
    for label in dict.fromkeys(label for run in pair_runs for label in run["rows"]):
        seen = [run["rows"][label] for run in pair_runs if label in run["rows"]]
        named = {}
        for row in seen:
            named[row["winner"]] = named.get(row["winner"], 0) + 1
        pcts = [_new_against_old(run, row) for run, row in zip(pair_runs, seen, strict=True)]
        print(
            f"pair {label}: verdicts {named}; new against old, % per run: "
            + ", ".join(f"{p:+.1f}" for p in pcts)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
