"""How busy the machine was around one replicate, and whether that was beyond the bound.

pyperf's `check` warns when a system is unstable; evbench measures it around
each replicate a verdict counts (a link phase, a codec worker process), so a
row whose replicates ran on a busy machine can be marked, and a lab can see
why a night was noisy. Around the replicate it reads:

- other processes' CPU: the machine's busy CPU time (user, nice, system, irq,
  softirq) less this run's own (the agent, its responder, workers and sampler:
  the process and its descendants, live or reaped), in % of one core;
- steal: CPU time the hypervisor gave to others, in % of all the CPUs' time;
- the clock: the relative change of the current CPU frequency, start to end.

Whether a replicate was **busy** (the bounds, docs/method.md, "Contention") is
the core's judgment: evbench_core.analysis.contention. Throttling is telemetry's
(throttle.py); these figures need no sensors and work in a VM.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import psutil

from evbench_core.analysis.contention import FREQUENCY_CHANGE, OTHERS_CPU, STEAL

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Snapshot:
    t_ns: int
    busy_s: float  # the machine's busy CPU time, all CPUs
    steal_s: float
    own_s: float  # this process and its descendants (reaped ones included)
    frequency_hz: float | None


def _own_cpu_seconds() -> float:
    me = psutil.Process()
    times = me.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in me.children(recursive=True):
        try:
            child_times = child.cpu_times()
        except psutil.Error:
            continue  # gone since it was listed: counted once reaped
        total += child_times.user + child_times.system
    return total


def _frequency_hz() -> float | None:
    try:
        found = psutil.cpu_freq()
    except (OSError, NotImplementedError, RuntimeError):
        return None
    return found.current * 1e6 if found and found.current else None


def take() -> Snapshot:
    times = psutil.cpu_times()
    busy = times.user + times.nice + times.system
    busy += getattr(times, "irq", 0.0) + getattr(times, "softirq", 0.0)
    return Snapshot(
        t_ns=time.monotonic_ns(),
        busy_s=busy,
        steal_s=getattr(times, "steal", 0.0),
        own_s=_own_cpu_seconds(),
        frequency_hz=_frequency_hz(),
    )


def figures(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """The replicate's figures, in percent, by metric (no frequency where none is read)."""
    wall = (after.t_ns - before.t_ns) / 1e9
    if wall <= 0:
        return {}
    others = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    cpus = os.cpu_count() or 1
    found = {
        OTHERS_CPU: max(0.0, 100.0 * others / wall),
        STEAL: max(0.0, 100.0 * (after.steal_s - before.steal_s) / (wall * cpus)),
    }
    if before.frequency_hz and after.frequency_hz:
        high = max(before.frequency_hz, after.frequency_hz)
        found[FREQUENCY_CHANGE] = 100.0 * abs(after.frequency_hz - before.frequency_hz) / high
    return found
