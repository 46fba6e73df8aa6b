"""evbench's codec suite against pyperf, timing the same operations in one run.

    python benchmarks/pyperf_vs_evbench.py [--profile seed] [--codecs json,protobuf]

Both time the callables of evbench_agent.suites.codec.operations with the
garbage collector enabled (pyperf's bench_func leaves it on; so does evbench
by default). pyperf runs with its defaults (20 worker processes, 3 values
each after a warm-up, 100 ms per value); evbench with its full plan (10
processes x 10 values, >= 1 ms per value). Prints, per operation, both
medians, their ratio and each tool's wall time. Run it on a quiet machine.
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


def _evbench_medians(run_dir: Path, profile: str) -> dict[str, tuple[float, int]]:
    from evbench_agent.results import load_run

    medians = {}
    for record in load_run(run_dir).records:
        if record["suite"] == "codec" and record["unit"] == "s" and record["profile"] == profile:
            key = f"{record['profile']}/{record['codec']}/{record['metric']}"
            medians[key] = (record["median"], record["n"])
    return medians


def _pyperf_medians(path: Path) -> dict[str, tuple[float, int]]:
    import pyperf

    suite = pyperf.BenchmarkSuite.load(str(path))
    return {b.get_name(): (b.median(), len(b.get_values())) for b in suite.get_benchmarks()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="seed")
    parser.add_argument("--codecs", default="json,protobuf")
    args = parser.parse_args()
    codec_names = args.codecs.split(",")
    with tempfile.TemporaryDirectory() as scratch:
        pyperf_json = Path(scratch) / "pyperf.json"
        evbench_dir = Path(scratch) / "evbench"
        pyperf_wall = _time_pyperf(args.profile, codec_names, pyperf_json)
        evbench_wall = _time_evbench(args.profile, codec_names, evbench_dir)
        ours, theirs = _evbench_medians(evbench_dir, args.profile), _pyperf_medians(pyperf_json)
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs"
    print(f"machine: {machine}, Python {platform.python_version()}")
    heading = f"{'pyperf median':>14} {'evbench median':>15} {'ratio':>7}"
    print(f"{'operation':38} {heading}  n (pyperf/evbench)")
    ratios = []
    for name in sorted(theirs):
        (p_median, p_n), (e_median, e_n) = theirs[name], ours[name]
        ratio = e_median / p_median
        if p_median >= 1e-6:
            ratios.append(ratio)
        medians = f"{p_median * 1e6:11.3f} µs {e_median * 1e6:12.3f} µs"
        print(f"{name:38} {medians} {ratio:7.3f}  {p_n}/{e_n}")
    print(f"wall time: pyperf {pyperf_wall:.1f} s, evbench {evbench_wall:.1f} s")
    if ratios:
        worst = max(abs(r - 1) for r in ratios)
        middle = statistics.median(ratios)
        print(f"operations >= 1 µs: median ratio {middle:.3f}, worst {worst:+.1%}")
    print(json.dumps({"pyperf_wall_s": pyperf_wall, "evbench_wall_s": evbench_wall}))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == PYPERF_MODE:
        profile_name, names = sys.argv[2], sys.argv[3].split(",")
        del sys.argv[1:4]
        _pyperf_runner(profile_name, names)
    else:
        main()
