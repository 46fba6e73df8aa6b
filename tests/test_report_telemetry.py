"""Telemetry and older runs in the report.

The telemetry plot is checked on a real local run whose sampler reads a sysfs
tree laid out like an AM62x's (tests/telemetry_am62x.py: this machine has no
thermal zones or cpufreq), with the cooling device engaged so the kernel
"throttles" throughout. The older run is a run directory written by the
first agent (codec suite only, before telemetry), kept in tests/data/runs.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest
from conftest import ROOT
from report_helpers import evbench, local_run
from telemetry_am62x import Am62xTree

from evbench.report import plots, telemetry
from evbench.report.context import load_context
from evbench_agent.telemetry.session import SYSFS_ENV

OLD_RUN = ROOT / "tests" / "data" / "runs" / "core-v1"


@pytest.mark.integration
def test_telemetry_plot_has_cpu_frequency_temperature_phases_and_throttling(tmp_path):
    board = Am62xTree(tmp_path / "sys")
    board.set_cooling_state(1)
    out = tmp_path / "run"
    local_run(out, "--suite", "codec", env=dict(os.environ, **{SYSFS_ENV: str(board.root)}))
    series = telemetry.load(out)
    assert series is not None and series.samples
    labels = [label for label, _ in telemetry.panels(series)]
    assert labels == ["CPU utilisation (%)", "frequency (MHz)", "temperature (°C)"]
    assert len(series.throttles) == 1  # one cooling-device throttle start
    assert [name for name, _start, _end in series.suites] == ["idle", "codec"]
    html = (out / "report.html").read_text()
    assert '<figure id="telemetry">' in html
    assert "red lines throttle events (1)" in html
    assert "No sensor for" not in html
    lines = (out / "report.md").read_text().splitlines()
    sensors = next(line for line in lines if line.startswith("| Sensors | "))
    shortened = re.search(r"…\[(\d+)\] \|$", sensors)  # a cell cut to fit 120 columns
    if shortened:  # is listed whole under its table
        sensors = next(line for line in lines if line.startswith(f"- [{shortened[1]}] "))
    assert "thermal_zone0 (main0_thermal)" in sensors and "ina226 power (W)" in sensors
    assert "absent" not in sensors  # every kind of sensor was found


def test_an_older_run_renders_complete(tmp_path):
    run = tmp_path / "old"
    shutil.copytree(OLD_RUN, run)
    done = evbench("report", str(run))
    assert done.returncode == 0, done.stderr
    context = load_context(run)
    assert not context.partial
    assert [p.name for p in plots.plans(context)] == ["codec-times", "codec-sizes"]
    markdown = (run / "report.md").read_text()
    assert "| Sensors | no telemetry in this run |" in markdown
    # Two worker processes are two replicates. JSON's cell is the median of their medians
    # (samples.jsonl: 58.34 and 56.05 µs -> 57.2 µs). Protobuf's cell is the estimate the
    # test uses, JSON's cell times exp(HL of the processes' log-ratios): each process's
    # log-ratio is the median of its 5 per-round log(protobuf / json), -3.97402 and
    # -3.87147; with two, the Hodges-Lehmann centre is their mean, -3.92275, so
    # 57.19 µs x 0.019787 = 1.13 µs; 1 / 0.019787 = 50.5, "51x faster". No interval
    # across two, and no verdict reachable (the best exact signed-rank p with 2 pairs is
    # 2 / 2**2 = 0.5).
    assert "| seed | Serialization | 57.2 µs | 1.13 µs | 51x faster |" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| seed | Serialization"))
    assert "| n too small |" in row and "| 2 processes |" in row


def test_the_size_plot_names_the_zlib_level_the_run_recorded() -> None:
    # tests/data/runs/core-v1: both size_deflate records carry params.zlib_level 6.
    context = load_context(ROOT / "tests" / "data" / "runs" / "core-v1")
    sizes = next(p for p in plots.plans(context) if p.name == "codec-sizes")
    assert "Deflated: zlib level 6. " in sizes.caption
    context.records[:] = [dict(r, params={}) for r in context.records]  # a run without it
    sizes = next(p for p in plots.plans(context) if p.name == "codec-sizes")
    assert "zlib level" not in sizes.caption
