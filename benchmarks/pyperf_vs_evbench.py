"""evbench's codec suite against pyperf, timing the same operations in one run.

    python benchmarks/pyperf_vs_evbench.py [--profile seed] [--codecs json,protobuf]

Both time the callables of evbench_agent.suites.codec.operations with the
garbage collector enabled (pyperf's bench_func leaves it on; so does evbench
by default). pyperf runs with its defaults (20 worker processes, 3 values
each after a warm-up, 100 ms per value); evbench with its full plan (10
processes x 10 values, >= 1 ms per value). Prints, per operation, both
medians, their ratio and each tool's wall time. The two alternate over
several rounds (pooled), so that drift in the machine's speed hits both
alike. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYPERF_MODE = "--as-pyperf-runner"


def _pyperf_runner(profile: str, codec_names: list[str]) -> None:
    """Inside pyperf: register every operation with bench_func."""
    import pyperf

    from evbench_agent import codecs, payloads
    from evbench_agent.suites.codec import operations

    # Workers must come back here, not to main().
    runner = pyperf.Runner(program_args=(__file__, PYPERF_MODE, profile, ",".join(codec_names)))
    items = payloads.get(profile).payloads()
    for codec in codec_names:
        bound = codecs.get(codec).bind(payloads.get(profile))
        for name, (function, arguments) in operations(bound, items).items():
            runner.bench_func(f"{profile}/{codec}/{name}", function, arguments[0])


def _time_pyperf(profile: str, codec_names: list[str], out: Path) -> float:
    argv = [sys.executable, __file__, PYPERF_MODE, profile, ",".join(codec_names)]
    start = time.monotonic()
    subprocess.run([*argv, "--output", str(out), "--quiet"], check=True)
    return time.monotonic() - start


def _time_evbench(profile: str, codec_names: list[str], out: Path) -> float:
    argv = [sys.executable, "-m", "evbench_agent", "run", "--suite", "codec"]
    argv += ["--profile", profile, "--codecs", ",".join(codec_names), "--out", str(out)]
    start = time.monotonic()
    subprocess.run([*argv, "--progress", "none"], check=True)
    return time.monotonic() - start


def _evbench_values(run_dir: Path, profile: str) -> dict[str, list[float]]:
    from evbench_agent.results import read_samples

    values: dict[str, list[float]] = {}
    for sample_set in read_samples(run_dir):
        if sample_set.suite == "codec" and sample_set.unit == "s":
            key = f"{profile}/{sample_set.codec}/{sample_set.metric}"
            values.setdefault(key, []).extend(sample_set.values)
    return values


def _pyperf_values(path: Path) -> dict[str, list[float]]:
    import pyperf

    suite = pyperf.BenchmarkSuite.load(str(path))
    return {b.get_name(): list(b.get_values()) for b in suite.get_benchmarks()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="seed")
    parser.add_argument("--codecs", default="json,protobuf")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    args = parser.parse_args()
    codec_names = args.codecs.split(",")
    ours: dict[str, list[float]] = {}
    theirs: dict[str, list[float]] = {}
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
                    walls[tool].append(_time_pyperf(args.profile, codec_names, place))
                    found = _pyperf_values(place)
                    target = theirs
                else:
                    walls[tool].append(_time_evbench(args.profile, codec_names, place))
                    found = _evbench_values(place, args.profile)
                    target = ours
                for name, values in found.items():
                    target.setdefault(name, []).extend(values)
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs"
    print(f"machine: {machine}, Python {platform.python_version()}, {args.rounds} rounds")
    heading = f"{'pyperf median':>14} {'evbench median':>15} {'ratio':>7}"
    print(f"{'operation':38} {heading}  n (pyperf/evbench)")
    ratios = []
    for name in sorted(theirs):
        p_median, e_median = statistics.median(theirs[name]), statistics.median(ours[name])
        ratio = e_median / p_median
        if p_median >= 1e-6:
            ratios.append(ratio)
        medians = f"{p_median * 1e6:11.3f} µs {e_median * 1e6:12.3f} µs"
        print(f"{name:38} {medians} {ratio:7.3f}  {len(theirs[name])}/{len(ours[name])}")
    pyperf_wall, evbench_wall = (statistics.median(walls[t]) for t in ("pyperf", "evbench"))
    print(f"wall time per run (median): pyperf {pyperf_wall:.1f} s, evbench {evbench_wall:.1f} s")
    if ratios:
        worst = max(abs(r - 1) for r in ratios)
        middle = statistics.median(ratios)
        print(f"operations >= 1 µs: median ratio {middle:.3f}, worst {worst:+.1%}")
    print(json.dumps({"pyperf_wall_s": walls["pyperf"], "evbench_wall_s": walls["evbench"]}))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == PYPERF_MODE:
        profile_name, names = sys.argv[2], sys.argv[3].split(",")
        del sys.argv[1:4]
        _pyperf_runner(profile_name, names)
    else:
        main()
