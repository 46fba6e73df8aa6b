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
    # the verdict in one line per profile (ev-full, seed), then the answer's sentences
    assert [line.split(":")[0] for line in printed[:2]] == ["ev-full", "seed"]
    assert all(len(line) <= 100 for line in printed[:2])
    assert printed[3] == "The answer (Protobuf against JSON, on this machine):"
    start = printed.index(next(line for line in printed if line.startswith("Profile ")))
    end = printed.index("", start)
    key_table = printed[start:end]
    assert max(len(line) for line in key_table) <= 100
    metrics = {line.split("|")[1].strip(" *") for line in key_table[2:]}
    assert {"Size", "Serialization", "Deserialization"} <= metrics
    assert any(metric.startswith("RTT") for metric in metrics)
    assert "Medians per codec:" not in done.stdout and "Does it fit" not in done.stdout
    # Bus fit, from first principles: the seed's JSON is >= 995 B (the size row), which at
    # 10 bits a byte (8N1) holds a 115200 baud line 995 * 10 / 115200 = 86 ms, more than
    # the 50 ms period: it cannot fit there. Protobuf's 281 B at most take 281 * 8 / 2 Mbit/s
    # = 1.1 ms of CAN FD data phase, plus 5 frames' arbitration at 500 kbit/s (< 0.5 ms),
    # and as much for the reply: far below 40 % of 50 ms. It fits there.
    assert any(line.startswith("seed") and "Bus fit at 20 Hz" in line for line in key_table)
    fit = " ".join(printed[printed.index(next(p for p in printed if p.startswith("Bus fit:"))) :])
    json_fits, protobuf_fits = fit.split("seed: JSON fits ")[1].split("; Protobuf fits ")
    assert "uart-115200" not in json_fits
    assert "canfd-500k-2M" in protobuf_fits.split(" (of ")[0]
    assert f"evbench report --terminal {out}" in done.stdout
    assert f"Report with plots: {out / 'report.html'}" in done.stdout


def test_report_terminal_prints_what_the_default_leaves_out(quick_run):
    out, _done = quick_run
    shown = _evbench("report", "--terminal", str(out))
    assert shown.returncode == 0, shown.stderr
    assert "Medians per codec:" in shown.stdout
    assert "Does it fit at 20 Hz?" in shown.stdout  # the bus budget
    assert "Change (est.)" in shown.stdout  # the full comparison table's header
