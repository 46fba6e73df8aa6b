"""The link suite end to end on 127.0.0.1: a small run, a run whose responder is killed
mid-phase (partial, with its messages), and benchmarks/link_power_bound.py's arithmetic by
hand and its reading of the small run."""

import contextlib
import importlib.util
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from evbench_agent import spec
from evbench_agent.link.service import start_responder
from evbench_agent.progress import Progress
from evbench_agent.run import runner
from evbench_agent.suites.link import plan as link_suite
from evbench_agent.telemetry.timeline import MARKERS
from evbench_core.errors import PartialRun, UserError
from evbench_core.results import COMPLETE, SUMMARY, read_samples

PERIODIC_METRICS = {
    "rtt", "rtt_transport", "jitter_stdev", "jitter_rfc3550", "rtt_delta_abs", "send_lateness",
    "bandwidth_payload", "bandwidth_wire", "cpu_per_msg_client", "cpu_per_msg_responder",
    "lost", "late",
}  # fmt: skip
CAPACITY_METRICS = {"capacity_msgs", "capacity_bytes", "rtt_transport"}

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "link_power_bound.py"
_loader = importlib.util.spec_from_file_location("link_power_bound", SCRIPT)
bound = importlib.util.module_from_spec(_loader)
sys.modules["link_power_bound"] = bound  # a script, not a package module: loaded by path
_loader.loader.exec_module(bound)


def _spec(**link):
    # `profiles` is the codec suite's; the link suite measures `link_profiles` (seed)
    document = {"suites": ["link"], "profiles": ["ev-full"], "codecs": ["json", "protobuf"]}
    document.update(link_rate_hz=100.0, link_warmup_s=0.02, link_phases=2, link_capacity_s=0.1)
    document.update(link)
    return spec.from_dict(document)


def _records(directory):
    return json.loads((directory / SUMMARY).read_text())["records"]


