"""What makes results noisy on this machine, as pyperf's system check reports it.

`evbench-agent info` prints these warnings; a run records them in its
manifest. They are advice: nothing here changes the machine.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil

from evbench_agent.telemetry.sysfs import SYSFS, Sensors, discover, read_text

#: A process using more than this share of one core while idle is "busy".
BUSY_PERCENT = 10.0
BUSY_WINDOW_S = 0.5


def _governor_warnings(sensors: Sensors) -> list[str]:
    if not sensors.cpufreq:
        return ["no cpufreq: the CPU clock can be neither read nor fixed here (VM or container?)"]
    warnings = []
    for policy in sensors.cpufreq:
        if policy.governor != "performance":
            warnings.append(
                f"cpufreq governor of {Path(policy.path).name} is {policy.governor!r}, not fixed: "
                "the clock follows the load (use --governor performance, as root)"
            )
    return warnings


def _boost_warnings(root: Path) -> list[str]:
    checks = (
        ("devices/system/cpu/cpufreq/boost", "1", "frequency boost is on"),
        ("devices/system/cpu/intel_pstate/no_turbo", "0", "Intel Turbo Boost is on"),
    )
    warnings = []
    for path, noisy, what in checks:
        try:
            if read_text(root / path) == noisy:
                warnings.append(f"{what}: the clock depends on temperature and load ({path})")
        except OSError:
            continue
    return warnings


def busy_processes(window_s: float = BUSY_WINDOW_S) -> list[tuple[str, int, float]]:
    """(name, pid, percent of one core) of other processes busy over `window_s`."""
    own = {os.getpid(), os.getppid()}
    processes = [p for p in psutil.process_iter(["name"]) if p.pid not in own]
    for process in processes:
        try:
            process.cpu_percent(None)
        except psutil.Error:
            continue
    time.sleep(window_s)
    busy = []
    for process in processes:
        try:
            percent = process.cpu_percent(None)
        except psutil.Error:
            continue
        if percent > BUSY_PERCENT:
            busy.append((process.info["name"], process.pid, percent))
    return sorted(busy, key=lambda item: -item[2])


def _thermal_warnings(sensors: Sensors) -> list[str]:
    warnings = []
    for zone in sensors.zones:
        trip = zone.passive_trip_c()
        try:
            temp = int(read_text(Path(zone.path) / "temp")) / 1000
        except (OSError, ValueError):
            continue
        if trip is not None and temp >= trip - 10:
            warnings.append(
                f"{zone.name} ({zone.type}) is at {temp:g} °C, within 10 °C of its passive trip "
                f"point {trip:g} °C: the kernel may throttle (use --cool-to)"
            )
    return warnings


def warnings(root: Path | str = SYSFS, window_s: float = BUSY_WINDOW_S) -> list[str]:
    """Every noise warning for this machine, most important first."""
    root = Path(root)
    sensors = discover(root)
    found = _governor_warnings(sensors) + _boost_warnings(root) + _thermal_warnings(sensors)
    busy = busy_processes(window_s)
    if busy:
        listed = ", ".join(f"{name} (pid {pid}, {pct:.0f} %)" for name, pid, pct in busy[:5])
        found.append(f"{len(busy)} other busy process(es) use the CPU: {listed}")
    return found
