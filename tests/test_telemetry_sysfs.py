"""Sensor discovery, readings and throttle rules against a tree laid out like an AM62x's
sysfs (tests/telemetry_am62x.py)."""

from __future__ import annotations

import shutil

import pytest
from telemetry_am62x import Am62xTree, write

from evbench_agent.telemetry import sysfs, throttle
from evbench_agent.telemetry.reader import PowerSum, SensorReader

#: The AM62x device tree's alert, as the tree in tests/telemetry_am62x.py has it.
PASSIVE = "passive trip 105 °C"


@pytest.fixture
def board(tmp_path):
    return Am62xTree(tmp_path / "sys")


def test_discovery_finds_every_sensor_with_types_and_trip_points(board):
    sensors = sysfs.discover(board.root)
    zones = [("thermal_zone0", "main0_thermal"), ("thermal_zone1", "main1_thermal")]
    assert [(z.name, z.type) for z in sensors.zones] == zones
    trips = (sysfs.TripPoint("passive", 105.0), sysfs.TripPoint("critical", 125.0))
    assert sensors.zones[0].trips == trips
    assert sensors.zones[0].passive_trip_c() == 105.0
    cooling = [(c.name, c.type, c.max_state) for c in sensors.cooling]
    assert cooling == [("cooling_device0", "cpufreq-cpu0", 3)]
    (policy,) = sensors.cpufreq  # four cores, one shared clock
    assert policy.cpus == (0, 1, 2, 3)
    assert (policy.cpuinfo_min_hz, policy.cpuinfo_max_hz) == (200_000_000, 1_400_000_000)
    assert policy.governor == "schedutil"
    channels = {(h.key, h.driver, h.quantity, h.unit) for h in sensors.hwmon}
    assert ("hwmon0/power1", "ina226", "power", "W") in channels
    assert ("hwmon1/curr1", "ina219", "current", "A") in channels
    assert len(sensors.hwmon) == 6
    assert sensors.absent == ()
    assert sensors.has_power()
    summary = sensors.summary()
    assert summary["found"] == "some" and summary["absent"] == "none"
    assert summary["thermal_zones"] == [f"{name} ({kind})" for name, kind in zones]
    # what the sampler process is given, read back whole
    assert sysfs.Sensors.from_dict(sensors.as_dict()) == sensors


def test_a_machine_without_sensors_says_so_and_invents_nothing(tmp_path):
    sensors = sysfs.discover(tmp_path)
    assert sensors.absent == ("thermal_zones", "cooling_devices", "cpufreq", "hwmon")
    assert sensors.summary()["found"] == "none"
    assert not sensors.has_power()
    reading = SensorReader(sensors, lambda *_: None).read()
    assert reading == {"zones_c": {}, "cooling_state": {}, "freq_hz": {}, "hwmon": {}}
    assert PowerSum(sensors).watts(reading["hwmon"]) is None


def test_readings_are_converted_to_celsius_hertz_watts_amperes_volts(board):
    sensors = sysfs.discover(board.root)
    reading = SensorReader(sensors, lambda *_: None).read()
    assert reading["zones_c"] == {"thermal_zone0": 45.0, "thermal_zone1": 46.0}
    assert reading["cooling_state"] == {"cooling_device0": 0}
    cpu3 = {"cur": 1_250_000_000, "min": 200_000_000, "max": 1_400_000_000}
    assert reading["freq_hz"]["cpu3"] == cpu3
    assert reading["hwmon"]["hwmon0/power1"] == pytest.approx(1.0)
    assert reading["hwmon"]["hwmon0/curr1"] == pytest.approx(0.2)
    assert reading["hwmon"]["hwmon0/in1"] == pytest.approx(5.0)
    # INA226: its power channel; INA219: current x bus voltage = 0.1 A x 3.3 V
    assert PowerSum(sensors).watts(reading["hwmon"]) == pytest.approx(1.0 + 0.33)


def test_a_vanished_or_garbled_sensor_is_reported_once_and_skipped(board):
    sensors = sysfs.discover(board.root)
    lost = []
    reader = SensorReader(sensors, lambda sensor, error: lost.append((sensor, error)))
    reader.read()
    assert lost == []
    shutil.rmtree(board.root / "class/hwmon/hwmon0")  # the INA226 was hot-unplugged
    write(board.root / "class/thermal/thermal_zone1/temp", "garbage")
    first = reader.read()
    second = reader.read()
    gone = ["hwmon0/curr1", "hwmon0/in0", "hwmon0/in1", "hwmon0/power1", "thermal_zone1"]
    assert sorted(sensor for sensor, _ in lost) == gone
    assert any("garbage" in error for sensor, error in lost if sensor == "thermal_zone1")
    for reading in (first, second):
        assert reading["zones_c"] == {"thermal_zone0": 45.0}
        assert set(reading["hwmon"]) == {"hwmon1/curr1", "hwmon1/in1"}
    # the other rail still gives power: current x voltage
    assert PowerSum(sensors).watts(second["hwmon"]) == pytest.approx(0.33)


@pytest.mark.parametrize(
    ("setter", "args", "reasons"),
    [
        # scaling_cur_freq is 1.25 GHz of 1.4 GHz: the governor at work, not throttling
        ("set_cooling_state", (0,), []),
        ("set_scaling_max_khz", (800000,), ["policy0 scaling_max_freq < cpuinfo_max_freq"]),
        ("set_cooling_state", (2,), ["cooling_device0 (cpufreq-cpu0) cur_state > 0"]),
        ("set_zone_c", (1, 104.9), []),  # below its 105 °C passive trip point
        ("set_zone_c", (1, 105.0), [f"thermal_zone1 (main1_thermal) at or above {PASSIVE}"]),
    ],
    ids=["clock-below-max", "max-freq-lowered", "cooling-device", "zone-below", "zone-at-trip"],
)
def test_throttling_is_what_the_kernel_says(board, setter, args, reasons):
    getattr(board, setter)(*args)
    sensors = sysfs.discover(board.root)
    reading = SensorReader(sensors, lambda *_: None).read()
    assert throttle.ThrottleRules(sensors).reasons(reading) == reasons


def test_the_tracker_records_one_start_and_one_end_per_reason():
    tracker = throttle.ThrottleTracker()
    assert tracker.update(1, []) == []
    assert tracker.update(2, ["a"]) == [{"type": "throttle_start", "t_ns": 2, "reason": "a"}]
    assert tracker.update(3, ["a"]) == []
    assert tracker.update(4, []) == [{"type": "throttle_end", "t_ns": 4, "reason": "a"}]
