"""Where the link's sender and loopback responder run (link.placement): the choice,
worked by hand from the documented rule, and the pinning as the kernel reports it
(/proc/PID/task/TID/status, Cpus_allowed_list); and the sender's real-time scheduling."""

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import process_tree
import pytest
from conftest import require

from evbench_agent import spec
from evbench_agent.link import placement
from evbench_agent.link.placement import Placement
from evbench_agent.link.service import start_responder
from evbench_agent.progress import Progress
from evbench_agent.run import runner
from evbench_core.errors import UserError

CPUS = sorted(os.sched_getaffinity(0))


@pytest.fixture
def two_cpus() -> None:
    require(len(CPUS) >= 2, "a second CPU for this process (pinning apart)")


needs_two = pytest.mark.usefixtures("two_cpus")


@pytest.mark.parametrize(
    ("value", "allowed", "loopback", "avoid", "expected"),
    [
        # auto: the second-last and the last of the agent's CPUs
        ("auto", [0, 1, 2, 3], True, None, Placement(2, 3)),
        ("auto", [3, 0, 2, 1], True, None, Placement(2, 3)),  # in any order
        ("auto", [0, 1], True, None, Placement(0, 1)),
        # the telemetry sampler's CPU is skipped while two others remain
        ("auto", [0, 1, 2, 3], True, 3, Placement(1, 2)),
        ("auto", [0, 1], True, 1, Placement(0, 1)),  # not two others: used anyway
        # one CPU: pinning would change nothing
        ("auto", [0], True, None, Placement()),
        # a responder at --peer or a bus is not placed
        ("auto", [0, 1, 2, 3], False, None, Placement(2, None)),
        ("none", [0, 1, 2, 3], True, None, Placement()),
        ("1,0", [0, 1], True, None, Placement(1, 0)),
        ("2", [0, 1, 2, 3], True, None, Placement(2, None)),
        ("2", [0, 1, 2, 3], False, None, Placement(2, None)),
        # a placement it cannot have is a clear error
        ("5", [0, 1], True, None, "CPU 5 is not one this agent may run on"),
        ("0,7", [0, 1], True, None, "CPU 7 is not one"),
        ("0,1", [0, 1], False, None, "the responder is at the other end"),
        ("0;1", [0, 1], True, None, "takes auto, none, CLIENT or CLIENT,RESPONDER"),
    ],
)
def test_the_placement_follows_the_documented_rule(value, allowed, loopback, avoid, expected):
    if isinstance(expected, str):
        with pytest.raises(UserError, match=expected):
            placement.choose(value, allowed, loopback, avoid)
    else:
        assert placement.choose(value, allowed, loopback, avoid) == expected


def test_the_records_name_the_placement_only_when_something_is_pinned():
    assert Placement(0, 1).as_params() == {"cpus": "0,1"}
    assert Placement(2, None).as_params() == {"cpus": "2,-"}
    assert Placement().as_params() == {}  # an unpinned run keeps its earlier identity


def _allowed(pid: int, tid: int | str) -> str:
    status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("Cpus_allowed_list:")]
    return line.split(":", 1)[1].strip()


def _threads(pid: int) -> list[str]:
    return sorted(entry.name for entry in Path(f"/proc/{pid}/task").iterdir())


@needs_two
def test_the_sender_and_the_threads_it_starts_run_on_its_cpu_then_get_theirs_back():
    before = os.sched_getaffinity(0)
    cpu = CPUS[-2]
    seen: dict[str, set[int]] = {}

    def started() -> None:
        seen["thread"] = os.sched_getaffinity(0)

    with placement.sender_on(cpu):
        seen["sender"] = os.sched_getaffinity(0)
        thread = threading.Thread(target=started)
        thread.start()
        thread.join()
    assert seen == {"sender": {cpu}, "thread": {cpu}}
    assert os.sched_getaffinity(0) == before


CHILD = """
import sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("ready", flush=True)
sys.stdin.readline()
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("later", flush=True)
time.sleep(60)
"""


