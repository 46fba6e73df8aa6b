"""evbench's codec suite against pyperf, timing the same operations in one run.

    python benchmarks/pyperf_vs_evbench.py [--profile seed] [--codecs json,protobuf] [--rounds 3]
        [--pyperf-processes 20] [--evbench-processes 10]

Both time the callables of evbench_agent.suites.codec.operations with the
garbage collector enabled (pyperf's bench_func leaves it on; so does evbench
by default), on the same payload: the profile's payload 0 with the default
seed (pyperf's bench_func takes one argument, so evbench runs with
--payloads 1 instead of rotating its 200). pyperf runs with its defaults (20
worker processes, 3 values each after a warm-up, 100 ms per value); evbench
with its full plan (10 processes x 10 values, >= 1 ms per value). The two
alternate over several rounds, so that drift in the machine's speed hits both
alike. On a machine whose speed drifts within minutes, more and shorter rounds
(fewer processes per round, e.g. --rounds 12 --pyperf-processes 5
--evbench-processes 3: the same kind of processes, in finer alternation) let
the pairing cancel more of the drift.

Per operation: both medians (all values pooled), the ratio evbench/pyperf
with its 95 % interval (Hodges-Lehmann estimate and Moses' interval over the
per-process medians: a process is what replicates, its values are not
independent), the ratio of medians in each round (drift shows there), and,
from 6 rounds on, the ratio paired by round: the Hodges-Lehmann centre of the
per-round log ratios with Tukey's signed-rank interval (a round is the unit
that pairs the tools under the same machine speed).
Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evbench_core.analysis import stats

PYPERF_MODE = "--as-pyperf-runner"


def _pyperf_runner(profile: str, codec_names: list[str]) -> None:
    """Inside pyperf: register every operation with bench_func."""
    import pyperf

    from evbench_agent import codecs, payloads
    from evbench_agent.suites.codec import operations

    # Workers must come back here, not to main().
    runner = pyperf.Runner(program_args=(__file__, PYPERF_MODE, profile, ",".join(codec_names)))
    items = payloads.get(profile).payloads(1)  # payload 0, default seed: evbench's --payloads 1
    for codec in codec_names:
        bound = codecs.get(codec).bind(payloads.get(profile))
        for name, (function, arguments) in operations(bound, items).items():
            runner.bench_func(f"{profile}/{codec}/{name}", function, arguments[0])


def _time_pyperf(profile: str, codec_names: list[str], out: Path, processes: int) -> float:
    argv = [sys.executable, __file__, PYPERF_MODE, profile, ",".join(codec_names)]
    argv += ["--processes", str(processes)]
    start = time.monotonic()
    subprocess.run([*argv, "--output", str(out), "--quiet"], check=True)
    return time.monotonic() - start


def _time_evbench(profile: str, codec_names: list[str], out: Path, processes: int) -> float:
    argv = [sys.executable, "-m", "evbench_agent", "run", "--suite", "codec"]
    argv += ["--processes", str(processes)]
    argv += ["--profile", profile, "--codecs", ",".join(codec_names), "--out", str(out)]
    argv += ["--payloads", "1"]  # the payload pyperf times (see _pyperf_runner)
    start = time.monotonic()
    subprocess.run([*argv, "--progress", "none"], check=True)
    return time.monotonic() - start


#: operation name -> one list of values per process
PerProcess = dict[str, list[list[float]]]


def _evbench_values(run_dir: Path, profile: str) -> PerProcess:
    from evbench_core.results import read_samples

    values: PerProcess = {}
    for sample_set in read_samples(run_dir):  # one set per worker process and operation
        if sample_set.suite == "codec" and sample_set.unit == "s":
            key = f"{profile}/{sample_set.codec}/{sample_set.metric}"
            values.setdefault(key, []).append(list(sample_set.values))
    return values


def _pyperf_values(path: Path) -> PerProcess:
    import pyperf

    suite = pyperf.BenchmarkSuite.load(str(path))
    return {
        b.get_name(): [list(run.values) for run in b.get_runs() if run.values]
        for b in suite.get_benchmarks()
    }


def _pooled(processes: list[list[float]]) -> list[float]:
    return [value for values in processes for value in values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="seed")
    parser.add_argument("--codecs", default="json,protobuf")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--pyperf-processes", type=int, default=20, help="per round (default 20)")
    parser.add_argument("--evbench-processes", type=int, default=10, help="per round (default 10)")
    args = parser.parse_args()
    codec_names = args.codecs.split(",")
    # per tool: one PerProcess per round
    rounds: dict[str, list[PerProcess]] = {"pyperf": [], "evbench": []}
    walls: dict[str, list[float]] = {"pyperf": [], "evbench": []}
    with tempfile.TemporaryDirectory() as scratch:
        for round_number in range(args.rounds):
            # Alternate the order: on a shared or throttling machine the speed
            # drifts, and drift must hit both tools alike.
            order = ("pyperf", "evbench") if round_number % 2 == 0 else ("evbench", "pyperf")
            for tool in order:
                place = Path(scratch) / f"{tool}-{round_number}"
                if tool == "pyperf":
                    place = place.with_suffix(".json")
                    walls[tool].append(
                        _time_pyperf(args.profile, codec_names, place, args.pyperf_processes)
                    )
                    rounds[tool].append(_pyperf_values(place))
                else:
                    walls[tool].append(
                        _time_evbench(args.profile, codec_names, place, args.evbench_processes)
                    )
                    rounds[tool].append(_evbench_values(place, args.profile))
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs"
    print(f"machine: {machine}, Python {platform.python_version()}, {args.rounds} rounds")
    print(f"load average {os.getloadavg()[0]:.1f} at the end (the figures are noisier above 1)")
    heading = f"{'pyperf median':>14} {'evbench median':>15} {'ratio [95% CI]':>22}"
    print(f"{'operation':32} {heading}  paired by round [95% CI]  per round   processes")
    worst = paired_worst = 0.0
    for name in sorted(rounds["pyperf"][0]):
        theirs = [p for found in rounds["pyperf"] for p in found[name]]
        ours = [p for found in rounds["evbench"] for p in found[name]]
        p_median = statistics.median(_pooled(theirs))
        e_median = statistics.median(_pooled(ours))
        their_medians = [statistics.median(p) for p in theirs]
        our_medians = [statistics.median(p) for p in ours]
        ratio = stats.ratio_estimate(their_medians, our_medians)
        interval = stats.ratio_ci(their_medians, our_medians)
        per_round = [
            statistics.median(_pooled(e[name])) / statistics.median(_pooled(p[name]))
            for p, e in zip(rounds["pyperf"], rounds["evbench"], strict=True)
        ]
        paired, paired_interval = _paired_by_round(per_round)
        if p_median >= 1e-6 and interval is not None:
            worst = max(worst, abs(interval[0] - 1), abs(interval[1] - 1))
        if p_median >= 1e-6 and paired_interval is not None:
            paired_worst = max(paired_worst, *(abs(bound - 1) for bound in paired_interval))
        ci = f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "[n too small]"
        paired_ci = (
            f"{paired:.3f} [{paired_interval[0]:.3f}, {paired_interval[1]:.3f}]"
            if paired_interval
            else "[n too small]"
        )
        medians = f"{p_median * 1e6:11.3f} µs {e_median * 1e6:12.3f} µs"
        print(
            f"{name:32} {medians} {ratio:6.3f} {ci:>15}  {paired_ci:>23}  "
            f"{' '.join(f'{r:.3f}' for r in per_round)}   {len(theirs)}/{len(ours)}"
        )
    pyperf_wall, evbench_wall = (statistics.median(walls[t]) for t in ("pyperf", "evbench"))
    print(f"wall time per run (median): pyperf {pyperf_wall:.1f} s, evbench {evbench_wall:.1f} s")
    print(f"operations >= 1 µs: the farthest interval bound from 1 is {worst:+.1%} (aim 10 %)")
    if args.rounds >= 6:
        print(f"paired by round: the farthest bound from 1 is {paired_worst:+.1%} (aim 10 %)")
    print(json.dumps({"pyperf_wall_s": walls["pyperf"], "evbench_wall_s": walls["evbench"]}))


def _paired_by_round(per_round: list[float]) -> tuple[float, tuple[float, float] | None]:
    """The ratio paired by round: exp of the centre of the log ratios, with its interval."""
    logs = [math.log(r) for r in per_round]
    interval = stats.center_ci(logs)
    centre = math.exp(stats.center_estimate(logs))
    return centre, (math.exp(interval[0]), math.exp(interval[1])) if interval else None


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == PYPERF_MODE:
        profile_name, names = sys.argv[2], sys.argv[3].split(",")
        del sys.argv[1:4]
        _pyperf_runner(profile_name, names)
    else:
        main()
