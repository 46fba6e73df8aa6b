"""The real telemetry sampler process on an AM62x-like tree: throttle events, energy above
idle, a sensor lost mid-run, and its own death (issue 44, item 12)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from telemetry_am62x import INTERVAL_S, Am62xTree, sampling, wait_for_samples

from evbench_agent.telemetry import phase_records, sysfs
from evbench_agent.telemetry.sampler import SamplerProcess
from evbench_agent.telemetry.timeline import read_markers
from evbench_core.results import SampleSet

MESSAGES = 40
#: The INA219 rail gives 0.1 A x 3.3 V throughout; the INA226 rail changes.
OTHER_RAIL_W = 0.33
#: A CPU number no machine this runs on has: sched_setaffinity refuses it (EINVAL).
MISSING_CPU = 4095


def test_the_sampler_records_throttle_events_and_the_summary_flags_the_phases(tmp_path):
    board = Am62xTree(tmp_path / "sys")
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


def test_energy_per_message_and_per_operation_subtract_the_idle_baseline(tmp_path):
    board = Am62xTree(tmp_path / "sys")
    seen = 0
    with sampling(board.root, tmp_path) as (telemetry, timeline):
        for watts, phase in (
            (1.0, {"suite": "idle"}),
            (3.0, {"suite": "link", "profile": "seed", "codec": "protobuf"}),
            (2.0, {"suite": "codec", "profile": "seed"}),
        ):
            board.set_power_w(watts)  # set before the phase: every sample in it reads it
            seen = len(wait_for_samples(telemetry, seen + 1))
            timeline.mark("start", **phase)
            seen = len(wait_for_samples(telemetry, seen + 4))
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


def test_without_a_power_monitor_no_energy_is_reported(tmp_path):
    board = Am62xTree(tmp_path / "sys")
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


def test_a_sensor_unplugged_mid_run_is_logged_once_and_sampling_goes_on(tmp_path):
    board = Am62xTree(tmp_path / "sys")
    telemetry = tmp_path / "telemetry.jsonl"
    sampler = SamplerProcess(sysfs.discover(board.root), telemetry, INTERVAL_S, cpu=None)
    sampler.start()
    try:
        before = len(wait_for_samples(telemetry, 2))
        shutil.rmtree(board.root / "class/hwmon/hwmon1")  # the INA219 goes away
        wait_for_samples(telemetry, before + 5)
    finally:
        assert sampler.stop() == 0
    _, samples, events = phase_records.read_telemetry(telemetry)
    lost = sorted(e["sensor"] for e in events if e["type"] == "sensor_lost")
    assert lost == ["hwmon1/curr1", "hwmon1/in1"]  # once each, not once per sample
    assert samples[0]["power_w"] == pytest.approx(1.33)
    assert [s["power_w"] for s in samples[-3:]] == [1.0] * 3  # the INA226 rail alone
    assert all(s["zones_c"] == {"thermal_zone0": 45.0, "thermal_zone1": 46.0} for s in samples)


# The sampler's standard error may be read by nobody (the host captures the agent's
# output): its death must leave the error and traceback in telemetry.jsonl (`sampler_died`)
# and the manifest's facts. Made real by pinning it to a CPU this machine does not have.


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


def test_a_sampler_that_is_stopped_records_no_death(tmp_path: Path) -> None:
    output = tmp_path / "telemetry.jsonl"
    sampler = SamplerProcess(sysfs.discover("/sys"), output, 0.1, None)
    sampler.start()
    assert sampler.stop() == 0
    header, samples, events = phase_records.read_telemetry(output)
    assert header["type"] == "header" and samples
    assert not [e for e in events if e["type"] == "sampler_died"]
