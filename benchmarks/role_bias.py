"""Role bias of the codec suite: A/A runs, and how far the copy's estimate sits from 1.

    .venv/bin/python benchmarks/role_bias.py --runs 10                 # both role orders
    .venv/bin/python benchmarks/role_bias.py --runs 10 --order aa      # --aa json only
    .venv/bin/python benchmarks/role_bias.py --runs 6 -- --no-gc       # extra run arguments

Each run is `evbench-agent run --suite codec --profile PROFILE --out DIR` with either
`--aa json` (json first in the codec list, its copy json-aa second: the order `aa`) or
`--codecs json-aa,json` (the copy first: the order `swapped`); `--order both` alternates
them. Its timed rows (encode, decode, decode_access) are read back as every reader reads
them: comparison.compare_run(run, "json", "json-aa"), each row's verdict.pct_diff, the
copy against the original. Per order the script prints the median over rows and runs
with its distribution-free 95 % interval (order statistics of the binomial), how many
rows came out positive, and the load average (1 min) before each run.

Two biases are told apart: the copy's (json-aa against json, whatever the order) and the
position's (the codec listed second against the first). A bias of the codec's role moves
with the copy in both orders; a bias of its place in the rounds changes sign between them.
A benchmark, not a test: its figures go to docs/method.md (section 2, "The order within a round").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evbench_core import comparison, results

AGENT = Path(sys.executable).with_name("evbench-agent")
TIMED = ("encode", "decode", "decode_access")
ORDERS = {"aa": ["--aa", "json"], "swapped": ["--codecs", "json-aa,json"]}


def one_run(order: str, profile: str, extra: list[str]) -> dict[str, object]:
    """One A/A run in `order`; each timed row's estimate of json-aa against json (%)."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="evbench-role-bias-") as parent:
        out = Path(parent) / "run"
        started = time.monotonic()
        command = [str(AGENT), "run", "--suite", "codec", "--profile", profile]
        done = subprocess.run(
            [*command, *ORDERS[order], "--progress", "none", "--out", str(out), *extra],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        wall = time.monotonic() - started
        if done.returncode != 0:
            return {"order": order, "failed": done.stderr[-500:], "load": load}
        found = comparison.compare_run(results.load_run(out), "json", "json-aa")
        rows = {
            row.identity.metric: round(row.verdict.pct_diff, 3)
            for row in found.rows
            if row.identity.metric in TIMED and row.verdict is not None
        }
    return {"order": order, "rows": rows, "load": load, "wall_s": round(wall, 1)}


def _binomial_cdf(k: int, n: int) -> float:
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """The distribution-free interval for a median: order statistics (k, n + 1 - k)."""
    ordered, n = sorted(values), len(values)
    k = 0
    while k + 1 <= n and _binomial_cdf(k, n) <= (1 - level) / 2:
        k += 1  # P(X <= k - 1) <= alpha / 2: the k-th smallest is the lower end
    if k == 0:
        return None
    return ordered[k - 1], ordered[n - k]


def sign_p(values: list[float]) -> float:
    """Two-sided exact sign test of the median against 0."""
    positive, negative = sum(v > 0 for v in values), sum(v < 0 for v in values)
    n = positive + negative
    return min(1.0, 2 * _binomial_cdf(min(positive, negative), n)) if n else 1.0


def describe(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: no rows"
    interval = median_interval(values)
    span = f"[{interval[0]:+.2f}, {interval[1]:+.2f}] %" if interval else "(too few rows)"
    positive = sum(v > 0 for v in values)
    return (
        f"{name}: median {statistics.median(values):+.2f} % {span}, "
        f"{positive} of {len(values)} rows positive, sign test p {sign_p(values):.2g}"
    )


def summary(found: list[dict[str, object]]) -> list[str]:
    """Per order and over both: the copy's bias and the second-listed codec's."""
    lines = []
    copy_all: list[float] = []
    second_all: list[float] = []
    for order in ORDERS:
        runs = [f for f in found if f["order"] == order and "rows" in f]
        if not runs:
            continue
        copy = [v for f in runs for v in f["rows"].values()]  # type: ignore[attr-defined]
        second = copy if order == "aa" else [-v for v in copy]
        copy_all += copy
        second_all += second
        loads = [float(f["load"]) for f in runs]  # type: ignore[arg-type]
        lines.append(
            f"order {order} ({len(runs)} runs, load {min(loads):.2f} to {max(loads):.2f},"
            f" median {statistics.median(loads):.2f}):"
        )
        lines.append("  " + describe("json-aa against json", copy))
        for metric in TIMED:
            per = [f["rows"][metric] for f in runs if metric in f["rows"]]  # type: ignore[index,operator]
            lines.append("    " + describe(metric, per))
    if len({f["order"] for f in found}) > 1:
        lines.append("both orders:")
        lines.append("  " + describe("json-aa against json (the copy's role)", copy_all))
        lines.append("  " + describe("second-listed against first (the position)", second_all))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per order (default 10)")
    parser.add_argument("--order", choices=["aa", "swapped", "both"], default="both")
    parser.add_argument("--profile", default="seed")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    parser.add_argument("extra", nargs="*", help="after --: evbench-agent run arguments")
    args = parser.parse_args(argv)
    orders = list(ORDERS) if args.order == "both" else [args.order]
    found = []
    for number in range(1, args.runs + 1):
        for order in orders:  # alternating, so load drift hits both orders alike
            figures = one_run(order, args.profile, args.extra)
            found.append(figures)
            print(f"run {number} {json.dumps(figures)}", flush=True)
    for line in summary(found):
        print(line)
    print(f"failed runs: {sum('failed' in f for f in found)}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
