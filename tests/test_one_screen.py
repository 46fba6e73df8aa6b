"""`evbench run` ends on one screen: the answer, the key rows and where the rest is, no line
wider than 120 columns (measured on the real output of a quick local run of both suites);
the full tables stay one command away (`evbench report --terminal RUN`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration  # a real run of the codec and link suites

EVBENCH = [sys.executable, "-m", "evbench"]


def _evbench(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*EVBENCH, *argv], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("glance") / "run"
    done = _evbench("run", "--quick", "--no-history", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out, done


def test_the_default_output_is_one_screen_of_at_most_120_columns(quick_run):
    out, done = quick_run
    printed = done.stdout.splitlines()
    for line in printed + done.stderr.splitlines():  # progress included
        assert len(line) <= 120, line
    assert len(printed) <= 50, done.stdout  # the answer and the pointers: one screen
    assert printed[0] == "The answer (Protobuf against JSON, on this machine):"
    start = printed.index(next(line for line in printed if line.startswith("Profile ")))
    end = printed.index("", start)
    key_table = printed[start:end]
    assert max(len(line) for line in key_table) <= 100
    metrics = {line.split("|")[1].strip(" *") for line in key_table[2:]}
    assert {"Size", "Serialization", "Deserialization"} <= metrics
    assert any(metric.startswith("RTT") for metric in metrics)
    assert "Medians per codec:" not in done.stdout and "Does it fit" not in done.stdout
    assert f"evbench report --terminal {out}" in done.stdout
    assert f"Report with plots: {out / 'report.html'}" in done.stdout


def test_report_terminal_prints_what_the_default_leaves_out(quick_run):
    out, _done = quick_run
    shown = _evbench("report", "--terminal", str(out))
    assert shown.returncode == 0, shown.stderr
    assert "Medians per codec:" in shown.stdout
    assert "Does it fit at 20 Hz?" in shown.stdout  # the bus budget
    assert "% Diff (est.)" in shown.stdout  # the full comparison table's header
