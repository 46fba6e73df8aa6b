"""Start-up of the command lines (issue 21, item 1): median CPU and wall time of n runs.

    .venv/bin/python benchmarks/startup.py [-n 10]

CPU time (user + system, from the child's rusage) is the figure to compare on a
loaded machine: wall time there mostly measures the wait for a core. The bare
interpreter (`python -c pass`) is measured in the same run as the baseline.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

BIN = Path(sys.executable).parent
#: (label, command line, aim in seconds of CPU or None)
COMMANDS = (
    ("python -c pass", [sys.executable, "-c", "pass"], None),
    ("evbench --help", [str(BIN / "evbench"), "--help"], 0.15),
    ("evbench flash --help", [str(BIN / "evbench"), "flash", "--help"], 0.15),
    ("evbench-agent --help", [str(BIN / "evbench-agent"), "--help"], 0.10),
)


def measure(argv: list[str]) -> tuple[float, float]:
    """One run: (CPU seconds, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    # A blocking wait, capped by a timer: Popen.wait(timeout) polls with sleeps of up
    # to 50 ms, which added some 40 ms to every wall figure here.
    cap = threading.Timer(60, process.kill)
    cap.start()
    try:
        status = process.wait()
    finally:
        cap.cancel()
    wall = time.perf_counter() - started
    if status != 0:
        raise subprocess.CalledProcessError(status, argv)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="runs per command (default 10)")
    n = parser.parse_args().n
    print(f"load average {os.getloadavg()[0]:.1f}; n={n} per command, runs interleaved")
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in COMMANDS}
    for _ in range(n):  # interleaved, so a change in load hits every command alike
        for label, argv, _ in COMMANDS:
            samples[label].append(measure(argv))
    for label, _, aim in COMMANDS:
        cpu = [c for c, _ in samples[label]]
        wall = [w for _, w in samples[label]]
        verdict = "" if aim is None else (" meets" if statistics.median(cpu) <= aim else " MISSES")
        aim_text = "" if aim is None else f"; aim {aim:.2f} s CPU:{verdict}"
        print(
            f"{label:24s} CPU median {statistics.median(cpu) * 1000:6.1f} ms "
            f"(min {min(cpu) * 1000:.1f}, max {max(cpu) * 1000:.1f}); "
            f"wall median {statistics.median(wall) * 1000:7.1f} ms{aim_text}"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
