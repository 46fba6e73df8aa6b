"""The board's side of board_costs.py: measure on the board, print one JSON document.

Sent over SSH to the board's python3 (`python3 - ZIPAPP REPEATS ...` with this file
on stdin) by benchmarks/board_costs.py, which computes the ratios. Standard library
and psutil only, so it runs on any board the agent runs on. Each figure has its bare
baseline, measured in the same repeat, one right after the other (the order
alternating by repeat, so a drift in the board's speed hits both alike):

- start-up: `python3 PYZ --help` against `python3 -c pass` (CPU from the
  children's rusage, wall from perf_counter);
- a quick run: its wall time against `python3 -c pass`'s, and the manager's peak
  RSS (VmHWM, the manifest's memory section) against a bare interpreter's VmHWM;
- telemetry: the agent's real sampler process (SamplerProcess, imported from the
  zipapp) against a bare psutil loop doing the sampler's psutil calls at the same
  rate, each as its CPU time (/proc/PID/schedstat) over the wall time from its
  first sample on: the share of one core, start-up excluded.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
#: A bare interpreter that reports its own peak RSS (VmHWM, kB) as it ends.
BARE_RSS = "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')][0])"
#: A bare sampling loop: the psutil calls of the agent's Sampler.sample() (CPU per
#: core, memory, load, one process's RSS) and a JSON line, on the same fixed schedule
#: (select on the control pipe), with nothing of evbench. argv: interval, output file.
BARE_SAMPLER = """\
import json, os, select, sys, time
import psutil
interval_ns = int(float(sys.argv[1]) * 1e9)
parent = psutil.Process(os.getppid())
psutil.cpu_percent(percpu=True)
with open(sys.argv[2], "a") as out:
    deadline = time.monotonic_ns()
    while True:
        deadline += interval_ns
        ready, _, _ = select.select([0], [], [], max(0, deadline - time.monotonic_ns()) / 1e9)
        if ready and os.read(0, 4096) == b"":
            break
        per_core = psutil.cpu_percent(percpu=True)
        line = {"type": "sample", "t_ns": time.monotonic_ns(), "cpu": per_core,
                "memory_used": psutil.virtual_memory().used, "load": os.getloadavg(),
                "rss": parent.memory_info().rss}
        out.write(json.dumps(line, separators=(",", ":")) + "\\n")
        out.flush()
