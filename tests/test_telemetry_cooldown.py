"""The cool-down guard (countdown, timeout) and the governor setting, on an AM62x-like tree."""

from __future__ import annotations

import threading
import time

import pytest
from telemetry_am62x import Am62xTree

from evbench_agent import spec as spec_module
from evbench_agent.progress import Progress
from evbench_agent.telemetry import sysfs
from evbench_agent.telemetry.cooldown import CoolDownGuard
from evbench_agent.telemetry.governor import GovernorSetting
from evbench_agent.telemetry.session import SYSFS_ENV, TelemetrySession
from evbench_agent.telemetry.timeline import Timeline, read_markers
from evbench_core.errors import UserError


class RecordingProgress(Progress):
    """The progress interface, keeping the messages a person would see."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def message(self, text: str) -> None:
        self.messages.append(text)


@pytest.fixture
def board(tmp_path, monkeypatch):
    tree = Am62xTree(tmp_path / "sys")
    monkeypatch.setenv(SYSFS_ENV, str(tree.root))
    return tree


def _session(tmp_path, **spec_fields) -> tuple[TelemetrySession, RecordingProgress]:
    progress = RecordingProgress()
    spec = spec_module.from_dict({"codecs": ["json"], **spec_fields})
    return TelemetrySession(spec, tmp_path, progress), progress


def test_the_guard_gives_up_at_its_timeout_with_a_countdown_and_records_it(board, tmp_path):
    board.set_zone_c(0, 70.0)
    board.set_zone_c(1, 80.0)  # the hottest zone decides
    session, progress = _session(tmp_path, cool_to=50, cool_timeout_s=1.5)
    session.guard.poll_s = 0.25
    started = time.monotonic()
    session.guard({"suite": "codec", "profile": "seed"})
    waited = time.monotonic() - started
    assert 1.5 <= waited < 5.0
    (wait,) = session.guard.waits
    assert (wait["outcome"], wait["phase"]) == ("timeout", "codec/seed")
    assert wait["start_c"] == 80.0 and wait["end_c"] == 80.0
    countdown = [m for m in progress.messages if "waiting for < 50 °C" in m]
    assert len(countdown) >= 3
    assert "80.0 °C" in countdown[0]
    assert "running it anyway" in progress.messages[-1]
    assert session.manifest()["cool_downs"] == [wait]


def test_the_guard_lets_the_phase_start_once_the_board_is_cool(board):
    board.set_zone_c(0, 70.0)
    sensors = sysfs.discover(board.root)
    zone = sensors.zones[0]

    def hottest() -> float:
        return int(sysfs.read_text(f"{zone.path}/temp")) / 1000

    guard = CoolDownGuard(hottest, 60.0, timeout_s=20.0, progress=Progress(), poll_s=0.05)
    cooler = threading.Timer(0.3, board.set_zone_c, (0, 55.0))
    cooler.start()
    try:
        guard({"suite": "link", "codec": "json"})
    finally:
        cooler.cancel()
    (wait,) = guard.waits
    assert wait["outcome"] == "cool" and wait["end_c"] == 55.0
    assert 0.25 <= wait["waited_s"] < 20.0


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


def test_cool_to_without_a_thermal_zone_is_refused_before_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv(SYSFS_ENV, str(tmp_path / "empty"))
    with pytest.raises(UserError, match="--cool-to needs a thermal zone"):
        _session(tmp_path, cool_to=50)


def test_the_governor_is_set_for_the_run_and_restored(board, tmp_path):
    session, _ = _session(tmp_path, governor="performance")
    session.governor.set()
    assert sysfs.read_text(board.governor_file) == "performance"
    session.governor.restore()
    assert sysfs.read_text(board.governor_file) == "schedutil"
    assert session.manifest()["governor"] == [
        {"policy": "policy0", "action": "set", "from": "schedutil", "to": "performance"},
        {"policy": "policy0", "action": "restored", "to": "schedutil"},
    ]


def test_a_governor_the_board_does_not_offer_is_refused(board, tmp_path):
    with pytest.raises(UserError, match="'turbo' is not available") as error:
        _session(tmp_path, governor="turbo")
    assert "performance" in error.value.hint


def test_without_cpufreq_the_governor_setting_records_that_nothing_was_done(tmp_path):
    setting = GovernorSetting(sysfs.discover(tmp_path), "performance")
    setting.check()
    setting.set()
    setting.restore()
    assert setting.actions == [{"action": "none", "reason": "no cpufreq on this machine"}]
