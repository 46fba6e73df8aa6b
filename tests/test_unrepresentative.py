"""Numbers that do not stand for the board, said before the answer: protobuf's pure-Python
backend (a real run's warning: test_report_compare.py), debug builds, unoptimised harnesses,
throttling. The machine's state around a replicate (telemetry.contention): arithmetic on
hand-made snapshots and figures, and on real processes that a CPU hog outside the run
counts as other processes' CPU while the run's own children do not."""

import functools
import os
import subprocess
import sys
import time

import psutil
import pytest

from evbench.report import unrepresentative
from evbench_agent.telemetry import contention
from evbench_agent.telemetry.contention import Snapshot
from evbench_core import comparison
from evbench_core.analysis import contention as bounds
from evbench_core.results import SampleSet

LinkSet = functools.partial(SampleSet, "link", "seed")
SPIN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"


def _manifest(backend: str, codecs: list[str], arms: dict | None = None) -> dict:
    manifest = {"spec": {"codecs": codecs}, "platform": {"protobuf_backend": backend}}
    return manifest if arms is None else manifest | {"arms": arms}


def test_slow_backends_debug_builds_and_throttling_are_named_and_compiled_ones_not():
    assert unrepresentative.warnings(_manifest("upb", ["json", "protobuf"])) == []
    assert unrepresentative.warnings(_manifest("cpp", ["protobuf"])) == []
    assert unrepresentative.warnings(_manifest("python", ["json", "orjson"])) == []
    # with arms, the arms' backends count, not the manager's
    slow_arm = {"old": {"protobuf_backend": "python"}, "new": {"protobuf_backend": "upb"}}
    (said,) = unrepresentative.warnings(_manifest("upb", ["protobuf"], slow_arm))
    assert "(arm old)" in said
    fast_arms = {"a": {"protobuf_backend": "upb"}, "b": {"protobuf_backend": "upb"}}
    assert unrepresentative.warnings(_manifest("python", ["protobuf"], fast_arms)) == []
    manifest = _manifest("upb", ["json", "c:cjson", "c:nanopb"])
    manifest["platform"]["python_debug"] = True
    manifest["platform"]["native_codecs"] = {
        "c:cjson": {"flags": "-g"},  # CMake's Debug: no -O at all, so -O0
        "c:nanopb": {"flags": "-O3 -DNDEBUG"},  # Release
        "cpp:protobuf": {"flags": "-O0"},  # installed, not measured: not named
    }
    python, native = unrepresentative.warnings(manifest)
    assert python.startswith("Python ran as a debug build (Py_DEBUG)")
    assert "c:cjson (-g)" in native and "nanopb" not in native and "cpp:" not in native
    # gcc(1): "If you use multiple -O options, ... the last such option is the one that
    # is effective"; -O alone is -O1; -Og optimises for debugging only.
    flags = ("-O2 -g", "-O", "-O2 -O0", "-Og", "")
    assert [unrepresentative.optimised(f) for f in flags] == [True, True, False, False, False]
    manifest = _manifest("upb", ["json", "protobuf"])
    manifest["telemetry"] = {
        "throttled_phases": [
            {"phase": "codec", "kind": None, "profile": "seed", "codec": None,
             "reasons": ["cooling_device0 at state 2 of 3"]},
        ]
    }  # fmt: skip
    (said,) = unrepresentative.warnings(manifest)
    assert said.startswith("the kernel throttled the CPU during 1 phase(s): codec seed (")
    assert "cooling_device0 at state 2 of 3" in said


