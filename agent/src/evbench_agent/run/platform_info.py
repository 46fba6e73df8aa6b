"""What the run ran on: board, CPU, kernel, Python, protobuf and codec versions."""

from __future__ import annotations

import os
import platform
import socket
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from evbench_agent import __version__, codecs
from evbench_agent.native import codec as native_codec
from evbench_agent.native import runtimes
from evbench_core import results

#: ARM's part numbers (MIDR) for the cores evbench meets on its boards.
ARM_PARTS = {
    "0xd03": "Cortex-A53",
    "0xd04": "Cortex-A35",
    "0xd05": "Cortex-A55",
    "0xd07": "Cortex-A57",
    "0xd08": "Cortex-A72",
    "0xd0b": "Cortex-A76",
}

DEVICE_TREE_MODEL = (
    Path("/proc/device-tree/model"),
    Path("/sys/firmware/devicetree/base/model"),
)


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().rstrip(b"\0\n").decode(errors="replace")
    except OSError:
        return None


def board_model(root: Path = Path("/")) -> str | None:
    """The board's name from the device tree; None where there is none (x86, VMs)."""
    for path in DEVICE_TREE_MODEL:
        model = _read(root / path.relative_to("/"))
        if model:
            return model
    return None


def cpu_model(cpuinfo: str | None = None) -> str:
    """A readable CPU name: x86's 'model name', or ARM's core from 'CPU part'."""
    if cpuinfo is None:
        cpuinfo = _read(Path("/proc/cpuinfo")) or ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    if "model name" in fields:
        return fields["model name"]
    part = fields.get("CPU part")
    if part:
        return ARM_PARTS.get(part.lower(), f"ARM part {part}")
    return platform.processor() or platform.machine()


def os_release() -> str | None:
    text = _read(Path("/etc/os-release")) or ""
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return None


def clock() -> dict[str, Any]:
    info = time.get_clock_info("perf_counter")
    return {
        "timer": "time.perf_counter_ns",
        "implementation": info.implementation,
        "resolution_s": info.resolution,
        "clocksource": _read(
            Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        ),
    }


def collect() -> dict[str, Any]:
    """The platform section of the manifest (and of `evbench-agent info`)."""
    import google.protobuf

    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "hostname": socket.gethostname(),
        "board": board_model(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "affinity": affinity,
        "kernel": platform.release(),
        "os": os_release(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        # A debug build (--with-pydebug) or -X dev runs far slower than a board's Python.
        "python_debug": bool(sysconfig.get_config_var("Py_DEBUG"))
        or hasattr(sys, "gettotalrefcount"),
        "python_dev_mode": bool(sys.flags.dev_mode),
        # The load when the run began (1, 5, 15 min): the machine's state before measuring.
        "load_avg": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "protobuf": google.protobuf.__version__,
        "protobuf_backend": codecs.protobuf_backend(),
        # Found, not imported (RSS): a run's own codecs are imported and checked by its spec.
        "codecs": {name: codecs.CODECS[name].version() for name in codecs.installed()},
        "codecs_missing": [name for name in codecs.CODECS if name not in codecs.installed()],
        # C and C++ runtimes whose harness is installed (docs/native-codecs.md).
        "native_codecs": native_codec.describe_installed(),
        # The C link responder `--responder c` would start (docs/link.md), or None.
        "link_responder": runtimes.describe_responder(),
        "agent": __version__,
        "results_format": results.VERSION,
        "clock": clock(),
    }
