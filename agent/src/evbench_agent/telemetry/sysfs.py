"""The board's sensors as the kernel shows them in sysfs: found once, read often.

Thermal zones (temperature in m°C, a type name, trip points), cooling
devices (cur_state / max_state), cpufreq (kHz, per policy, reported per core)
and hwmon channels (temperature m°C, power µW, current mA, voltage mV). Every
path is taken under a root directory (normally /sys) so tests can point it at
a tree laid out like a real board's. Values are converted to the closed list
of units: °C, Hz, W, A, V.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SYSFS = Path("/sys")

#: hwmon channel prefix -> (quantity, what the sysfs integer is divided by, unit).
HWMON_KINDS = {
    "temp": ("temperature", 1000, "°C"),
    "power": ("power", 1_000_000, "W"),
    "curr": ("current", 1000, "A"),
    "in": ("voltage", 1000, "V"),
}
_HWMON_INPUT = re.compile(r"^(temp|power|curr|in)(\d+)_input$")
_TRIP = re.compile(r"^trip_point_(\d+)_type$")


@dataclass(frozen=True)
class TripPoint:
    type: str  # passive, active, hot, critical
    temp_c: float


@dataclass(frozen=True)
class ThermalZone:
    name: str  # thermal_zone0
    type: str  # what the driver calls it, e.g. main0_thermal
    path: str
    trips: tuple[TripPoint, ...] = ()

    def passive_trip_c(self) -> float | None:
        """The lowest passive trip point: above it the kernel throttles."""
        passive = [trip.temp_c for trip in self.trips if trip.type == "passive"]
        return min(passive) if passive else None


@dataclass(frozen=True)
class CoolingDevice:
    name: str  # cooling_device0
    type: str  # e.g. thermal-cpufreq-0
    path: str
    max_state: int


@dataclass(frozen=True)
class CpuFreqPolicy:
    path: str  # the policy directory (cores sharing a clock share it)
    cpus: tuple[int, ...]
    cpuinfo_min_hz: int
    cpuinfo_max_hz: int
    governor: str | None


@dataclass(frozen=True)
class HwmonChannel:
    chip: str  # hwmon0
    driver: str  # the chip's name file, e.g. ina226
    channel: str  # power1
    label: str | None
    quantity: str  # temperature, power, current, voltage
    unit: str
    path: str

    @property
    def key(self) -> str:
        return f"{self.chip}/{self.channel}"


@dataclass(frozen=True)
class Sensors:
    """What the board has; empty tuples where it has none (VMs, containers, CI)."""

    root: str
    zones: tuple[ThermalZone, ...] = ()
    cooling: tuple[CoolingDevice, ...] = ()
    cpufreq: tuple[CpuFreqPolicy, ...] = ()
    hwmon: tuple[HwmonChannel, ...] = ()
    absent: tuple[str, ...] = field(default=())

    def has_power(self) -> bool:
        quantities = {channel.quantity for channel in self.hwmon}
        return "power" in quantities or {"current", "voltage"} <= quantities

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Sensors:
        return cls(
            root=data["root"],
            zones=tuple(
                ThermalZone(**dict(z, trips=tuple(TripPoint(**t) for t in z["trips"])))
                for z in data["zones"]
            ),
            cooling=tuple(CoolingDevice(**c) for c in data["cooling"]),
            cpufreq=tuple(CpuFreqPolicy(**dict(p, cpus=tuple(p["cpus"]))) for p in data["cpufreq"]),
            hwmon=tuple(HwmonChannel(**h) for h in data["hwmon"]),
            absent=tuple(data["absent"]),
        )

    def summary(self) -> dict[str, Any]:
        """The manifest's list: what was found, and which kinds are absent."""
        found = bool(self.zones or self.cooling or self.cpufreq or self.hwmon)
        return {
            "found": "some" if found else "none",
            "thermal_zones": [f"{z.name} ({z.type})" for z in self.zones],
            "cooling_devices": [f"{c.name} ({c.type})" for c in self.cooling],
            "cpufreq_policies": [f"{Path(p.path).name} cpus {list(p.cpus)}" for p in self.cpufreq],
            "hwmon": [f"{h.key} {h.driver} {h.label or h.quantity} ({h.unit})" for h in self.hwmon],
            "absent": list(self.absent) or "none",
        }


