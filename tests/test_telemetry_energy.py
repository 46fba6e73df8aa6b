"""Energy per message and per operation from an INA-style power monitor, above idle."""

from __future__ import annotations

import statistics

import pytest
from telemetry_am62x import Am62xTree
from test_telemetry_throttle import sampling, wait_for_samples

from evbench_agent.telemetry import phase_records, sysfs
from evbench_agent.telemetry.timeline import read_markers
from evbench_core.results import SampleSet

MESSAGES = 40
#: The INA219 rail gives 0.1 A x 3.3 V throughout; the INA226 rail changes.
OTHER_RAIL_W = 0.33


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
        for path in (board.root / "class/hwmon" / chip).iterdir():
            path.unlink()
        (board.root / "class/hwmon" / chip).rmdir()
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
