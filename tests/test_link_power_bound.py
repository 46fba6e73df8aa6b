"""benchmarks/link_power_bound.py's own arithmetic, by hand, and its reading of a real run
(a small link run on loopback). The figures it prints for a full run are the note's."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from pathlib import Path

import pytest

from evbench_agent import spec
from evbench_agent.progress import Progress
from evbench_agent.run import runner

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "link_power_bound.py"

_spec = importlib.util.spec_from_file_location("link_power_bound", SCRIPT)
bound = importlib.util.module_from_spec(_spec)
sys.modules["link_power_bound"] = bound  # a script, not a package module: loaded by path
_spec.loader.exec_module(bound)


def test_the_duets_a_row_would_need_scale_with_the_square_of_its_interval():
    # 37.2 % with 30 pairs: half-width log(1.372 / 1.02) = 0.29648 against the aim's
    # log(1.2 / 1.02) = 0.16252; (0.29648 / 0.16252)^2 = 3.3280, x 30 = 99.84 pairs
    assert bound.duets_for_aim(0.372, 30) == pytest.approx(99.84, abs=0.05)
    assert bound.duets_for_aim(0.20, 30) == pytest.approx(30)  # at the aim already


def test_identical_duets_give_no_spread_and_the_ratio_of_the_statistics():
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


def test_it_reads_a_real_runs_duets_and_prints_every_row(tmp_path, capsys):
    document = {"suites": ["link"], "codecs": ["json", "protobuf"], "link_count": 5}
    document.update(link_rate_hz=100.0, link_warmup_s=0.02, link_phases=3, link_capacity_s=0.05)
    run = tmp_path / "run"
    runner.run(spec.from_dict(document), run, "bound-run", Progress())
    # comparison.csv, as `evbench report` writes it for a run
    report = [sys.executable, "-m", "evbench", "report", str(run)]
    subprocess.run(report, check=True, capture_output=True, timeout=120)
    pairs = bound.duets(run, "rtt_transport", "json", "protobuf")
    assert len(pairs) == 3  # one per duet, both codecs, every measured message
    assert all(sorted(d) == ["json", "protobuf"] and len(d["json"]) == 5 for d in pairs)
    assert bound.main([str(run), "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    for label in bound.ROWS:
        (line,) = [line for line in out.splitlines() if line.strip().startswith(label)]
        assert "    15 " in line  # 3 duets x 5 messages of each codec