@pytest.fixture(scope="module")
def loopback_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small run: 3 duets of 5 measured messages a codec, 3 capacity pairs."""
    run = tmp_path_factory.mktemp("link") / "run"
    runner.run(_spec(link_count=5, link_phases=3), run, "test-run", Progress())
    return run


def test_a_loopback_run_records_every_link_metric_for_both_codecs(loopback_run):
    records = [r for r in _records(loopback_run) if r["suite"] == "link"]
    periodic = [r for r in records if r["params"].get("phase") == "periodic"]
    capacity = [r for r in records if r["params"].get("phase") == "capacity"]
    # around every phase the machine's state (the clock only where it is read)
    machine = {"contention_others_cpu", "contention_steal"}
    optional = {"contention_freq_change"}
    for codec in ("json", "protobuf"):
        for found, expected in ((periodic, PERIODIC_METRICS), (capacity, CAPACITY_METRICS)):
            metrics = {r["metric"] for r in found if r["codec"] == codec}
            assert metrics - optional == expected | machine
    assert {r["profile"] for r in periodic + capacity} == {"seed"}
    by_metric = {(r["codec"], r["metric"]): r for r in periodic}
    assert by_metric["json", "rtt"]["n"] == 15  # 5 messages x 3 phases
    assert by_metric["json", "lost"]["n"] == 3  # one value per phase
    assert by_metric["json", "lost"]["max"] == 0
    rtt = by_metric["protobuf", "rtt"]
    assert rtt["params"]["rate_hz"] == 100.0 and rtt["params"]["peer"] == "loopback"
    # the sender on the second-last CPU of this process's, the responder on the last
    cpus = sorted(os.sched_getaffinity(0))
    pinned = {"cpus": f"{cpus[-2]},{cpus[-1]}"} if len(cpus) > 1 else {}
    measured = PERIODIC_METRICS | CAPACITY_METRICS
    cpus_named = {r["params"].get("cpus") for r in periodic + capacity if r["metric"] in measured}
    assert cpus_named == {pinned.get("cpus")}
    assert rtt["params"]["mode"] == "ack" and rtt["params"]["transport"] == "tcp"
    capacity_msgs = [r for r in capacity if r["metric"] == "capacity_msgs"]
    assert capacity_msgs[0]["params"]["window"] == 8
    # a codec's 0.1 s of capacity in a pair: the full plan's 4 blocks, after half the warm-up
    assert capacity_msgs[0]["params"]["blocks"] == 4
    assert capacity_msgs[0]["params"]["warmup_s"] == 0.01
    assert capacity_msgs[0]["n"] == 3  # one value per pair
    # end to end includes encoding and decoding, so it is never below transport
    assert rtt["min"] >= 0 and rtt["median"] >= by_metric["protobuf", "rtt_transport"]["min"]
    # the board's own wake-up latency at the link period (10 ms here), a context record
    (wakeup,) = [r for r in records if r["metric"] == "wakeup_latency"]
    assert wakeup["codec"] is None and wakeup["params"]["period_s"] == 0.01
    assert wakeup["n"] == 100 and wakeup["min"] >= 0
    # energy per message counts every message a phase sent: 2 warm-up + 5 measured per codec
    markers = [json.loads(line) for line in (loopback_run / MARKERS).read_text().splitlines()]
    ends = [m for m in markers if m["event"] == "end" and m.get("suite") == "link"]
    periodic_ends = [m for m in ends if m.get("kind") == "periodic"]
    # periodic phases run as duets (both codecs at once): 3 duets of 2 x 7 messages
    assert [m["messages"] for m in periodic_ends] == [14] * 3
    assert {m["codec"] for m in periodic_ends} == {None}
    # capacity phases run as interleaved pairs (every codec's blocks: codec none)
    capacity_ends = [m for m in ends if m.get("kind") == "capacity"]
    assert len(capacity_ends) == 3 and {m["codec"] for m in capacity_ends} == {None}
    assert (loopback_run / COMPLETE).exists()


def test_the_power_bound_reads_a_real_runs_duets_and_prints_every_row(loopback_run, capsys):
    # comparison.csv, as `evbench report` writes it for a run
    report = [sys.executable, "-m", "evbench", "report", str(loopback_run)]
    subprocess.run(report, check=True, capture_output=True, timeout=120)
    pairs = bound.duets(loopback_run, "rtt_transport", "json", "protobuf")
    assert len(pairs) == 3  # one per duet, both codecs, every measured message
    assert all(sorted(d) == ["json", "protobuf"] and len(d["json"]) == 5 for d in pairs)
    assert bound.main([str(loopback_run), "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    for label in bound.ROWS:
        (line,) = [line for line in out.splitlines() if line.strip().startswith(label)]
        assert "    15 " in line  # 3 duets x 5 messages of each codec


def test_the_power_bound_by_hand_duets_needed_and_identical_duets():
    # duets needed scale with the square of the interval: 37.2 % with 30 pairs is a half-width
    # log(1.372 / 1.02) = 0.29648 against the aim's log(1.2 / 1.02) = 0.16252;
    # (0.29648 / 0.16252)^2 = 3.3280, x 30 = 99.84 pairs
    assert bound.duets_for_aim(0.372, 30) == pytest.approx(99.84, abs=0.05)
    assert bound.duets_for_aim(0.20, 30) == pytest.approx(30)  # at the aim already
    # every duet the same: each resample is too, so se = 0 and detectable is the band
    pairs = [{"json": [1.0, 2.0, 3.0], "protobuf": [2.0, 4.0, 6.0]}] * 5
    median = bound.ROWS["RTT, transport (periodic)"][1]
    found = bound.pooled_bound(pairs, median, "json", "protobuf", 2.807, 50, random.Random(1))
    assert found["ratio"] == pytest.approx(2.0)  # medians 4 against 2
    assert found["se"] == 0 and found["detectable"] == pytest.approx(0.02)
    assert found["messages"] == 15 and found["needed"] == 0
    # |ΔRTT| within phases: |2-1|, |3-2| against |4-2|, |6-4|: 1 against 2
    deltas = bound.ROWS["|ΔRTT|, consecutive (periodic)"][1]
    found = bound.pooled_bound(pairs, deltas, "json", "protobuf", 2.807, 50, random.Random(1))
    assert found["ratio"] == pytest.approx(2.0)


def test_the_plan_measures_the_tables_two_codecs_unless_told_all_and_adds_up_its_time():
    document = {"codecs": ["json", "protobuf", "msgpack"]}
    assert link_suite.link_codecs(_spec(**document)) == ("json", "protobuf")
    every = ("json", "protobuf", "msgpack")
    assert link_suite.link_codecs(_spec(**document, link_all_codecs=True)) == every
    assert link_suite.link_codecs(_spec(codecs=["msgpack"])) == ("msgpack",)
    assert link_suite.link_codecs(_spec(aa="json")) == ("json", "json-aa")
    # planned, by hand: 2 duets of (2 + 6) / 100 Hz, the second codec's offset of a period
    # (0.01) and 0.1 of overhead; 2 capacity pairs, in each 2 codecs of 4 blocks after a
    # 0.02 / 2 warm-up, 0.1 s measured and 0.1 overhead; the probe 100 / 100 Hz; start 0.5
    planned = link_suite.planned_seconds(_spec(link_count=6))
    duets = 2 * (0.08 + 0.01 + 0.1)
    capacity = 2 * 2 * (4 * 0.01 + 0.1 + 0.1)
    assert planned == pytest.approx(0.5 + 1.0 + duets + capacity)


def _tcp_bytes(fd: int) -> tuple[int, int]:
    """Socket `fd`'s bytes acked by its peer and received: struct tcp_info's u64
    tcpi_bytes_acked and tcpi_bytes_received (linux/tcp.h: offsets 120 and 128)."""
    with socket.socket(fileno=os.dup(fd)) as sock:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return struct.unpack_from("QQ", info, 120)


def _kill_mid_phase(process: subprocess.Popen, address: tuple[str, int]) -> None:
    """Once both duet connections have had replies (1000 bytes), stop the responder; once
    each has sent more (in flight, never answered), kill it. Told by the kernel's byte
    counts of the run's sockets, not a fixed time that could come before any reply."""

    def duet() -> dict[int, tuple[int, int]]:
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):  # a socket closed as it is read: look again
                found = psutil.Process().net_connections("tcp")
                return {c.fd: _tcp_bytes(c.fd) for c in found if tuple(c.raddr or ()) == address}
        return {}

    def sent_more(stopped: dict[int, tuple[int, int]]) -> bool:
        now = duet()
        return all(now[fd][0] > acked for fd, (acked, _) in stopped.items() if fd in now)

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        counts = duet()
        if len(counts) == 2 and min(received for _, received in counts.values()) > 1000:
            break
        time.sleep(0.01)
    process.send_signal(signal.SIGSTOP)
    stopped = duet()
    while time.monotonic() < deadline and not sent_more(stopped):
        time.sleep(0.01)
    process.kill()


