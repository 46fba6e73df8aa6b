"""The run's memory figures for the manifest: the board's free memory and the agent's peak RSS.

On a 2 GB board that also runs the application it measures, the benchmark's own
footprint matters: the manifest says how much memory the board had available
before and after the run (MemAvailable, the kernel's estimate of what can be
allocated without swapping) and the peak resident set of the agent's processes,
each the kernel's high-water mark (VmHWM): the manager, and the largest
worker. The telemetry sampler is not counted here (telemetry samples the agent's
summed RSS over time, without the sampler).
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path
from typing import Any

MEMINFO = Path("/proc/meminfo")
#: ru_maxrss is in KiB on Linux, in bytes on macOS.
_MAXRSS_UNIT = 1 if sys.platform == "darwin" else 1024


def meminfo_bytes(field: str, meminfo: Path = MEMINFO) -> int | None:
    """A /proc/meminfo (or /proc/PID/status) field in bytes, or None where there is none."""
    try:
        text = meminfo.read_text(encoding="ascii")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == field:
            parts = value.split()  # "  1234 kB"
            if not parts or not parts[0].isdigit():
                return None
            return int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return None


def peak_rss_bytes(status: Path = Path("/proc/self/status")) -> int:
    """This process's peak resident set so far, in bytes.

    VmHWM, the high-water mark of this program's own memory: getrusage's
    ru_maxrss also keeps the parent's resident set from before exec (a
    worker started by a 30 MiB manager would never report less than 30 MiB).
    """
    peak = meminfo_bytes("VmHWM", status)
    if peak is not None:
        return peak
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * _MAXRSS_UNIT  # no /proc


def before_run() -> dict[str, Any]:
    """The manifest's memory section as the run starts."""
    return {
        "total_bytes": meminfo_bytes("MemTotal"),
        "available_before_bytes": meminfo_bytes("MemAvailable"),
        "available_after_bytes": None,
        "manager_peak_rss_bytes": None,
        "worker_peak_rss_bytes": None,
        "method": "MemAvailable from /proc/meminfo; peak RSS: VmHWM of each process",
    }


def after_run(section: dict[str, Any], worker_peak_rss: int | None) -> None:
    """Fill in the figures known once the run has ended."""
    section.update(
        available_after_bytes=meminfo_bytes("MemAvailable"),
        manager_peak_rss_bytes=peak_rss_bytes(),
        worker_peak_rss_bytes=worker_peak_rss,
    )
