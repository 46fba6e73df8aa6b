"""Clocks and scheduling for the periodic sender.

Times come from `time.perf_counter_ns` (CLOCK_MONOTONIC on Linux). Real-time
mode asks for SCHED_FIFO and a 1 ns timer slack and records what was granted:
the kernel reports a real-time task's slack as 0, and an unprivileged process
keeps SCHED_OTHER and the default 50 µs slack.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: prctl options (linux/prctl.h).
PR_SET_TIMERSLACK = 29
PR_GET_TIMERSLACK = 30
#: SCHED_FIFO priority asked for: above ordinary IRQ threads' default 50, as cyclictest -p 80.
FIFO_PRIORITY = 80

clock_ns = time.perf_counter_ns


def thread_cpu_ns() -> int:
    """CPU time (user + system) of the calling thread."""
    return time.clock_gettime_ns(time.CLOCK_THREAD_CPUTIME_ID)


def _prctl() -> Callable[..., int]:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def timer_slack_ns() -> int | None:
    """The calling thread's timer slack, or None where prctl is unavailable."""
    try:
        value = _prctl()(PR_GET_TIMERSLACK, 0, 0, 0, 0)
    except (OSError, AttributeError):
        return None
    return value if value >= 0 else None


@dataclass(frozen=True)
class Scheduling:
    """What the sender ran under: asked for, and granted."""

    realtime_requested: bool
    policy: str
    priority: int
    timer_slack_ns: int | None

    @property
    def realtime_granted(self) -> bool:
        return self.policy == "SCHED_FIFO"

    def as_params(self) -> dict[str, Any]:
        return {
            "realtime": self.realtime_requested,
            "realtime_granted": self.realtime_granted,
            "policy": self.policy,
            "timer_slack_ns": self.timer_slack_ns,
        }


_POLICY_NAMES = {
    os.SCHED_OTHER: "SCHED_OTHER",
    os.SCHED_FIFO: "SCHED_FIFO",
    os.SCHED_RR: "SCHED_RR",
}


def current(realtime_requested: bool = False) -> Scheduling:
    policy = os.sched_getscheduler(0)
    return Scheduling(
        realtime_requested,
        _POLICY_NAMES.get(policy, str(policy)),
        os.sched_getparam(0).sched_priority,
        timer_slack_ns(),
    )


def enter_realtime() -> Scheduling:
    """Ask for SCHED_FIFO and a 1 ns timer slack; report what was granted, never raise."""
    # What is refused shows in what reads back: the run records it, never fails on it.
    with contextlib.suppress(OSError, AttributeError):
        _prctl()(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    with contextlib.suppress(PermissionError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(FIFO_PRIORITY))
    return current(realtime_requested=True)


def leave_realtime(previous: Scheduling) -> None:
    """Back to ordinary scheduling (and the default slack) after a real-time phase."""
    if previous.policy == "SCHED_OTHER":
        with contextlib.suppress(PermissionError):
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    if previous.timer_slack_ns:
        with contextlib.suppress(OSError, AttributeError):
            _prctl()(PR_SET_TIMERSLACK, previous.timer_slack_ns, 0, 0, 0)
