"""The agent's side of the native harness protocol against a harness that crashes, hangs or
lies on demand (native_stand_in.py): each failure a HarnessError (a PartialRun) naming the
codec and the fault; a run keeps what it measured, partial."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from evbench_agent.native import protocol
from evbench_agent.native.codec import Expected, NativeOperation
from evbench_agent.native.protocol import Harness, HarnessError
from evbench_core.errors import ExitCode, PartialRun

STAND_IN = ROOT / "tests" / "native_stand_in.py"
PAYLOAD = b'{"a":1,"b":2.5,"c":"x"}'


def stand_in(directory: Path, mode: str, *extra: str, name: str = "stand-in") -> Path:
    """An executable that runs the stand-in in `mode` (what the agent starts)."""
    path = directory / name
    arguments = " ".join([mode, *extra])
    path.write_text(f'#!/bin/sh\nexec {sys.executable} {STAND_IN} {arguments} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_an_honest_harness_loads_times_and_sends_its_encoding_and_its_fnv1a_64(tmp_path):
    # The published FNV-1a 64 test vectors (Fowler, Noll, Vo): "" and "a".
    assert protocol.fnv1a64(b"") == "cbf29ce484222325"
    assert protocol.fnv1a64(b"a") == "af63dc4c8601ec8c"
    harness = Harness("c:stand-in", str(stand_in(tmp_path, "honest")))
    try:
        assert harness.about["library"] == "stand-in"
        loaded = harness.load("evbench.shapes.OneInt", None, PAYLOAD)
        assert (loaded.index, loaded.length) == (0, len(PAYLOAD))
        assert harness.encoded(loaded) == PAYLOAD
        timing = harness.time("encode", loaded, 7)
        assert (timing.elapsed_ns, timing.size) == (7000, len(PAYLOAD))
        assert NativeOperation(harness, "decode_access").time_loops(Expected(loaded, 3), 2) == 2000
    finally:
        harness.close()


@pytest.mark.parametrize(
    ("mode", "operation", "waits", "words"),
    [
        ("crash", "encode", {}, ["closed its output", "exit 3", "crashing as asked"]),
        ("kill", "encode", {}, ["closed its output", "signal 9, SIGKILL"]),
        ("garbage", "encode", {}, ["printed garbage", "binary junk"]),
        ("long-line", "encode", {}, ["over 4096 bytes"]),
        # a hung harness is killed after the wait
        ("hang", "encode", {"time_wait_s": 0.5, "short_wait_s": 5.0},
         ["did not answer 'time' within 5.5 s"]),
        # lies about what it produced: the stand-in's encoding is the payload's own 23 bytes,
        # and the payload has 3 leaves
        ("lie-size", "encode", {}, ["gave 24 bytes"]),
        ("lie-leaves", "decode_access", {}, ["gave 4 leaves"]),
    ],
)  # fmt: skip
def test_a_broken_or_lying_harness_is_a_clear_partial_run_error(
    tmp_path, mode, operation, waits, words
):
    harness = Harness("c:stand-in", str(stand_in(tmp_path, mode)), **waits)
    loaded = harness.load("evbench.shapes.OneInt", None, PAYLOAD)
    assert len(PAYLOAD) == 23
    with pytest.raises(HarnessError) as caught:
        NativeOperation(harness, operation).time_loops(Expected(loaded, 3), 5)
    assert isinstance(caught.value, PartialRun)
    message = str(caught.value)
    assert "native codec c:stand-in" in message
    for word in words:
        assert word in message
    harness.close()


def test_a_missing_executable_is_a_clear_error(tmp_path):
    with pytest.raises(HarnessError, match="cannot start"):
        Harness("c:stand-in", str(tmp_path / "nowhere"))


def agent_run(tmp_path: Path, mode: list, argv: list, timeout: int) -> subprocess.CompletedProcess:
    """`evbench-agent run ARGV --codecs json,c:cjson`, the stand-in in `mode` as c:cjson."""
    directory = tmp_path / "libexec"
    directory.mkdir()
    stand_in(directory, *mode, name="evbench-native-c-cjson")
    env = dict(os.environ, EVBENCH_NATIVE_DIR=str(directory))
    argv = ["--codecs", "json,c:cjson", *argv, "--out", str(tmp_path / "run")]
    agent = [sys.executable, "-m", "evbench_agent", "run", *argv]
    return subprocess.run(agent, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.integration
def test_a_harness_dying_in_the_second_worker_leaves_a_partial_run(tmp_path):
    """The stand-in takes c:cjson's place; it crashes at its 4th start: the 1st is the
    sizes (manager), the 2nd the calibration worker, the 3rd worker 1, the 4th worker 2."""
    codec_run = ["--suite", "codec", "--profile", "int", "--processes", "3", "--values", "3"]
    codec_run += ["--min-time", "0.001", "--payloads", "10"]
    done = agent_run(tmp_path, ["crash-late", "4", str(tmp_path / "starts")], codec_run, 300)
    assert done.returncode == ExitCode.PARTIAL, done.stderr
    assert "native codec c:cjson" in done.stderr and "exit 3" in done.stderr
    out = tmp_path / "run"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "partial"
    assert "c:cjson" in manifest["reason"]
    lines = (out / "samples.jsonl").read_text().splitlines()
    timed = [json.loads(line) for line in lines if '"metric": "encode"' in line]
    # Worker 1 (index 0) measured both codecs before worker 2's harness died.
    assert {(s["codec"], s["worker"]) for s in timed} == {("json", 0), ("c:cjson", 0)}


def test_the_link_suite_refuses_native_codecs_before_the_run(tmp_path):
    link_run = ["--suite", "link", "--quick", "--link-all-codecs"]
    done = agent_run(tmp_path, ["honest"], link_run, 120)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "the link suite cannot carry native codecs (c:cjson)" in done.stderr
    assert not (tmp_path / "run").exists()  # refused before the run wrote anything
