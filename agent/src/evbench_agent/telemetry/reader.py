"""Reads the discovered sysfs sensors once per sample, surviving sensors that go away.

A sensor that cannot be read (a hot-unplugged hwmon chip, an I/O error) or
that returns garbage (not an integer) is reported once through `on_lost` and
not read again: a run does not fail, or fill its log, because one sensor did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evbench_agent.telemetry.sysfs import Sensors, hwmon_divisor, read_int

LostCallback = Callable[[str, str], None]


class SensorReader:
    def __init__(self, sensors: Sensors, on_lost: LostCallback) -> None:
        self.sensors = sensors
        self.on_lost = on_lost
        self.lost: set[str] = set()
        # What to read, worked out once: (section, key, lost-key, path, multiplier, divisor).
        # This runs every sample, so nothing is formatted or looked up twice.
        self._probes: list[tuple[str, str, str, str, int, int]] = []
        for zone in sensors.zones:
            self._probes.append(("zones_c", zone.name, zone.name, f"{zone.path}/temp", 1, 1000))
        for device in sensors.cooling:
            path = f"{device.path}/cur_state"
            self._probes.append(("cooling_state", device.name, device.name, path, 1, 1))
        for policy in sensors.cpufreq:
            name = policy.path.rstrip("/").rsplit("/", 1)[-1]
            for end in ("cur", "min", "max"):
                attribute = f"scaling_{end}_freq"
                path = f"{policy.path}/{attribute}"
                self._probes.append((name, end, f"{name}/{attribute}", path, 1000, 1))  # kHz
        for channel in sensors.hwmon:
            divisor = hwmon_divisor(channel)
            self._probes.append(("hwmon", channel.key, channel.key, channel.path, 1, divisor))
        self._policies = [
            (policy.path.rstrip("/").rsplit("/", 1)[-1], [f"cpu{c}" for c in policy.cpus])
            for policy in sensors.cpufreq
        ]

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
        sections: dict[str, dict[str, Any]] = {
            "zones_c": {},
            "cooling_state": {},
            "hwmon": {},
        }
        for section, key, lost_key, path, multiplier, divisor in self._probes:
            value = self._read(lost_key, path)
            if value is not None:
                value *= multiplier
                sections.setdefault(section, {})[key] = value / divisor if divisor != 1 else value
        freq = {}
        for name, cpus in self._policies:
            values = sections.pop(name, None)
            if values:
                for cpu in cpus:
                    freq[cpu] = values
        return {**sections, "freq_hz": freq}


class PowerSum:
    """Total measured power, over chips: powerN where given, else currN x inN.

    Which channels to combine is worked out once per board.
    """

    def __init__(self, sensors: Sensors) -> None:
        channels: dict[str, dict[str, str]] = {}
        for channel in sensors.hwmon:
            channels.setdefault(channel.chip, {})[channel.channel] = channel.key
        self.chips: list[tuple[list[str], list[tuple[str, str]]]] = []
        for names in channels.values():
            powers = [key for name, key in names.items() if name.startswith("power")]
            pairs = [
                (key, names[f"in{name[4:]}"])
                for name, key in names.items()
                if name.startswith("curr") and f"in{name[4:]}" in names
            ]
            if powers or pairs:
                self.chips.append((powers, pairs))

    def watts(self, hwmon: dict[str, float]) -> float | None:
        """None when no chip gave a figure in this reading (nothing is invented)."""
        total, found = 0.0, False
        for powers, pairs in self.chips:
            measured = [hwmon[key] for key in powers if key in hwmon]
            if measured:  # a chip's own power figure, when it has one
                total += sum(measured)
                found = True
                continue
            for current, voltage in pairs:
                if current in hwmon and voltage in hwmon:
                    total += hwmon[current] * hwmon[voltage]
                    found = True
        return total if found else None
