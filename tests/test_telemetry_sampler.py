"""Sensors on an AM62x-like tree (tests/telemetry_am62x.py): discovery and throttle rules,
then the real telemetry sampler process on it: its readings, throttle events, energy above
idle, sensors lost mid-run, and its own death (issue 44, item 12)."""

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from telemetry_am62x import Am62xTree, sampling, wait_for_samples, write

from evbench.usecases import diag
from evbench_agent.telemetry import phase_records, sysfs, throttle
from evbench_agent.telemetry.reader import PowerSum, SensorReader
from evbench_agent.telemetry.sampler import SamplerProcess
from evbench_agent.telemetry.timeline import read_markers
from evbench_core.results import SampleSet

MESSAGES = 40
#: The INA219 rail gives 0.1 A x 3.3 V throughout; the INA226 rail changes.
OTHER_RAIL_W = 0.33
#: A CPU number no machine this runs on has: sched_setaffinity refuses it (EINVAL).
MISSING_CPU = 4095
#: The AM62x device tree's alert, as the tree in tests/telemetry_am62x.py has it.
PASSIVE = "passive trip 105 °C"


@pytest.fixture
def board(tmp_path):
    return Am62xTree(tmp_path / "sys")


def test_discovery_finds_every_sensor_and_on_a_machine_without_invents_none(board, tmp_path):
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
    (tmp_path / "none").mkdir()
    sensors = sysfs.discover(tmp_path / "none")
    assert sensors.absent == ("thermal_zones", "cooling_devices", "cpufreq", "hwmon")
    assert sensors.summary()["found"] == "none"
    assert not sensors.has_power()
    reading = SensorReader(sensors, lambda *_: None).read()
    assert reading == {"zones_c": {}, "cooling_state": {}, "freq_hz": {}, "hwmon": {}}
    assert PowerSum(sensors).watts(reading["hwmon"]) is None


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


def test_a_spinning_fan_is_no_throttling_a_cpufreq_cooling_device_is(board):
    # A fan cools without slowing the CPU: a board's pwm-fan at state 1 made every phase
    # "throttled". Types as the kernel names them (drivers/hwmon/pwm-fan.c,
    # drivers/thermal/cpufreq_cooling.c's old "thermal-cpufreq-%d").
    for name, kind in (("cooling_device1", "pwm-fan"), ("cooling_device2", "thermal-cpufreq-0")):
        write(board.root / "class/thermal" / name / "type", kind)
        write(board.root / "class/thermal" / name / "max_state", 4)
        write(board.root / "class/thermal" / name / "cur_state", 1)
    sensors = sysfs.discover(board.root)
    reading = SensorReader(sensors, lambda *_: None).read()
    assert reading["cooling_state"]["cooling_device1"] == 1  # still read and recorded
    reasons = throttle.ThrottleRules(sensors).reasons(reading)
    assert reasons == ["cooling_device2 (thermal-cpufreq-0) cur_state > 0"]
    # `evbench diag`'s probe (one line per device, as its shell script prints it): the same
    probe = "cool cooling_device1 pwm-fan 1 4\ncool cooling_device2 thermal-cpufreq-0 1 4\n"
    thermal = diag.PARSERS["thermal"](probe)
    assert len(thermal["cooling_devices"]) == 2
    assert thermal["throttling"] == ["thermal-cpufreq-0 at state 1 of 4"]


def test_the_sampler_records_throttle_events_and_the_summary_flags_the_phases(board, tmp_path):
    with sampling(board.root, tmp_path) as (telemetry, timeline):
        seen = 0
        for phase, change in (
            ("quiet", lambda: None),
            ("capped", lambda: board.set_scaling_max_khz(800000)),
            ("cooled", lambda: (board.set_scaling_max_khz(1400000), board.set_cooling_state(1))),
        ):
            change()
            seen = len(wait_for_samples(telemetry, seen + 1))  # the change is visible
            timeline.mark("start", suite=phase)
            seen = len(wait_for_samples(telemetry, seen + 3))
            timeline.mark("end", suite=phase)
    lines = [json.loads(line) for line in telemetry.read_text().splitlines()]
    events = [(e["type"], e["reason"]) for e in lines if e["type"].startswith("throttle")]
    # one start and one end per reason, however many samples saw it
    assert events == [
        ("throttle_start", "policy0 scaling_max_freq < cpuinfo_max_freq"),
        ("throttle_end", "policy0 scaling_max_freq < cpuinfo_max_freq"),
        ("throttle_start", "cooling_device0 (cpufreq-cpu0) cur_state > 0"),
    ]
    sample_sets, facts = phase_records.build(telemetry, read_markers(timeline.path), [])
    flags = {s.params["phase"]: s.params.get("throttle_reasons") for s in sample_sets}
    capped, cooled = events[0][1], events[2][1]  # the reasons worked out above
    assert flags == {"quiet": None, "capped": [capped], "cooled": [cooled]}
    assert [p["phase"] for p in facts["throttled_phases"]] == ["capped", "cooled"]
    freq_min = {s.params["phase"]: s.values for s in sample_sets if s.metric == "freq_min"}
    assert set(freq_min["capped"]) == {1_250_000_000}  # the current clock, in Hz


