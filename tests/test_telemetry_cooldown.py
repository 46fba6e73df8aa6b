"""Phases from the timeline's markers, the cool-down guard before each (countdown, timeout)
and the governor setting, on an AM62x-like tree."""

from collections.abc import Callable

import pytest
from telemetry_am62x import Am62xTree, RecordingProgress

from evbench_agent import spec as spec_module
from evbench_agent.telemetry import cooldown, sysfs
from evbench_agent.telemetry.cooldown import CoolDownGuard
from evbench_agent.telemetry.governor import GovernorSetting
from evbench_agent.telemetry.session import SYSFS_ENV, TelemetrySession
from evbench_agent.telemetry.timeline import Timeline, group_name, read_markers, windows
from evbench_core.errors import UserError


@pytest.fixture
def board(tmp_path, monkeypatch):
    tree = Am62xTree(tmp_path / "sys")
    monkeypatch.setenv(SYSFS_ENV, str(tree.root))
    return tree


def _session(tmp_path, **spec_fields) -> tuple[TelemetrySession, RecordingProgress]:
    progress = RecordingProgress()
    spec = spec_module.from_dict({"codecs": ["json"], **spec_fields})
    return TelemetrySession(spec, tmp_path, progress), progress


def _m(t_ns: int, event: str, **fields) -> dict:
    return {"t_ns": t_ns, "event": event, "suite": None, "profile": None, "codec": None, **fields}


def test_phases_pair_by_their_fields_link_ends_bring_the_message_count_unclosed_stay_open():
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
    # nested and reported phases pair by their fields; unclosed ones stay open
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


def test_the_timeline_runs_the_guard_before_live_starts_only(tmp_path):
    guarded = []
    timeline = Timeline(tmp_path, guard=guarded.append)
    timeline.mark("start", suite="codec")
    timeline.mark("start", t_ns=5, suite="codec", profile="seed", worker=0)  # reported afterwards
    timeline.mark("end", suite="codec")
    timeline.close()
    assert guarded == [{"suite": "codec"}]
    markers = read_markers(timeline.path)
    seen = [(m["event"], m["profile"]) for m in markers]
    assert seen == [("start", None), ("start", "seed"), ("end", None)]
    assert markers[1]["t_ns"] == 5
    other = Timeline(tmp_path)
    with pytest.raises(ValueError, match="'start' or 'end'"):
        other.mark("begin", suite="codec")
    other.close()


def test_a_damaged_markers_file_costs_the_telemetry_records_not_the_run(tmp_path):
    session, progress = _session(tmp_path)
    (tmp_path / "markers.jsonl").write_text('{"t_ns": 1, "event": "start"}\nnot json\n')
    sample_sets, facts = session.stop()
    assert sample_sets == []
    assert facts["error"].startswith("telemetry: no per-phase records: JSONDecodeError")
    assert progress.messages == [facts["error"]]


class _Clock:
    """The guard's clock (its module's `time`): a sleep moves it on at once, then runs
    `while_asleep`, so the waits are worked out by hand whatever the machine's load."""

    def __init__(self, while_asleep: Callable[[], object] = lambda: None) -> None:
        self.now = 1000.0
        self.while_asleep = while_asleep

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.while_asleep()


def test_the_guard_gives_up_at_its_timeout_with_a_countdown_and_records_it(
    board, tmp_path, monkeypatch
):
    board.set_zone_c(0, 70.0)
    board.set_zone_c(1, 80.0)  # the hottest zone decides
    monkeypatch.setattr(cooldown, "time", _Clock())
    session, progress = _session(tmp_path, cool_to=50, cool_timeout_s=3.0)
    session.guard({"suite": "codec", "profile": "seed"})
    (wait,) = session.guard.waits
    # One reading a second (the default poll): 3, 2 and 1 s left, given up at 3 s.
    assert wait == {"phase": "codec/seed", "start_c": 80.0, "end_c": 80.0, "waited_s": 3.0,
                    "outcome": "timeout"}  # fmt: skip
    countdown = [m for m in progress.messages if "waiting for < 50 °C" in m]
    assert countdown == [
        f"cool-down before codec/seed: 80.0 °C, waiting for < 50 °C ({left} s left)"
        for left in (3, 2, 1)
    ]
    assert "still 80.0 °C after 3 s" in progress.messages[-1]
    assert "running it anyway" in progress.messages[-1]
    assert session.manifest()["cool_downs"] == [wait]


def test_the_guard_lets_the_phase_start_once_the_board_is_cool(board, monkeypatch):
    board.set_zone_c(0, 70.0)
    zone = sysfs.discover(board.root).zones[0]
    # The board cools during the guard's first sleep, after its hot reading.
    monkeypatch.setattr(cooldown, "time", _Clock(lambda: board.set_zone_c(0, 55.0)))
    progress = RecordingProgress()
    guard = CoolDownGuard(
        lambda: int(sysfs.read_text(f"{zone.path}/temp")) / 1000, 60.0, 20.0, progress
    )
    guard({"suite": "link", "codec": "json"})
    # one poll (1 s) and the board is cool: never the 20 s timeout
    assert guard.waits == [{"phase": "link/json", "start_c": 70.0, "end_c": 55.0,
                            "waited_s": 1.0, "outcome": "cool"}]  # fmt: skip
    assert progress.messages == [
        "cool-down before link/json: 70.0 °C, waiting for < 60 °C (20 s left)"
    ]


def test_governor_set_restored_refused_when_lacking_and_noted_without_cpufreq(board, tmp_path):
    session, _ = _session(tmp_path, governor="performance")
    session.governor.set()
    assert sysfs.read_text(board.governor_file) == "performance"
    session.governor.restore()
    assert sysfs.read_text(board.governor_file) == "schedutil"
    assert session.manifest()["governor"] == [
        {"policy": "policy0", "action": "set", "from": "schedutil", "to": "performance"},
        {"policy": "policy0", "action": "restored", "to": "schedutil"},
    ]
    with pytest.raises(UserError, match="'turbo' is not available") as error:
        _session(tmp_path, governor="turbo")
    assert "performance" in error.value.hint
    # without cpufreq the setting records that nothing was done
    (tmp_path / "empty").mkdir()
    setting = GovernorSetting(sysfs.discover(tmp_path / "empty"), "performance")
    setting.check()
    setting.set()
    setting.restore()
    assert setting.actions == [{"action": "none", "reason": "no cpufreq on this machine"}]
