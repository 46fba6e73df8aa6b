"""Throttling, as the kernel says it, not as guessed from a low clock.

Three signs count: a policy's scaling_max_freq below its cpuinfo_max_freq (a
thermal or power limit capped the clock), a cooling device whose cur_state is
above zero, and a thermal zone at or above its passive trip point. A current
frequency below the maximum on its own is the governor saving power, not
throttling, and is not reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evbench_agent.telemetry.sysfs import Sensors


def reasons(sensors: Sensors, reading: dict[str, Any]) -> list[str]:
    """Why the kernel is throttling at the moment of `reading` (empty: it is not).

    The reasons are stable names (the values are in the sample), so a reason
    that lasts is one event, not one per changed value.
    """
    found = []
    for policy in sensors.cpufreq:
        cap = reading["freq_hz"].get(f"cpu{policy.cpus[0]}", {}).get("max")
        if cap is not None and cap < policy.cpuinfo_max_hz:
            name = policy.path.rstrip("/").rsplit("/", 1)[-1]
            found.append(f"{name} scaling_max_freq < cpuinfo_max_freq")
    for device in sensors.cooling:
        state = reading["cooling_state"].get(device.name)
        if state:
            found.append(f"{device.name} ({device.type}) cur_state > 0")
    for zone in sensors.zones:
        trip = zone.passive_trip_c()
        temp = reading["zones_c"].get(zone.name)
        if trip is not None and temp is not None and temp >= trip:
            found.append(f"{zone.name} ({zone.type}) at or above passive trip {trip:g} °C")
    return found


class ThrottleTracker:
    """Turns per-sample reasons into start and end events, one per reason."""

    def __init__(self) -> None:
        self.active: set[str] = set()

    def update(self, t_ns: int, current: Iterable[str]) -> list[dict[str, Any]]:
        current = set(current)
        events = [
            {"type": "throttle_end", "t_ns": t_ns, "reason": reason}
            for reason in sorted(self.active - current)
        ]
        events += [
            {"type": "throttle_start", "t_ns": t_ns, "reason": reason}
            for reason in sorted(current - self.active)
        ]
        self.active = current
        return events
