"""What the telemetry sampler costs: CPU time per sample, and its share of one core.

Run by hand on a quiet machine, never in CI:

    .venv/bin/python benchmarks/telemetry_cost.py [--sysfs ROOT] [--seconds-1hz S]

Two measurements:

1. Per sample, in this process: `Sampler.sample()` (psutil CPU per core,
   memory, load average, every discovered sysfs sensor, the agent processes'
   CPU and RSS, the JSON line written) repeated N times; CPU time from
   `time.process_time_ns`, wall time from `time.perf_counter_ns`. Reported as
   median with min-max and n.
2. The real sampler process, as a run starts it, at 1 Hz and at 10 Hz: its CPU
   time, read from /proc/PID/schedstat (nanoseconds; /proc/PID/stat counts in
   10 ms ticks, too coarse), from its first sample to its stop, divided by
   the wall time between: the share of one core it takes, start-up excluded.

--sysfs points the sampler at another sysfs tree (for instance one laid out
like a board's) to see the cost with more sensors than this machine has.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from evbench_agent.telemetry import sysfs
from evbench_agent.telemetry.processes import AgentProcesses
from evbench_agent.telemetry.sampler import Sampler, SamplerProcess


def _summary(values_ns: list[int]) -> str:
    values = sorted(v / 1e3 for v in values_ns)
    return (
        f"median {statistics.median(values):.1f} µs "
        f"[min {values[0]:.1f}, max {values[-1]:.1f}], n = {len(values)}"
    )


def per_sample(sensors: sysfs.Sensors, count: int) -> tuple[list[int], list[int]]:
    with tempfile.TemporaryFile("w+", encoding="utf-8") as output:
        sampler = Sampler(sensors, os.getpid(), output)
        # in a run the sampler counts the agent, not itself; here this process is the agent
        sampler.processes = AgentProcesses(os.getpid(), exclude=-1)
        sampler.sample()  # first-call costs (imports, psutil caches) are not the steady state
        cpu, wall = [], []
        for _ in range(count):
            cpu_start, wall_start = time.process_time_ns(), time.perf_counter_ns()
            sampler.sample()
            cpu.append(time.process_time_ns() - cpu_start)
            wall.append(time.perf_counter_ns() - wall_start)
            time.sleep(0.05)  # let CPU counters move, as between real samples
    return cpu, wall


def _cpu_ns(pid: int) -> int:
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def _samples(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text().splitlines() if '"type":"sample"' in line)


def process_share(sensors: sysfs.Sensors, interval_s: float, seconds: float) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        output = Path(directory) / "telemetry.jsonl"
        sampler = SamplerProcess(sensors, output, interval_s, cpu=None)
        sampler.start()
        pid = sampler.process.pid
        try:
            deadline = time.monotonic() + 30
            while _samples(output) < 1:
                if time.monotonic() > deadline:
                    raise SystemExit("the sampler wrote no sample in 30 s")
                time.sleep(interval_s / 10)
            first_samples = _samples(output)
            cpu_start, wall_start = _cpu_ns(pid), time.monotonic_ns()
            time.sleep(seconds)
            cpu_end, wall_end = _cpu_ns(pid), time.monotonic_ns()
            samples = _samples(output) - first_samples
        finally:
            sampler.stop()
    cpu_ns, wall_ns = cpu_end - cpu_start, wall_end - wall_start
    return {
        "interval_s": interval_s,
        "wall_s": wall_ns / 1e9,
        "samples": samples,
        "cpu_s": cpu_ns / 1e9,
        "cpu_per_sample_us": cpu_ns / max(samples, 1) / 1e3,
        "share_of_one_core_percent": cpu_ns / wall_ns * 100,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sysfs", default="/sys", help="sysfs root (default /sys)")
    parser.add_argument("--count", type=int, default=500, help="in-process samples")
    parser.add_argument("--seconds-1hz", type=float, default=60.0)
    parser.add_argument("--seconds-10hz", type=float, default=20.0)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(argv)
    sensors = sysfs.discover(args.sysfs)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    print(f"sensors under {args.sysfs}: {json.dumps(sensors.summary(), ensure_ascii=False)}")
    cpu, wall = per_sample(sensors, args.count)
    print(f"per sample, CPU time (process_time_ns): {_summary(cpu)}")
    print(f"per sample, wall time (perf_counter_ns): {_summary(wall)}")
    figures = {"per_sample_cpu_ns": cpu, "per_sample_wall_ns": wall}
    for interval, seconds in ((1.0, args.seconds_1hz), (0.1, args.seconds_10hz)):
        share = process_share(sensors, interval, seconds)
        figures[f"process_{1 / interval:g}hz"] = share
        print(
            f"sampler process at {1 / interval:g} Hz over {share['wall_s']:.1f} s: "
            f"{share['samples']} samples, CPU {share['cpu_s'] * 1e3:.2f} ms "
            f"({share['cpu_per_sample_us']:.0f} µs per sample) = "
            f"{share['share_of_one_core_percent']:.4f} % of one core "
            "(schedstat CPU time / wall time, start-up excluded)"
        )
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