def test_energy_per_message_and_per_operation_subtract_the_idle_baseline(board, tmp_path):
    with sampling(board.root, tmp_path) as (telemetry, timeline):
        for watts, phase in (
            (1.0, {"suite": "idle"}),
            (3.0, {"suite": "link", "profile": "seed", "codec": "protobuf"}),
            (2.0, {"suite": "codec", "profile": "seed"}),
        ):
            board.set_power_w(watts)  # set before the phase: every sample in it reads it
            # Four samples taken in the phase, told by their time (not lines written, which
            # may hold one taken before the start marker).
            start = time.monotonic_ns()
            timeline.mark("start", t_ns=start, **phase)
            wait_for_samples(telemetry, 4, since_ns=start)
            end = {"messages": MESSAGES} if phase["suite"] == "link" else {}
            timeline.mark("end", **phase, **end)
    markers = read_markers(timeline.path)
    timings = [
        SampleSet("codec", "seed", "json", "encode", "s", {}, [1e-5, 2e-5, 3e-5]),
        SampleSet("codec", "seed", "protobuf", "encode", "s", {}, [4e-6, 5e-6, 6e-6]),
    ]
    sample_sets, facts = phase_records.build(telemetry, markers, timings)
    by_metric = {(s.params["phase"], s.codec, s.metric): s for s in sample_sets}

    assert facts["idle_power_w"] == pytest.approx(1.0 + OTHER_RAIL_W)
    link_power = by_metric[("link", "protobuf", "power_mean")]
    assert link_power.values == pytest.approx([3.0 + OTHER_RAIL_W] * len(link_power.values))
    assert link_power.unit == "W" and len(link_power.values) >= 4

    start, end = (m["t_ns"] for m in markers if m["suite"] == "link")
    duration_s = (end - start) / 1e9
    per_msg = by_metric[("link", "protobuf", "energy_per_msg")]
    assert per_msg.unit == "J"
    assert len(per_msg.values) == len(link_power.values)  # one value per power sample
    assert statistics.fmean(per_msg.values) == pytest.approx(2.0 * duration_s / MESSAGES)
    assert per_msg.params["idle_power_w"] == pytest.approx(1.0 + OTHER_RAIL_W)

    # codec phase: 1 W above idle x each codec's median time per operation
    json_op = by_metric[("codec", "json", "energy_per_op")]
    protobuf_op = by_metric[("codec", "protobuf", "energy_per_op")]
    assert json_op.values == pytest.approx([1.0 * 2e-5] * len(json_op.values))
    assert protobuf_op.values == pytest.approx([1.0 * 5e-6] * len(protobuf_op.values))
    assert json_op.params["operation"] == "encode"
    assert "median time" in json_op.params["method"]
    assert ("idle", None, "energy_per_msg") not in by_metric


def test_without_a_power_monitor_no_energy_is_reported(board, tmp_path):
    for chip in ("hwmon0", "hwmon1"):
        shutil.rmtree(board.root / "class/hwmon" / chip)
    assert not sysfs.discover(board.root).has_power()
    with sampling(board.root, tmp_path) as (telemetry, timeline):
        for phase in ({"suite": "idle"}, {"suite": "link", "codec": "json"}):
            timeline.mark("start", **phase)
            wait_for_samples(telemetry, 3 if phase["suite"] == "idle" else 6)
            timeline.mark("end", **phase, messages=10)
    sample_sets, facts = phase_records.build(telemetry, read_markers(timeline.path), [])
    metrics = {s.metric for s in sample_sets}
    assert facts["idle_power_w"] is None
    assert "temp_max" in metrics and "cpu_util" in metrics
    assert not metrics & {"power_mean", "energy_per_msg", "energy_per_op"}


