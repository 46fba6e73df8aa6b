"""Two builds in one run (`--arm`): the options, the turn order worked by hand from the plan
(docs/method.md), and real arms end to end: tests/setup_envs.py's .venv-pb425 (protobuf
4.25.8) and .venv (the newest), whose versions they report themselves.
"""

import argparse
import contextlib
import io
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import process_tree
import pytest
from conftest import ROOT, require
from test_run_local import _mid_run

from evbench_agent import arm_worker, arms, options, spec
from evbench_agent.suites import codec_arms
from evbench_core import results
from evbench_core.comparison import compare
from evbench_core.errors import UserError

PB425 = ROOT / ".venv-pb425"
NEWEST = ROOT / ".venv"


def _version(venv: Path) -> str:
    code = "import google.protobuf as p; print(p.__version__)"
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _stopped(pid: int) -> bool:
    """SIGSTOP `pid`: whether it is now stopped (else it ended by itself, its replicate done)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = process_tree.read_proc(pid, "stat").rpartition(b")")[2].split()[:1]
        if state not in ([b"R"], [b"S"], [b"D"]):  # T stopped; Z, X or gone: it ended
            return state == [b"T"]
        time.sleep(0.01)
    return False


def test_arm_is_given_once_per_arm_and_passed_on_to_the_agent_as_given():
    parser = argparse.ArgumentParser()
    options.add_run_options(parser)
    args = parser.parse_args(["--arm", "old=/opt/a", "--arm", "new=python3", "--quick"])
    assert options.agent_argv(args) == ["--quick", "--arm", "old=/opt/a", "--arm", "new=python3"]
    assert options.spec_overrides(args)["arms"] == ["old=/opt/a", "new=python3"]


def test_arms_measure_protobuf_in_the_codec_suite_unless_told_otherwise():
    made = spec.from_dict({"arms": ["old=/opt/a", "new=/opt/b"]})
    assert made.arms == {"old": "/opt/a", "new": "/opt/b"}
    assert made.suites == ("codec",) and made.codecs == ("protobuf",)
    told = spec.from_dict({"arms": {"a": "x", "b": "y"}, "codecs": "json,protobuf"})
    assert told.codecs == ("json", "protobuf")
    assert "arms" not in spec.from_dict({}).as_dict()  # a run of one environment, as before


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ({"arms": ["only=/opt/a"]}, "give 2 to 8 arms, not 1"),
        ({"arms": ["a=/x", "a=/y"]}, "given twice"),
        ({"arms": ["a/b=/x", "c=/y"]}, "not usable"),
        ({"arms": ["a", "b=/y"]}, "has no '='"),
        ({"arms": ["a=", "b=/y"]}, "names no interpreter"),
        ({"arms": ["a=/x", "b=/y"], "suites": "codec,link"}, "the link suite"),
        ({"arms": ["a=/x", "b=/y"], "aa": "json"}, "give one of them"),
    ],
)
def test_bad_arms_are_refused_before_anything_runs(document, says):
    with pytest.raises(UserError, match=says):
        spec.from_dict(document)


def test_an_arm_names_a_venv_an_interpreter_or_a_command(tmp_path):
    require((PB425 / "bin" / "python").exists(), "the .venv-pb425 environment")
    assert arms.interpreter(str(PB425)) == str(PB425 / "bin" / "python3")
    assert arms.interpreter(str(PB425 / "bin" / "python")) == str(PB425 / "bin" / "python")
    found_by_sh = subprocess.check_output(["sh", "-c", "command -v sh"]).decode().strip()
    assert arms.interpreter("sh") == found_by_sh
    with pytest.raises(UserError, match="not a virtual environment"):
        arms.interpreter(str(tmp_path))
    with pytest.raises(UserError, match="no interpreter or virtual environment"):
        arms.interpreter(str(tmp_path / "missing"))


def test_arms_take_turns_operation_by_operation_a_b_then_b_a_each_primed():
    # Round 0 (A B): each operation's first sample (old's) is primed, untimed, by the arm
    # timed last in it (new): no arm's sample follows another operation.
    even = codec_arms.round_turns(["old", "new"], ["protobuf"], 0)
    assert even == [
        ("new", [["protobuf", "encode", "prime"]]),
        ("old", [["protobuf", "encode"]]),
        ("new", [["protobuf", "encode"], ["protobuf", "decode", "prime"]]),
        ("old", [["protobuf", "decode"]]),
        ("new", [["protobuf", "decode"], ["protobuf", "decode_access", "prime"]]),
        ("old", [["protobuf", "decode_access"]]),
        ("new", [["protobuf", "decode_access"]]),
    ]
    odd = codec_arms.round_turns(["old", "new"], ["protobuf"], 1)
    assert [arm for arm, _cells in odd] == ["old", "new"] * 3 + ["old"]
    # Two codecs: an arm's consecutive steps are one turn; B A reverses arms and codecs,
    # and the operation's last cell (json@old) primes it.
    assert codec_arms.round_turns(["old", "new"], ["json", "protobuf"], 1)[:3] == [
        ("old", [["json", "encode", "prime"]]),
        ("new", [["protobuf", "encode"], ["json", "encode"]]),
        ("old", [["protobuf", "encode"], ["json", "encode"], ["json", "decode", "prime"]]),
    ]


def test_every_arm_sample_follows_the_same_operation_of_another_cell():
    # The codec suite's rule (test_codec_order.py) over the arms' turns, in whichever
    # process: just before each sample runs the same operation of another codec@arm.
    for names, round_number in itertools.product((["protobuf"], ["json", "protobuf"]), (0, 1)):
        turns = codec_arms.round_turns(["old", "new"], names, round_number)
        steps = [(arm, *step) for arm, turn in turns for step in turn]
        samples = [i for i, step in enumerate(steps) if len(step) == 3]
        assert len(samples) == 2 * len(names) * 3
        for i in samples:
            arm, name, operation = steps[i]
            before = steps[i - 1]
            assert i > 0 and before[2] == operation and before[:2] != (arm, name), steps


def test_an_arm_without_a_codec_of_the_run_is_named_before_anything_is_written(tmp_path):
    require((PB425 / "bin" / "python").exists(), "the .venv-pb425 environment")
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent", "run", "--arm", f"pb425={PB425}",
         "--arm", f"newest={NEWEST}", "--codecs", "orjson", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "the arm 'pb425'" in done.stderr and "lacks the codec orjson" in done.stderr
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_an_arm_worker_takes_a_sample_only_when_told(tmp_path):
    """The worker side alone, in this interpreter: one warm-up and two values."""
    task = {
        "suite": "codec", "profiles": ["int"], "codecs": ["json"], "payloads": 5, "seed": 1,
        "min_time": 0.0002, "cpu": None, "gc": True, "slowdown": {},
        "payload_digests": {"int": {"payload_digest": "hand-given"}}, "mode": "measure",
        "worker": 0, "values": 2, "warmups": 1, "params": {"order": "by hand"},
        "loops": {f"int|json|{op}": 50 for op in ("encode", "decode", "decode_access")},
    }  # fmt: skip
    commands = [task, {"begin": "int"}]
    # Each round primes decode (untimed: no value), then takes encode's sample.
    steps = [["json", "decode", "prime"], ["json", "encode"]]
    commands += [{"round": r, "cells": steps} for r in range(3)]
    commands += [{"end": "int"}, {"finish": True}]
    answers = io.StringIO()
    arm_worker.serve(io.StringIO("".join(json.dumps(c) + "\n" for c in commands)), answers)
    replies = [json.loads(line) for line in answers.getvalue().splitlines()]
    assert replies[:5] == [{"ready": "int"}, *({"done": r} for r in range(3)), {"ended": "int"}]
    sets = {s["metric"]: s for s in replies[5]["result"]["sample_sets"]}
    assert len(sets["encode"]["values"]) == 2  # rounds 1 and 2; round 0 was the warm-up
    assert sets["decode"]["values"] == []  # primed only: never a sample
    assert sets["encode"]["params"]["payload_digest"] == "hand-given"


@pytest.mark.integration
@pytest.mark.compat
def test_protobuf_4_25_against_the_newest_gives_a_verdict_per_operation(tmp_path):
    require((PB425 / "bin" / "python").exists(), "the .venv-pb425 environment")
    old, new = _version(PB425), _version(NEWEST)
    assert old == "4.25.8" and old != new
    out = tmp_path / "run"
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "evbench"), "run", "--board", "local", "--arm",
         f"pb425={PB425}", "--arm", f"newest={NEWEST}", "--quick", "--profile", "seed",
         "--no-history", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    versions = {name: arm["protobuf"] for name, arm in manifest["arms"].items()}
    assert versions == {"pb425": old, "newest": new}
    assert manifest["memory"]["worker_peak_rss_bytes"] > 1_000_000  # the arms' workers counted
    # The answer names both arms' versions, then one verdict per timed operation.
    assert "pb425: Python" in done.stdout and f"protobuf {old}" in done.stdout
    assert f"protobuf {new}" in done.stdout
    assert "The answer (protobuf@newest against protobuf@pb425" in done.stdout
    rows = {
        line.split("|")[1].strip().removesuffix(" *"): line.split("|")[5].strip()
        for line in done.stdout.splitlines()
        if line.startswith("seed ")
    }
    for metric in ("Serialization", "Deserialization", "Deserialization + access"):
        # A word of docs/method.md's verdict table, the winner one of the arms: which, the
        # machine says (a loaded one made a difference negligible). Not "n too small": the
        # quick plan's 8 processes reach p = 2/256, times the 3 operations, below 0.05.
        verdicts = ("protobuf@pb425", "protobuf@newest", "equal", "negligible", "undecided")
        assert rows[metric] in verdicts, rows
    report = (out / "report.html").read_text(encoding="utf-8")
    assert f"protobuf {old}" in report and f"protobuf {new}" in report  # its Arms section
    # The quick plan by hand: 8 replicates x 3 values per arm and operation, no more.
    with (out / "samples.jsonl").open(encoding="utf-8") as stream:
        records = [json.loads(line) for line in stream]
    timed = [r for r in records if r["suite"] == "codec" and r["metric"] == "encode"]
    assert sorted((r["codec"], r["worker"], len(r["values"])) for r in timed) == sorted(
        (label, worker, 3) for label in ("protobuf@pb425", "protobuf@newest") for worker in range(8)
    )
    measured = [r for r in records if r["suite"] == "codec" and r["profile"] is not None]
    digests = {r["params"]["payload_digest"] for r in measured}
    assert len(digests) == 1  # both arms measured one payload set
    # the machine around each replicate (the table's * marks), as around a codec worker
    busy = {r["worker"] for r in records if r["metric"] == "contention_others_cpu"}
    assert busy == set(range(8))


@pytest.mark.integration
def test_the_pure_python_backend_loses_to_upb_on_every_operation(tmp_path):
    """protobuf's pure-Python backend against upb (C), same venv: an arm is any executable
    that runs Python, here a script setting protobuf's documented variable."""
    slow = tmp_path / "python-backend"
    slow.write_text(
        "#!/bin/sh\n"
        "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python\n"
        "export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION\n"
        f'exec "{NEWEST / "bin" / "python"}" "$@"\n'
    )
    slow.chmod(0o755)
    out = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable, "-m", "evbench_agent", "run", "--arm", f"upb={NEWEST}",
            "--arm", f"purepy={slow}", "--quick", "--profile", "int", "--payloads", "20",
            "--out", str(out),
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["arms"]["upb"]["protobuf_backend"] == "upb"
    assert manifest["arms"]["purepy"]["protobuf_backend"] == "python"
    found = compare(list(results.load_run(out).samples()), "protobuf@upb", "protobuf@purepy")
    verdicts = {row.identity.metric: row.outcome for row in found.by_role("tested")}
    assert verdicts == dict.fromkeys(("encode", "decode", "decode_access"), "baseline")  # upb


