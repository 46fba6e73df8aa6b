"""The board's own wake-up latency at the link period, cyclictest's way.

A plain sleeper: one absolute `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`
per period, then the clock is read; the latency is how long after the
requested time it woke (cyclictest's "Act" values, without its real-time
priority unless the run asked for it). This is what an application that
sleeps once per message period sees on this board. The link sender's
`send_lateness` is smaller: it sleeps twice per tick (client.PRE_WAKE_S) and
so measures the sender's punctuality, not the board's timer latency.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from collections.abc import Callable

CLOCK_MONOTONIC = 1
TIMER_ABSTIME = 1
METHOD = "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) once per period, latency = now - target"


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _absolute_sleeper() -> Callable[[int], None] | None:
    """A function that sleeps until a CLOCK_MONOTONIC time in ns, or None without libc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        nanosleep = libc.clock_nanosleep
    except (OSError, AttributeError):
        return None
    nanosleep.argtypes = [
        ctypes.c_int,
        ctypes.c_int,
        ctypes.POINTER(_Timespec),
        ctypes.POINTER(_Timespec),
    ]
    nanosleep.restype = ctypes.c_int

    def sleep_until(target_ns: int) -> None:
        spec = _Timespec(target_ns // 1_000_000_000, target_ns % 1_000_000_000)
        while nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
            pass  # EINTR: a signal; sleep on to the same absolute time

    return sleep_until


def probe(period_s: float, count: int) -> list[float]:
    """`count` wake-up latencies, in s, of a plain sleeper with period `period_s`."""
    period = round(period_s * 1e9)
    sleep_until = _absolute_sleeper()
    now = time.clock_gettime_ns
    latencies = []
    target = now(time.CLOCK_MONOTONIC) + period
    for _ in range(count):
        if sleep_until is not None:
            sleep_until(target)
        else:  # no libc clock_nanosleep: one relative sleep, as close as Python gets
            time.sleep(max(0, target - now(time.CLOCK_MONOTONIC)) / 1e9)
        latencies.append((now(time.CLOCK_MONOTONIC) - target) / 1e9)
        target += period
    return latencies