"""
COMMAND_TIMEOUT = 3600  # one quick run on an emulated board takes minutes
FIRST_SAMPLE_TIMEOUT = 900


def timed(argv: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """Run argv to the end: (CPU seconds of the child, wall seconds, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        argv, capture_output=True, text=True, check=False, timeout=COMMAND_TIMEOUT, env=env
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.stdout


def alternate(repeat: int, first, second) -> tuple:
    """first() and second(), in that order on even repeats, the other way on odd ones."""
    if repeat % 2 == 0:
        a = first()
        return a, second()
    b = second()
    return first(), b


def startup(pyz: str, repeats: int) -> dict:
    rows = []
    for i in range(repeats):
        bare, agent = alternate(
            i,
            lambda: timed([PYTHON, "-c", "pass"]),
            lambda: timed([PYTHON, pyz, "--help"]),
        )
        rows.append({"bare_cpu_s": bare[0], "bare_wall_s": bare[1],
                     "agent_cpu_s": agent[0], "agent_wall_s": agent[1]})  # fmt: skip
    return {"rows": rows}


def quick_run(pyz: str, run_args: list[str], repeats: int) -> dict:
    rows = []
    work = Path(tempfile.mkdtemp(prefix="board-costs-"))
    try:
        for i in range(repeats):
            out = work / f"run{i}"

            def agent(out: Path = out) -> tuple[float, float, str]:
                return timed([PYTHON, pyz, "run", *run_args, "--out", str(out)])

            bare, run = alternate(i, lambda: timed([PYTHON, "-c", BARE_RSS]), agent)
            manifest = json.loads((out / "manifest.json").read_text())
            if manifest.get("status") != "complete":
                raise SystemExit(f"run {i} is {manifest.get('status')}: {out}")
            memory = manifest["memory"]
            rows.append({
                "bare_wall_s": bare[1],
                "bare_peak_rss_bytes": int(bare[2].strip()) * 1024,
                "run_wall_s": run[1],
                "run_cpu_s": run[0],
                "manager_peak_rss_bytes": memory["manager_peak_rss_bytes"],
                "worker_peak_rss_bytes": memory["worker_peak_rss_bytes"],
            })  # fmt: skip
            shutil.rmtree(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"args": run_args, "rows": rows}


def _cpu_ns(pid: int) -> int:
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def _samples(path: Path) -> int:
    if not path.exists():
        return 0
    return path.read_text().count('"type":"sample"')


def _share(start, stop, pid_of, output: Path, interval_s: float, seconds: float) -> dict:
    """Start a sampler, wait for its first sample, then its CPU share over `seconds`."""
    start()
    try:
        # An emulated board on a loaded machine takes minutes to start a Python process.
        deadline = time.monotonic() + FIRST_SAMPLE_TIMEOUT
        while _samples(output) < 1:
            if time.monotonic() > deadline:
                raise SystemExit(f"no sample in {output} within {FIRST_SAMPLE_TIMEOUT} s")
            time.sleep(interval_s / 10)
        first = _samples(output)
        pid = pid_of()
        cpu0, wall0 = _cpu_ns(pid), time.monotonic_ns()
        time.sleep(seconds)
        cpu1, wall1 = _cpu_ns(pid), time.monotonic_ns()
        samples = _samples(output) - first
    finally:
        stop()
    return {"samples": samples, "cpu_ns": cpu1 - cpu0, "wall_ns": wall1 - wall0}


def _agent_share(interval_s: float, seconds: float, directory: Path) -> dict:
    from evbench_agent.telemetry import sysfs
    from evbench_agent.telemetry.sampler import SamplerProcess

    output = directory / "agent.jsonl"
    sampler = SamplerProcess(sysfs.discover("/sys"), output, interval_s, cpu=None)
    return _share(
        sampler.start, sampler.stop, lambda: sampler.process.pid, output, interval_s, seconds
    )


def _bare_share(interval_s: float, seconds: float, directory: Path) -> dict:
    output = directory / "bare.jsonl"
    holder: dict = {}

    def start() -> None:
        argv = [PYTHON, "-c", BARE_SAMPLER, str(interval_s), str(output)]
        holder["p"] = subprocess.Popen(argv, stdin=subprocess.PIPE)

    def stop() -> None:
        holder["p"].stdin.close()
        holder["p"].wait(timeout=60)

    return _share(start, stop, lambda: holder["p"].pid, output, interval_s, seconds)


def telemetry(pyz: str, rates: list[tuple[float, float]], repeats: int) -> dict:
    # The sampler process runs `python3 -m evbench_agent.telemetry.sampler`: from the zipapp.
    sys.path.insert(0, pyz)
    os.environ["PYTHONPATH"] = pyz
    result = {}
    for interval_s, seconds in rates:
        rows = []
        for i in range(repeats):
            with tempfile.TemporaryDirectory(prefix="board-costs-") as tmp:
                bare, agent = alternate(
                    i,
                    lambda i=interval_s, s=seconds, t=tmp: _bare_share(i, s, Path(t)),
                    lambda i=interval_s, s=seconds, t=tmp: _agent_share(i, s, Path(t)),
                )
            rows.append({"bare": bare, "agent": agent})
        result[f"{1 / interval_s:g}"] = {"interval_s": interval_s, "seconds": seconds, "rows": rows}
    return result


def board() -> dict:
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith(("CPU part", "model name")):
            model = line.split(":", 1)[1].strip()
            break
    import psutil

    return {
        "machine": platform.machine(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "psutil": psutil.__version__,
        "cpus": os.cpu_count(),
        "cpu": model,
        "load_avg_start": list(os.getloadavg()),
    }


def main() -> None:
    pyz, repeats, run_repeats, what = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    run_args = json.loads(sys.argv[5])
    rates = [tuple(rate) for rate in json.loads(sys.argv[6])]
    pyz = str(Path(pyz).expanduser().resolve())
    figures: dict = {"board": board(), "repeats": repeats}
    parts = what.split(",")
    if "startup" in parts:
        figures["startup"] = startup(pyz, repeats)
    if "run" in parts:
        figures["run"] = quick_run(pyz, run_args, run_repeats)
    if "telemetry" in parts:
        figures["telemetry"] = telemetry(pyz, rates, repeats)
    figures["board"]["load_avg_end"] = list(os.getloadavg())
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
