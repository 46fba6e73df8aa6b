"""Throttling, as the kernel says it, not as guessed from a low clock.

Three signs count: a policy's scaling_max_freq below its cpuinfo_max_freq (a
thermal or power limit capped the clock), a cooling device that limits the CPU
whose cur_state is above zero, and a thermal zone at or above its passive trip
point. A current frequency below the maximum on its own is the governor saving
power, not throttling, and is not reported; nor is a fan spinning.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evbench_agent.telemetry.sysfs import Sensors

#: The cooling devices that slow the CPU (or its memory bus) down, by the type the
#: kernel names them with, old and newer kernels: drivers/thermal/cpufreq_cooling.c
#: "thermal-cpufreq-%d", then "cpufreq-%s" (cpufreq-cpu0); cpuidle_cooling.c
#: "thermal-idle-%d", then "idle-%s"; devfreq_cooling.c "thermal-devfreq-%d", then
#: "devfreq-%s". A fan (pwm-fan, gpio-fan, ACPI's "Fan") cools without slowing anything.
CPU_LIMITING_PREFIXES = (
    "thermal-cpufreq-", "cpufreq-", "thermal-idle-", "idle-", "thermal-devfreq-", "devfreq"
)  # fmt: skip
#: drivers/thermal/intel/intel_powerclamp.c (idle injection) and the ACPI processor
#: driver's (drivers/acpi/processor_thermal.c: P-state and T-state limits).
CPU_LIMITING_TYPES = ("intel_powerclamp", "Processor")


def limits_the_cpu(device_type: str) -> bool:
    """Whether a cooling device of this type throttles the CPU when its state is above 0."""
    return device_type in CPU_LIMITING_TYPES or device_type.startswith(CPU_LIMITING_PREFIXES)


class ThrottleRules:
    """The three signs, worked out once per board: the sampler checks them every sample.

    The reasons are stable names (the values are in the sample), so a reason
    that lasts is one event, not one per changed value.
    """

    def __init__(self, sensors: Sensors) -> None:
        self.caps = []
        for policy in sensors.cpufreq:
            name = policy.path.rstrip("/").rsplit("/", 1)[-1]
            reason = f"{name} scaling_max_freq < cpuinfo_max_freq"
            self.caps.append((f"cpu{policy.cpus[0]}", policy.cpuinfo_max_hz, reason))
        self.cooling = [
            (d.name, f"{d.name} ({d.type}) cur_state > 0")
            for d in sensors.cooling
            if limits_the_cpu(d.type)
        ]
        self.trips = [
            (zone.name, trip, f"{zone.name} ({zone.type}) at or above passive trip {trip:g} °C")
            for zone in sensors.zones
            if (trip := zone.passive_trip_c()) is not None
        ]

    def reasons(self, reading: dict[str, Any]) -> list[str]:
        """Why the kernel is throttling at the moment of `reading` (empty: it is not)."""
        found = []
        freq, cooling, zones = reading["freq_hz"], reading["cooling_state"], reading["zones_c"]
        for cpu, maximum, reason in self.caps:
            cap = freq.get(cpu, {}).get("max")
            if cap is not None and cap < maximum:
                found.append(reason)
        found += [reason for name, reason in self.cooling if cooling.get(name)]
        for name, trip, reason in self.trips:
            temp = zones.get(name)
            if temp is not None and temp >= trip:
                found.append(reason)
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


__all__ = ["limits_the_cpu"]