@needs_two
def test_every_thread_of_a_pinned_process_runs_on_its_cpu_and_so_do_later_ones():
    cpu = CPUS[-1]
    with subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout.readline() == "ready\n"
            assert len(_threads(child.pid)) == 2
            placement.pin_process(child.pid, cpu)
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline() == "later\n"
            threads = _threads(child.pid)
            assert len(threads) == 3
            allowed = {tid: _allowed(child.pid, tid) for tid in threads}
            assert allowed == dict.fromkeys(threads, str(cpu))
        finally:
            child.kill()


@needs_two
def test_a_responder_started_on_a_cpu_answers_from_it():
    cpu = CPUS[-1]
    with start_responder(cpu=cpu) as responder:
        threads = _threads(responder.pid)
        assert {_allowed(responder.pid, tid) for tid in threads} == {str(cpu)}
    with start_responder() as responder:  # left to the scheduler: every CPU
        allowed = {_allowed(responder.pid, tid) for tid in _threads(responder.pid)}
        assert allowed == {_allowed(os.getpid(), os.getpid())}


@needs_two
@pytest.mark.parametrize(
    ("cpus", "responder_on"),
    [(f"{CPUS[0]}", None), (f"{CPUS[0]},{CPUS[-1]}", str(CPUS[-1]))],
)
def test_a_run_pins_only_what_it_is_told_to(tmp_path, cpus, responder_on):
    """With the sender alone pinned, the loopback responder keeps every CPU of the agent's
    (started before the sender is pinned, or it would inherit the sender's CPU)."""
    document = {"suites": ["link"], "codecs": ["json", "protobuf"], "link_cpus": cpus}
    document.update(link_rate_hz=100.0, link_warmup_s=0.02, link_phases=3, link_count=10,
                    link_capacity_s=0.05)  # fmt: skip
    found: dict[str, set[str]] = {}
    done = threading.Event()

    def watch() -> None:  # runner.run takes signals: it runs on the main thread
        # the last look counts: the responder is placed only once it listens
        while not done.is_set():
            for pid in process_tree.descendants(os.getpid()):
                if b"serve" in process_tree.read_proc(pid, "cmdline"):
                    with contextlib.suppress(OSError):
                        found["responder"] = {_allowed(pid, tid) for tid in _threads(pid)}
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        runner.run(spec.from_dict(document), tmp_path / "run", "placement-run", Progress())
    finally:
        done.set()
        watcher.join()
    everything = _allowed(os.getpid(), os.getpid())
    assert found == {"responder": {responder_on or everything}}


#: Real-time scheduling for the sender, read back in a fresh process (this one stays ordinary).
REALTIME = """
import json, os
from evbench_agent.link import timing
before = timing.current()
granted = timing.enter_realtime()
policy_now = os.sched_getscheduler(0)
timing.leave_realtime(before)
after = timing.current()
print(json.dumps({"granted": granted.as_params(), "fifo_read_back": policy_now == os.SCHED_FIFO,
                  "slack_before": before.timer_slack_ns, "after": after.as_params(),
                  "root": os.geteuid() == 0}))
"""


def test_realtime_records_what_the_kernel_granted_and_is_undone():
    argv = [sys.executable, "-c", REALTIME]
    probe = json.loads(subprocess.run(argv, capture_output=True, timeout=60, check=True).stdout)
    granted = probe["granted"]
    assert granted["realtime"] is True
    assert granted["realtime_granted"] == probe["fifo_read_back"]
    if probe["root"]:  # root may always have SCHED_FIFO; CI runs as root
        assert granted["realtime_granted"] and granted["policy"] == "SCHED_FIFO"
    if granted["realtime_granted"]:
        assert granted["timer_slack_ns"] in (0, 1)  # 0: the kernel reports none for RT tasks
    after = probe["after"]
    assert after["policy"] == "SCHED_OTHER" and after["realtime_granted"] is False
    assert after["timer_slack_ns"] == probe["slack_before"]