def test_a_responder_killed_mid_run_leaves_a_partial_run_with_its_messages(tmp_path):
    responder = start_responder()
    host, port = responder.address
    killer = threading.Thread(target=_kill_mid_phase, args=(responder.process, (host, port)))
    killer.start()
    try:
        run_spec = _spec(link_count=200, link_peer=f"{host}:{port}", link_phases=1)
        with pytest.raises(PartialRun, match="went away"):
            runner.run(run_spec, tmp_path / "run", "test-run", Progress())
    finally:
        killer.join(90)  # its waits end within 60 s
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
        ("link_window", 0, "'link_window' must be a whole number"),
        ("link_profiles", "seed,nope", "unknown profile 'nope'"),
        ("link_responder", "rust", "'link_responder' must be 'python' or 'c'"),
        ("link_cpus", "0,1,2", "'link_cpus' must be text matching"),
    ],
)
def test_bad_link_settings_are_refused_before_anything_runs(key, value, message):
    with pytest.raises(UserError, match=message):
        _spec(**{key: value})


@pytest.mark.parametrize(
    "other", [{"link_peer": "127.0.0.1:9"}, {"link_transport": "uart:///dev/ttyS1?baud=115200"}]
)
def test_the_c_responder_is_refused_where_the_suite_does_not_start_it(other):
    # a --peer or a bus has its responder at the other end
    with pytest.raises(UserError, match="the one at the other end"):
        _spec(link_responder="c", **other)
    _spec(**other)  # each is a valid setting with the Python responder
    _spec(link_responder="c", link_realtime=True)  # the C responder takes --realtime too


def test_the_aa_reply_delay_holds_only_the_copys_replies(tmp_path):
    # the responder holds each json-aa reply 300 us, left out of its processing time, so
    # every transport RTT of the copy is at least 300 us; json's replies are not held
    run_spec = _spec(aa="json", aa_reply_delay_s=0.0003, link_count=5, link_phases=1)
    runner.run(run_spec, tmp_path / "run", "test-run", Progress())
    periodic = {
        r["codec"]: r
        for r in _records(tmp_path / "run")
        if r["metric"] == "rtt_transport" and r["params"].get("phase") == "periodic"
    }
    assert set(periodic) == {"json", "json-aa"}
    assert periodic["json-aa"]["min"] >= 0.0003
    assert periodic["json-aa"]["n"] == periodic["json"]["n"] == 5
