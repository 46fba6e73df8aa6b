"""Reads the discovered sysfs sensors once per sample, surviving sensors that go away.

A sensor that cannot be read (a hot-unplugged hwmon chip, an I/O error) or
that returns garbage (not an integer) is reported once through `on_lost` and
not read again: a run does not fail, or fill its log, because one sensor did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evbench_agent.telemetry.sysfs import Sensors, hwmon_factor, read_int

LostCallback = Callable[[str, str], None]


class SensorReader:
    def __init__(self, sensors: Sensors, on_lost: LostCallback) -> None:
        self.sensors = sensors
        self.on_lost = on_lost
        self.lost: set[str] = set()

    def _read(self, key: str, path: str) -> int | None:
        if key in self.lost:
            return None
        try:
            return read_int(path)
        except (OSError, ValueError) as error:
            self.lost.add(key)
            reason = error.strerror if isinstance(error, OSError) else f"garbage ({error})"
            self.on_lost(key, f"{path}: {reason or error}")
            return None

    def read(self) -> dict[str, Any]:
        """One reading: only the sensors that answered, in °C, Hz, W, A and V."""
        zones = {}
        for zone in self.sensors.zones:
            value = self._read(zone.name, f"{zone.path}/temp")
            if value is not None:
                zones[zone.name] = value / 1000
        cooling = {}
        for device in self.sensors.cooling:
            value = self._read(device.name, f"{device.path}/cur_state")
            if value is not None:
                cooling[device.name] = value
        freq = {}
        for policy in self.sensors.cpufreq:
            name = policy.path.rstrip("/").rsplit("/", 1)[-1]
            values = {}
            for attribute in ("scaling_cur_freq", "scaling_min_freq", "scaling_max_freq"):
                value = self._read(f"{name}/{attribute}", f"{policy.path}/{attribute}")
                if value is not None:
                    values[attribute.removeprefix("scaling_").removesuffix("_freq")] = value * 1000
            if values:
                for cpu in policy.cpus:
                    freq[f"cpu{cpu}"] = values
        hwmon = {}
        for channel in self.sensors.hwmon:
            value = self._read(channel.key, channel.path)
            if value is not None:
                hwmon[channel.key] = value * hwmon_factor(channel)
        return {"zones_c": zones, "cooling_state": cooling, "freq_hz": freq, "hwmon": hwmon}


def total_power_w(sensors: Sensors, hwmon: dict[str, float]) -> float | None:
    """The sum over chips of measured power: powerN where given, else currN x inN.

    None when no chip gave a figure in this reading (nothing is invented).
    """
    by_chip: dict[str, dict[str, float]] = {}
    for channel in sensors.hwmon:
        if channel.key in hwmon:
            by_chip.setdefault(channel.chip, {})[channel.channel] = hwmon[channel.key]
    total, found = 0.0, False
    for values in by_chip.values():
        powers = [v for name, v in values.items() if name.startswith("power")]
        if powers:
            total += sum(powers)
            found = True
            continue
        for name, current in values.items():
            if name.startswith("curr") and f"in{name[4:]}" in values:
                total += current * values[f"in{name[4:]}"]
                found = True
    return total if found else None
