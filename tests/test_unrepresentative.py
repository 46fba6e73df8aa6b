"""A run that timed protobuf on its pure-Python backend says so before its answer, in the
terminal and at the top of the report: a real run with the real runtime switched to it."""

from __future__ import annotations

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
    done = subprocess.run(
        [*EVBENCH, *SMALL_RUN, "--quick", "--no-history", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    assert printed[0].startswith("WARNING: protobuf ran on its pure-Python backend (this run)")
    assert printed.index("") < next(i for i, line in enumerate(printed) if "answer" in line)
    assert max(len(line) for line in printed[: printed.index("")]) <= 100
    markdown = (out / "report.md").read_text().splitlines()
    headings = [line for line in markdown if line.startswith("## ")]
    assert headings[0] == "## **Warning: these numbers do not stand for the board**"
    assert headings[1].startswith("## The answer")
    html = (out / "report.html").read_text()
    assert html.index("pure-Python backend") < html.index('<section id="answer"')


def _manifest(backend: str, codecs: list[str], arms: dict | None = None) -> dict:
    manifest = {"spec": {"codecs": codecs}, "platform": {"protobuf_backend": backend}}
    if arms is not None:
        manifest["arms"] = arms
    return manifest


def test_compiled_backends_and_runs_without_protobuf_get_no_warning():
    assert unrepresentative.warnings(_manifest("upb", ["json", "protobuf"])) == []
    assert unrepresentative.warnings(_manifest("cpp", ["protobuf"])) == []
    assert unrepresentative.warnings(_manifest("python", ["json", "orjson"])) == []


def test_with_arms_the_arms_backends_count_not_the_managers():
    slow_arm = {"old": {"protobuf_backend": "python"}, "new": {"protobuf_backend": "upb"}}
    (said,) = unrepresentative.warnings(_manifest("upb", ["protobuf"], slow_arm))
    assert "(arm old)" in said
    fast_arms = {"a": {"protobuf_backend": "upb"}, "b": {"protobuf_backend": "upb"}}
    assert unrepresentative.warnings(_manifest("python", ["protobuf"], fast_arms)) == []
