"""The telemetry sampler: a separate process that does not disturb what it measures.

It runs in its own interpreter (a thread would compete for the measuring
process's interpreter lock), optionally pinned to a CPU, and appends one JSON
line per sample to the run's telemetry file. Each sample carries
`time.monotonic_ns()`, the clock of the run's markers (CLOCK_MONOTONIC is
system-wide, so the sampler, the runner and the workers share it).

The parent sends a JSON config as the first line on the sampler's standard
input and closes it to stop the sampler: the sampler waits on that pipe
between samples, so it also ends by itself when the agent dies, leaving no
orphan. It ignores SIGINT: Ctrl-C reaches the whole process group, and the
runner stops the sampler itself after recording what was measured.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, TextIO

from evbench_agent.platform import memory
from evbench_agent.telemetry import throttle
from evbench_agent.telemetry.reader import PowerSum, SensorReader
from evbench_agent.telemetry.sysfs import Sensors

log = logging.getLogger(__name__)

FORMAT = "evbench-telemetry"
VERSION = 1
DEFAULT_INTERVAL_S = 1.0
MIN_INTERVAL_S = 0.1
#: How long stop() waits for the last sample to be written before killing.
STOP_TIMEOUT_S = 10.0


class Sampler:
    """Takes samples in the current process (the sampler process's main loop uses it)."""

    def __init__(self, sensors: Sensors, agent_pid: int, output: TextIO) -> None:
        # psutil here, in the sampler process only: the agent that starts it stays lighter.
        import psutil

        from evbench_agent.telemetry.processes import AgentProcesses

        self.sensors = sensors
        self.output = output
        self.reader = SensorReader(sensors, self._lost)
        self.processes = AgentProcesses(agent_pid, exclude=os.getpid())
        self.tracker = throttle.ThrottleTracker()
        self.rules = throttle.ThrottleRules(sensors)
        self.power = PowerSum(sensors)
        # the first calls only set the reference points CPU use is measured from
        psutil.cpu_percent(percpu=True)
        self.processes.usage(time.monotonic_ns())

    def _write(self, line: dict[str, Any]) -> None:
        self.output.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")

    def _lost(self, sensor: str, error: str) -> None:
        log.warning("telemetry: sensor %s lost, no longer read: %s", sensor, error)
        self._write(
            {"type": "sensor_lost", "t_ns": time.monotonic_ns(), "sensor": sensor, "error": error}
        )

    def header(self, interval_s: float) -> None:
        self._write(
            {
                "type": "header",
                "format": FORMAT,
                "version": VERSION,
                "clock": "time.monotonic_ns (CLOCK_MONOTONIC)",
                "interval_s": interval_s,
                "units": {
                    "cpu_percent": "percent of all cores (per core: of that core)",
                    "zones_c": "°C",
                    "freq_hz": "Hz",
                    "hwmon": "°C, W, A or V by channel (see sensors)",
                    "power_w": "W, summed over the monitored rails",
                    "memory_used": "bytes",
                    "load_avg": "runnable tasks (1, 5, 15 min)",
                    "agent_cpu_percent": "percent of one core",
                    "agent_rss": "bytes, summed over the agent's processes",
                },
                "sensors": self.sensors.as_dict(),
            }
        )

    def sample(self) -> dict[str, Any]:
        import psutil  # imported by __init__ already: a lookup

        t_ns = time.monotonic_ns()
        per_core = psutil.cpu_percent(percpu=True)
        reading = self.reader.read()
        agent_cpu, agent_rss = self.processes.usage(t_ns)
        reasons = self.rules.reasons(reading)
        for event in self.tracker.update(t_ns, reasons):
            self._write(event)
        line = {
            "type": "sample",
            "t_ns": t_ns,
            "cpu_percent": sum(per_core) / len(per_core),
            "cpu_percent_per_core": per_core,
            **reading,
            "power_w": self.power.watts(reading["hwmon"]),
            "memory_used": psutil.virtual_memory().used,
            "load_avg": list(os.getloadavg()),
            "agent_cpu_percent": agent_cpu,
            "agent_rss": agent_rss,
            "throttle": reasons,
        }
        self._write(line)
        self.output.flush()
        return line


def _stop_requested(stdin_fd: int, timeout_s: float) -> bool:
    """Wait up to `timeout_s` on the control pipe; True when it closed (stop)."""
    ready, _, _ = select.select([stdin_fd], [], [], max(0.0, timeout_s))
    return bool(ready) and os.read(stdin_fd, 4096) == b""


def serve(stdin_fd: int = 0) -> None:
    """The sampler process: read the config line, then sample on a fixed schedule.

    If it dies of an error, the traceback goes into the telemetry file as a
    `sampler_died` line (the run keeps it, and its manifest's telemetry facts
    carry it), then to standard error, which nobody may be reading."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    config_line = b""
    while not config_line.endswith(b"\n"):
        chunk = os.read(stdin_fd, 65536)
        if not chunk:
            return
        config_line += chunk
    config = json.loads(config_line)
    try:
        _sample_until_stopped(config, stdin_fd)
    except Exception as error:
        _record_death(config["output"], error)
        raise


def _record_death(output: str, error: Exception) -> None:
    """Append the traceback of the error that ends the sampler to its telemetry file."""
    line = {
        "type": "sampler_died",
        "t_ns": time.monotonic_ns(),
        "error": f"{type(error).__name__}: {error}",
        "traceback": traceback.format_exc(),
    }
    text = json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
    # no file to write to (OSError): standard error only
    with contextlib.suppress(OSError), open(output, "a+b") as stream:
        stream.seek(0, os.SEEK_END)
        if stream.tell() > 0:
            stream.seek(-1, os.SEEK_END)
            if stream.read(1) != b"\n":  # a line torn by the error ends here
                text = "\n" + text
        stream.write(text.encode("utf-8", "backslashreplace"))
        stream.flush()
        os.fsync(stream.fileno())


def _sample_until_stopped(config: dict[str, Any], stdin_fd: int) -> None:
    if config.get("cpu") is not None:
        os.sched_setaffinity(0, {config["cpu"]})
    interval_ns = int(config["interval_s"] * 1e9)
    sensors = Sensors.from_dict(config["sensors"])
    with open(config["output"], "a", encoding="utf-8") as output:
        sampler = Sampler(sensors, config["agent_pid"], output)
        sampler.header(config["interval_s"])
        # A schedule on the monotonic clock, so the sampling time does not add up as
        # drift. The first sample comes one interval in (CPU use needs a span to
        # cover); the last is taken at stop, over the part of an interval since.
        deadline = time.monotonic_ns()
        stopped = False
        while not stopped:
            deadline += interval_ns
            now = time.monotonic_ns()
            if deadline < now:  # a stall (suspend, overload): skip, do not burst
                deadline = now + interval_ns - (now - deadline) % interval_ns
            stopped = _stop_requested(stdin_fd, (deadline - now) / 1e9)
            sampler.sample()
        output.flush()
        os.fsync(output.fileno())


class SamplerProcess:
    """The parent's handle: start() the sampler, stop() it (also on failures)."""

    def __init__(self, sensors: Sensors, output: Path, interval_s: float, cpu: int | None):
        self.config = {
            "sensors": sensors.as_dict(),
            "output": str(output),
            "interval_s": interval_s,
            "cpu": cpu,
            "agent_pid": os.getpid(),
        }
        self.process: subprocess.Popen[bytes] | None = None
        #: The sampler's own peak RSS (bytes), read as it is stopped; apart from the agent's.
        self.peak_rss_bytes: int | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "evbench_agent.telemetry.sampler"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,  # the agent's stdout may be the host's progress channel
        )
        assert self.process.stdin is not None  # stdin=PIPE
        # A sampler killed before it read its configuration breaks the pipe; stop()
        # gives its exit status, which makes the run partial, as any other death does.
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.write((json.dumps(self.config) + "\n").encode())
            self.process.stdin.flush()

    def stop(self) -> int | None:
        """Close the control pipe and wait; kill if the sampler does not end. Its exit code."""
        if self.process is None:
            return None
        process, self.process = self.process, None
        self.peak_rss_bytes = memory.meminfo_bytes("VmHWM", Path(f"/proc/{process.pid}/status"))
        assert process.stdin is not None  # stdin=PIPE
        with contextlib.suppress(OSError):  # it died already; wait() below says how
            process.stdin.close()
        try:
            return process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()


if __name__ == "__main__":
    serve()