def test_figures_by_hand_the_bound_and_busy_rows_counted_per_pair():
    # 2 s of wall time: the machine was busy 3.0 s of CPU, 1.2 s of it ours, so others
    # took 1.8 s: 90 % of one core; 0.2 s of steal over 2 s x N CPUs; the clock went
    # from 1.0 to 0.8 GHz: 20 % of 1.0.
    before = Snapshot(t_ns=0, busy_s=10.0, steal_s=1.0, own_s=5.0, frequency_hz=1.0e9)
    after = Snapshot(t_ns=2_000_000_000, busy_s=13.0, steal_s=1.2, own_s=6.2, frequency_hz=0.8e9)
    found = contention.figures(before, after)
    assert found[bounds.OTHERS_CPU] == pytest.approx(90.0)
    assert found[bounds.STEAL] == pytest.approx(100 * 0.2 / (2 * (os.cpu_count() or 1)))
    assert found[bounds.FREQUENCY_CHANGE] == pytest.approx(20.0)
    assert bounds.reasons({bounds.OTHERS_CPU: 19.9, bounds.STEAL: 4.9}) == []
    said = bounds.reasons(
        {bounds.OTHERS_CPU: 35.0, bounds.STEAL: 6.0, bounds.FREQUENCY_CHANGE: 12.0}
    )
    assert said == ["other processes 35 % of a core", "steal 6.0 %", "clock changed 12 %"]
    assert bounds.busy_share([{bounds.OTHERS_CPU: 50.0}, {}]) == (1, 2)
    # In pair 1 of 2 protobuf's phase ran beside others' 50 % of a core: the pair is busy
    # (the busier phase decides), so the RTT row has 1 busy replicate of 2, capacity none.
    periodic, capacity = {"phase": "periodic"}, {"phase": "capacity"}
    sets = []
    for phase in range(2):
        for codec in ("json", "protobuf"):
            sets.append(LinkSet(codec, "rtt", "s", periodic, [1e-4], phase))
            sets.append(LinkSet(codec, "capacity_msgs", "messages/s", capacity, [1e3], phase))
            others = 50.0 if (phase, codec) == (1, "protobuf") else 5.0
            sets.append(LinkSet(codec, bounds.OTHERS_CPU, "percent", periodic, [others], phase))
            sets.append(LinkSet(codec, bounds.OTHERS_CPU, "percent", capacity, [5.0], phase))
    result = comparison.compare(sets, "json", "protobuf")
    by_metric = {row.identity.metric: row for row in result.rows}
    assert by_metric["rtt"].busy == 1
    assert by_metric["capacity_msgs"].busy == 0
    assert result.busy == (1, 4)  # 2 periodic + 2 capacity pairs measured, 1 busy


def test_a_hog_outside_the_run_is_other_processes_cpu_and_our_own_children_are_not():
    """A child of this process spinning 0.3 s of CPU counts as our own, live or reaped. A
    spinner re-parented away (not a descendant) is someone else's: the others' CPU over the
    window is at least what it used. It spins once its stdin ends, after the window
    opened (spinning from its start, a loaded machine could see it all before the window)."""
    before = contention.take()
    subprocess.run([sys.executable, "-c", SPIN.format(seconds=0.3)], check=True, timeout=60)
    after = contention.take()
    assert after.own_s - before.own_s >= 0.27
    hog_code = "import sys\nsys.stdin.read()\n" + SPIN.format(seconds=0.4)
    launcher = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys\n"
         f"p = subprocess.Popen([sys.executable, '-c', {hog_code!r}], "
         "start_new_session=True)\nprint(p.pid, flush=True)\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert launcher.stdin is not None and launcher.stdout is not None
    with launcher.stdout:
        hog = psutil.Process(int(launcher.stdout.readline()))
    launcher.wait(timeout=30)  # the launcher is gone: the hog is nobody's child here
    before = contention.take()
    hog_before = hog_after = sum(hog.cpu_times()[:2])
    launcher.stdin.close()  # the hog's stdin (the launcher's, inherited) ends: it spins
    deadline = time.monotonic() + 60
    while True:
        assert time.monotonic() < deadline
        try:  # reaped between two looks: status() raised NoSuchProcess outside the try
            if hog.status() == psutil.STATUS_ZOMBIE:
                break
            hog_after = sum(hog.cpu_times()[:2])
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    after = contention.take()
    others_s = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    spun = hog_after - hog_before
    assert spun > 0.15  # it did spin in the window
    assert others_s >= 0.9 * spun
    assert contention.figures(before, after)[bounds.OTHERS_CPU] > 0