@pytest.mark.integration
def test_an_arm_worker_killed_mid_run_leaves_a_partial_run_that_names_the_arm(tmp_path):
    require((PB425 / "bin" / "python").exists(), "the .venv-pb425 environment")
    out = tmp_path / "run"
    argv = [
        sys.executable, "-m", "evbench_agent", "run", "--arm", f"pb425={PB425}",
        "--arm", f"newest={NEWEST}", "--profile", "seed", "--processes", "40", "--out", str(out),
    ]  # fmt: skip

    def kill_a_worker_of_pb425(agent: subprocess.Popen) -> bool:
        # Once measuring (sizes written: calibration is over); one stopped first, else it
        # ended by itself: look on.
        for pid in process_tree.descendants(agent.pid):
            line = process_tree.read_proc(pid, "cmdline").split(b"\0")
            if b"evbench_agent.arm_worker" in line and b"pb425" in line[0] and _stopped(pid):
                os.kill(pid, signal.SIGKILL)
                return True
        return False

    code, _, errors = _mid_run(argv, out, kill_a_worker_of_pb425, "saw an arm worker of pb425")
    assert code == 4, errors[-2000:]  # partial
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "partial"
    assert "arm 'pb425' was killed" in manifest["reason"]
    with (out / "samples.jsonl").open(encoding="utf-8") as stream:
        kept = {json.loads(line)["metric"] for line in stream}
    assert {"size", "size_deflate"} <= kept  # what was measured before is kept
