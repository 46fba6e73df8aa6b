"""Throttle detection from what the kernel says, in the sampler process and in the summary."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from telemetry_am62x import Am62xTree

from evbench_agent.telemetry import phase_records, sysfs, throttle
from evbench_agent.telemetry.reader import SensorReader
from evbench_agent.telemetry.sampler import SamplerProcess
from evbench_agent.telemetry.timeline import Timeline, read_markers

INTERVAL_S = 0.1


@pytest.fixture
def board(tmp_path):
    return Am62xTree(tmp_path / "sys")


def _reasons(board: Am62xTree) -> list[str]:
    sensors = sysfs.discover(board.root)
    return throttle.ThrottleRules(sensors).reasons(SensorReader(sensors, lambda *_: None).read())


def test_a_clock_below_maximum_alone_is_not_throttling(board):
    # scaling_cur_freq is 1.25 GHz of 1.4 GHz: the governor at work
    assert _reasons(board) == []


def test_a_lowered_scaling_max_freq_is_throttling(board):
    board.set_scaling_max_khz(800000)
    assert _reasons(board) == ["policy0 scaling_max_freq < cpuinfo_max_freq"]


def test_a_cooling_device_above_zero_is_throttling(board):
    board.set_cooling_state(2)
    assert _reasons(board) == ["cooling_device0 (cpufreq-cpu0) cur_state > 0"]


def test_a_zone_at_its_passive_trip_point_is_throttling(board):
    board.set_zone_c(1, 104.9)
    assert _reasons(board) == []
    board.set_zone_c(1, 105.0)
    assert _reasons(board) == ["thermal_zone1 (main1_thermal) at or above passive trip 105 °C"]


def test_the_tracker_records_one_start_and_one_end_per_reason():
    tracker = throttle.ThrottleTracker()
    assert tracker.update(1, []) == []
    assert tracker.update(2, ["a"]) == [{"type": "throttle_start", "t_ns": 2, "reason": "a"}]
    assert tracker.update(3, ["a"]) == []
    assert tracker.update(4, []) == [{"type": "throttle_end", "t_ns": 4, "reason": "a"}]


def wait_for_samples(path, count: int, timeout_s: float = 20.0) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            samples = phase_records.read_telemetry(path)[1]
            if len(samples) >= count:
                return samples
        time.sleep(INTERVAL_S / 2)
    raise AssertionError(f"the sampler wrote fewer than {count} samples in {timeout_s} s")


@contextlib.contextmanager
def sampling(root: Path, tmp_path: Path) -> Iterator[tuple[Path, Timeline]]:
    """The real sampler process on the sensors under `root`, and a timeline to mark phases
    on: (its telemetry.jsonl, the timeline). On the way out the sampler must stop cleanly."""
    telemetry = tmp_path / "telemetry.jsonl"
    sampler = SamplerProcess(sysfs.discover(root), telemetry, INTERVAL_S, cpu=None)
    timeline = Timeline(tmp_path)
    sampler.start()
    try:
        yield telemetry, timeline
    finally:
        assert sampler.stop() == 0
        timeline.close()


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
