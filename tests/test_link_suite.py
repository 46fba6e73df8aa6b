"""The link suite end to end on 127.0.0.1: a complete small run, and a run whose
responder is killed mid-phase (saved as partial, with its messages)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time

import psutil
import pytest

from evbench_agent import runner, spec
from evbench_agent.errors import PartialRun, UserError
from evbench_agent.link.service import start_responder
from evbench_agent.progress import Progress
from evbench_agent.results import COMPLETE, SUMMARY, read_samples

LINK_METRICS = {
    "rtt",
    "rtt_transport",
    "jitter_stdev",
    "jitter_rfc3550",
    "rtt_delta_abs",
    "send_lateness",
    "bandwidth_payload",
    "bandwidth_wire",
    "capacity_msgs",
    "capacity_bytes",
    "cpu_per_msg_client",
    "cpu_per_msg_responder",
    "lost",
    "late",
}


def _spec(**link):
    # `profiles` is the codec suite's: the link suite measures `link_profiles` (default seed)
    document = {"suites": ["link"], "profiles": ["ev-full"], "codecs": ["json", "protobuf"]}
    document.update(link_rate_hz=100.0, link_warmup_s=0.02, link_phases=2, link_capacity_s=0.1)
    document.update(link)
    return spec.from_dict(document)


def _records(directory):
    return json.loads((directory / SUMMARY).read_text())["records"]


def test_a_loopback_run_records_every_link_metric_for_both_codecs(tmp_path):
    runner.run(_spec(link_count=6), tmp_path / "run", "test-run", Progress())
    records = [r for r in _records(tmp_path / "run") if r["suite"] == "link"]
    for codec in ("json", "protobuf"):
        assert {r["metric"] for r in records if r["codec"] == codec} == LINK_METRICS
    assert {r["profile"] for r in records} == {"seed"}
    by_metric = {(r["codec"], r["metric"]): r for r in records}
    assert by_metric["json", "rtt"]["n"] == 12  # 6 messages x 2 phases
    assert by_metric["json", "lost"]["n"] == 2  # one value per phase
    assert by_metric["json", "lost"]["max"] == 0
    rtt = by_metric["protobuf", "rtt"]
    assert rtt["params"]["rate_hz"] == 100.0 and rtt["params"]["peer"] == "loopback"
    assert rtt["params"]["mode"] == "ack"
    assert by_metric["protobuf", "capacity_msgs"]["params"]["window"] == 8
    # end to end includes encoding and decoding, so it is never below transport
    assert rtt["min"] >= 0 and rtt["median"] >= by_metric["protobuf", "rtt_transport"]["min"]
    assert (tmp_path / "run" / COMPLETE).exists()


def _kill_mid_phase(process: subprocess.Popen) -> None:
    """Once a client is connected and messages flow: stop the responder, so that
    messages are in flight unanswered, then kill it."""
    responder = psutil.Process(process.pid)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
        c.status == psutil.CONN_ESTABLISHED for c in responder.net_connections("tcp")
    ):
        time.sleep(0.01)
    time.sleep(0.3)
    process.send_signal(signal.SIGSTOP)
    time.sleep(0.2)
    process.kill()


def test_a_responder_killed_mid_run_leaves_a_partial_run_with_its_messages(tmp_path):
    responder = start_responder()
    host, port = responder.address
    killer = threading.Thread(target=_kill_mid_phase, args=(responder.process,), daemon=True)
    killer.start()
    try:
        with pytest.raises(PartialRun, match="went away"):
            runner.run(
                _spec(link_count=200, link_peer=f"{host}:{port}", link_phases=1),
                tmp_path / "run",
                "test-run",
                Progress(),
            )
    finally:
        killer.join(30)
        responder.stop()
    directory = tmp_path / "run"
    assert not (directory / COMPLETE).exists()
    assert json.loads((directory / SUMMARY).read_text())["partial"] is True
    samples = [s for s in read_samples(directory) if s.suite == "link" and s.codec == "json"]
    rtt = [value for s in samples if s.metric == "rtt" for value in s.values]
    lost = [value for s in samples if s.metric == "lost" for value in s.values]
    assert 0 < len(rtt) < 200
    assert lost and lost[0] > 0 and len(rtt) + lost[0] <= 200


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("link_mode", "mirror", "'link_mode' must be 'echo' or 'ack'"),
        ("link_peer", "nohost", "not a peer address"),
        ("link_peer", "host", "cannot resolve --peer host"),
        ("link_rate_hz", 0, "'link_rate_hz' must be a number"),
        ("link_window", 0, "'link_window' must be a number"),
        ("link_profiles", "seed,nope", "unknown profile 'nope'"),
    ],
)
def test_bad_link_settings_are_refused_before_anything_runs(key, value, message):
    with pytest.raises(UserError, match=message):
        _spec(**{key: value})
