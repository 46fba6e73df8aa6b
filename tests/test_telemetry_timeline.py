"""Markers into phases: how starts and ends pair up, as the suites write them."""

from __future__ import annotations

from test_telemetry_cooldown import RecordingProgress

from evbench_agent import spec as spec_module
from evbench_agent.telemetry.session import TelemetrySession
from evbench_agent.telemetry.timeline import group_name, windows


def _m(t_ns: int, event: str, **fields) -> dict:
    base = {"suite": None, "profile": None, "codec": None}
    return {"t_ns": t_ns, "event": event, **base, **fields}


def test_link_style_ends_close_their_start_and_bring_the_message_count():
    # the link suite's end markers leave out the repetition number its starts give
    where = {"suite": "link", "profile": "seed", "codec": "json"}
    markers = [
        _m(10, "start", **where, kind="periodic", phase=0),
        _m(20, "end", **where, kind="periodic", messages=40),
        _m(30, "start", **where, kind="periodic", phase=1),
        _m(40, "end", **where, kind="periodic", messages=39),
        _m(50, "start", **where, kind="capacity", phase=0),
        _m(60, "end", **where, kind="capacity", messages=5000),
    ]
    found = [(group_name(m)[3], m["phase"], m["messages"], a, b) for m, a, b in windows(markers)]
    expected = [("periodic", 0, 40, 10, 20), ("periodic", 1, 39, 30, 40)]
    assert found == [*expected, ("capacity", 0, 5000, 50, 60)]


def test_nested_and_reported_phases_pair_by_their_fields_and_unclosed_ones_stay_open():
    markers = [
        _m(1, "start", suite="codec"),
        _m(2, "start", suite="codec", worker=0),
        _m(9, "end", suite="codec", worker=0),
        _m(3, "start", suite="codec", profile="seed", worker=0),  # written after the fact
        _m(8, "end", suite="codec", profile="seed", worker=0),
        _m(10, "start", suite="codec", worker=1),  # the run was cut short here
        _m(12, "end", suite="codec", profile="seed", worker=7),  # matches no start
    ]
    found = [(m.get("worker"), m["profile"], a, b) for m, a, b in windows(markers)]
    assert found == [(0, "seed", 3, 8), (0, None, 2, 9), (None, None, 1, None), (1, None, 10, None)]


def test_a_damaged_markers_file_costs_the_telemetry_records_not_the_run(tmp_path):
    progress = RecordingProgress()
    session = TelemetrySession(spec_module.from_dict({"codecs": ["json"]}), tmp_path, progress)
    (tmp_path / "markers.jsonl").write_text('{"t_ns": 1, "event": "start"}\nnot json\n')
    sample_sets, facts = session.stop()
    assert sample_sets == []
    assert facts["error"].startswith("telemetry: no per-phase records: JSONDecodeError")
    assert progress.messages == [facts["error"]]