def test_its_readings_in_si_units_and_a_lost_sensor_logged_once_sampling_goes_on(board, tmp_path):
    with sampling(board.root, tmp_path) as (telemetry, _timeline):
        before = len(wait_for_samples(telemetry, 2))
        shutil.rmtree(board.root / "class/hwmon/hwmon0")  # the INA226 was hot-unplugged
        write(board.root / "class/thermal/thermal_zone1/temp", "garbage")
        wait_for_samples(telemetry, before + 5)
    header, samples, events = phase_records.read_telemetry(telemetry)
    assert header["type"] == "header"
    # stopped (exit status 0, checked by `sampling`): no death recorded
    assert not [e for e in events if e["type"] == "sampler_died"]
    lost = [(e["sensor"], e["error"]) for e in events if e["type"] == "sensor_lost"]
    gone = ["hwmon0/curr1", "hwmon0/in0", "hwmon0/in1", "hwmon0/power1", "thermal_zone1"]
    assert sorted(sensor for sensor, _ in lost) == gone  # once each, not once per sample
    assert "garbage" in dict(lost)["thermal_zone1"]
    first = samples[0]  # °C, Hz, W, A and V, from the tree's m°C, kHz, µW, mA and mV
    assert first["zones_c"] == {"thermal_zone0": 45.0, "thermal_zone1": 46.0}
    assert first["cooling_state"] == {"cooling_device0": 0}
    cpu3 = {"cur": 1_250_000_000, "min": 200_000_000, "max": 1_400_000_000}
    assert first["freq_hz"]["cpu3"] == cpu3
    channels = [first["hwmon"][f"hwmon0/{name}"] for name in ("power1", "curr1", "in1")]
    assert channels == pytest.approx([1.0, 0.2, 5.0])
    # INA226: its power channel; INA219: current x bus voltage = 0.1 A x 3.3 V
    assert first["power_w"] == pytest.approx(1.0 + 0.33)
    for sample in samples[-3:]:  # the other zone and rail go on (0.1 A x 3.3 V)
        assert sample["zones_c"] == {"thermal_zone0": 45.0}
        assert set(sample["hwmon"]) == {"hwmon1/curr1", "hwmon1/in1"}
        assert sample["power_w"] == pytest.approx(0.33)


# Nobody may read the sampler's standard error: its death is in telemetry.jsonl
# (`sampler_died`) and the manifest's facts. Made real by pinning it to a CPU not here.
def test_a_sampler_that_dies_leaves_its_traceback_in_the_telemetry_file(tmp_path: Path) -> None:
    assert MISSING_CPU not in os.sched_getaffinity(0)
    output = tmp_path / "telemetry.jsonl"
    sampler = SamplerProcess(sysfs.discover("/sys"), output, 0.1, MISSING_CPU)
    sampler.start()
    assert sampler.stop() == 1  # an uncaught exception: Python's exit status 1
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["sampler_died"]
    died = lines[0]
    assert died["error"] == "OSError: [Errno 22] Invalid argument"
    assert died["traceback"].startswith("Traceback (most recent call last):")
    assert 'os.sched_setaffinity(0, {config["cpu"]})' in died["traceback"]
    assert died["traceback"].rstrip().endswith("OSError: [Errno 22] Invalid argument")
    _sets, facts = phase_records.build(output, [], [])  # what the run's manifest keeps
    assert facts["sampler_died"] == [died]


def test_a_sampler_killed_before_it_reads_its_configuration_gives_its_status(tmp_path, monkeypatch):
    # It kills itself (SIGKILL, from a sitecustomize) before reading a configuration larger
    # than a pipe holds, so writing it finds the pipe broken (once an internal
    # BrokenPipeError of the agent): stop() gives the kill, which makes the run partial.
    (tmp_path / "sitecustomize.py").write_text("import os\nos.kill(os.getpid(), 9)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    sampler = SamplerProcess(sysfs.discover("/sys"), tmp_path / "telemetry.jsonl", 0.1, None)
    sampler.config["padding"] = "x" * (1 << 20)
    sampler.start()
    assert sampler.stop() == -9


def test_a_line_torn_by_the_death_stays_apart_from_the_traceback(tmp_path: Path) -> None:
    output = tmp_path / "telemetry.jsonl"
    output.write_text('{"type":"header"}\n{"type":"sample","t_ns":12')  # cut short
    config = {"sensors": sysfs.discover("/sys").as_dict(), "output": str(output),
              "interval_s": 0.1, "cpu": MISSING_CPU, "agent_pid": os.getpid()}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent.telemetry.sampler"],
        input=json.dumps(config) + "\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback (most recent call last):" in done.stderr  # and on standard error
    lines = output.read_text().splitlines()
    assert lines[:2] == ['{"type":"header"}', '{"type":"sample","t_ns":12']
    assert json.loads(lines[2])["type"] == "sampler_died" and len(lines) == 3