def read_text(path: str | Path) -> str:
    with open(path, encoding="ascii", errors="replace") as stream:
        return stream.read().strip()


def read_int(path: str | Path) -> int:
    """An integer sysfs attribute; ValueError for garbage, OSError when gone.

    Raw os.open/os.read: this runs for every sensor in every sample, and a
    buffered text file costs several times more for a few bytes.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        return int(os.read(fd, 64))
    finally:
        os.close(fd)


def _optional_text(path: Path) -> str | None:
    try:
        return read_text(path)
    except OSError:
        return None


def _zones(root: Path) -> list[ThermalZone]:
    zones = []
    for directory in sorted(root.glob("class/thermal/thermal_zone*"), key=_number):
        trips = []
        for type_file in sorted(directory.glob("trip_point_*_type"), key=_number):
            trip = _TRIP.match(type_file.name)
            if trip is None:  # the glob above matches more than the pattern allows
                continue
            index = trip.group(1)
            try:
                temp = read_int(directory / f"trip_point_{index}_temp") / 1000
                trips.append(TripPoint(read_text(type_file), temp))
            except (OSError, ValueError):
                continue  # a trip point that cannot be read cannot be crossed either
        zone_type = _optional_text(directory / "type") or "unknown"
        zones.append(ThermalZone(directory.name, zone_type, str(directory), tuple(trips)))
    return zones


def _cooling(root: Path) -> list[CoolingDevice]:
    devices = []
    for directory in sorted(root.glob("class/thermal/cooling_device*"), key=_number):
        try:
            max_state = read_int(directory / "max_state")
        except (OSError, ValueError):
            continue
        device_type = _optional_text(directory / "type") or "unknown"
        devices.append(CoolingDevice(directory.name, device_type, str(directory), max_state))
    return devices


def _cpufreq(root: Path) -> list[CpuFreqPolicy]:
    by_policy: dict[Path, list[int]] = {}
    for link in root.glob("devices/system/cpu/cpu[0-9]*/cpufreq"):
        by_policy.setdefault(link.resolve(), []).append(_number(link.parent))
    policies = []
    for path, cpus in sorted(by_policy.items(), key=lambda item: min(item[1])):
        try:
            low, high = (read_int(path / f"cpuinfo_{end}_freq") * 1000 for end in ("min", "max"))
        except (OSError, ValueError):
            continue
        governor = _optional_text(path / "scaling_governor")
        policies.append(CpuFreqPolicy(str(path), tuple(sorted(cpus)), low, high, governor))
    return policies


def _hwmon(root: Path) -> list[HwmonChannel]:
    channels = []
    for chip in sorted(root.glob("class/hwmon/hwmon*"), key=_number):
        driver = _optional_text(chip / "name") or "unknown"
        for entry in sorted(chip.iterdir(), key=lambda p: p.name):
            match = _HWMON_INPUT.match(entry.name)
            if not match:
                continue
            prefix, number = match.groups()
            quantity, _divisor, unit = HWMON_KINDS[prefix]
            label = _optional_text(chip / f"{prefix}{number}_label")
            channel = f"{prefix}{number}"
            channels.append(
                HwmonChannel(chip.name, driver, channel, label, quantity, unit, str(entry))
            )
    return channels


def _number(path: Path) -> int:
    digits = re.findall(r"\d+", path.name)
    return int(digits[-1]) if digits else -1


def discover(root: Path | str = SYSFS) -> Sensors:
    """Find every sensor once; the kinds found nothing of are listed as absent."""
    root = Path(root)
    zones, cooling, cpufreq, hwmon = _zones(root), _cooling(root), _cpufreq(root), _hwmon(root)
    found: dict[str, list[Any]] = {
        "thermal_zones": zones,
        "cooling_devices": cooling,
        "cpufreq": cpufreq,
        "hwmon": hwmon,
    }
    absent = tuple(kind for kind, items in found.items() if not items)
    return Sensors(str(root), tuple(zones), tuple(cooling), tuple(cpufreq), tuple(hwmon), absent)


def hwmon_divisor(channel: HwmonChannel) -> int:
    prefix = re.match(r"[a-z]+", channel.channel)
    if prefix is None:
        raise ValueError(f"hwmon channel {channel.channel!r} has no kind prefix")
    return HWMON_KINDS[prefix.group(0)][1]
