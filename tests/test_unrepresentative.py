"""A run that timed protobuf on its pure-Python backend says so before its answer, in the
terminal and at the top of the report: a real run with the real runtime switched to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from evbench.report import unrepresentative

EVBENCH = [sys.executable, "-m", "evbench"]
SMALL_RUN = ["run", "--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf"]


@pytest.mark.integration  # a real agent run
def test_a_pure_python_protobuf_run_warns_before_the_answer_in_terminal_and_report(tmp_path):
    out = tmp_path / "run"
    # protobuf's own switch to its pure-Python implementation (any protobuf 4.21+)
    environment = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
    argv = [*EVBENCH, *SMALL_RUN, "--quick", "--no-history", "--out", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=environment)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    assert printed[0].startswith("WARNING: protobuf ran on its pure-Python backend (this run)")
    assert printed.index("") < next(i for i, line in enumerate(printed) if "answer" in line)
    assert max(len(line) for line in printed[: printed.index("")]) <= 100
    markdown = (out / "report.md").read_text().splitlines()
    headings = [line for line in markdown if line.startswith("## ")]
    assert headings[0] == "## **Environment: WARNING, these numbers do not stand for the board**"
    assert headings[1].startswith("## The answer")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["platform"]["protobuf_backend"] == "python"  # what protobuf said it ran
    assert f"- protobuf: {manifest['platform']['protobuf']}, python backend" in markdown
    html = (out / "report.html").read_text()
    box = html[html.index('<section id="environment"') : html.index('<section id="answer"')]
    assert '<div class="warning">' in box and "pure-Python backend" in box


def _manifest(backend: str, codecs: list[str], arms: dict | None = None) -> dict:
    manifest = {"spec": {"codecs": codecs}, "platform": {"protobuf_backend": backend}}
    if arms is not None:
        manifest["arms"] = arms
    return manifest


def test_compiled_backends_and_runs_without_protobuf_get_no_warning_and_arms_count():
    assert unrepresentative.warnings(_manifest("upb", ["json", "protobuf"])) == []
    assert unrepresentative.warnings(_manifest("cpp", ["protobuf"])) == []
    assert unrepresentative.warnings(_manifest("python", ["json", "orjson"])) == []
    # with arms, the arms' backends count, not the manager's
    slow_arm = {"old": {"protobuf_backend": "python"}, "new": {"protobuf_backend": "upb"}}
    (said,) = unrepresentative.warnings(_manifest("upb", ["protobuf"], slow_arm))
    assert "(arm old)" in said
    fast_arms = {"a": {"protobuf_backend": "upb"}, "b": {"protobuf_backend": "upb"}}
    assert unrepresentative.warnings(_manifest("python", ["protobuf"], fast_arms)) == []


def test_a_debug_python_and_an_unoptimised_native_harness_are_named():
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


def test_the_last_optimisation_flag_counts_as_the_compiler_reads_it():
    # gcc(1): "If you use multiple -O options, ... the last such option is the one that
    # is effective"; -O alone is -O1; -Og optimises for debugging only.
    assert unrepresentative.optimised("-O2 -g")
    assert unrepresentative.optimised("-O")
    assert not unrepresentative.optimised("-O2 -O0")
    assert not unrepresentative.optimised("-Og")
    assert not unrepresentative.optimised("")


def test_a_throttled_phase_is_named_with_its_reasons():
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
