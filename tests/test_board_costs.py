"""benchmarks/board_costs.py: the pure figures (medians, paired ratios, the table) on
hand-worked numbers. The board part is a benchmark run by hand, never a test."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "board_costs.py"
MIB = 1024 * 1024


_spec = importlib.util.spec_from_file_location("board_costs", SCRIPT)
board_costs = importlib.util.module_from_spec(_spec)
sys.modules["board_costs"] = board_costs  # a script, not a package module: loaded by path
_spec.loader.exec_module(board_costs)


def test_summary_is_median_min_max_and_count() -> None:
    assert board_costs.summary([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert board_costs.summary([4.0, 1.0, 2.0, 3.0])["median"] == 2.5  # mean of the middle two
    with pytest.raises(ValueError, match="no values"):
        board_costs.summary([])


def test_ratios_pair_each_repeat_with_its_own_baseline() -> None:
    # Repeat 1: 2 s against 1 s; repeat 2: 9 s against 3 s. A ratio of medians
    # (5.5 / 2) would be 2.75; the paired ratios are 2 and 3.
    assert board_costs.paired_ratios([2.0, 9.0], [1.0, 3.0]) == [2.0, 3.0]
    with pytest.raises(ValueError, match="2 figures against 1 baselines"):
        board_costs.paired_ratios([2.0, 9.0], [1.0])
    with pytest.raises(ValueError, match="zero or less"):
        board_costs.paired_ratios([2.0], [0.0])


def _figures() -> dict:
    sampler = [(2_000_000, 1_000_000_000), (3_000_000, 1_000_000_000)]  # 0.2 %, 0.3 %
    bare = [(1_000_000, 1_000_000_000), (1_000_000, 500_000_000)]  # 0.1 %, 0.2 %
    return {
        "board": {"machine": "aarch64"},
        "startup": {"rows": [
            {"agent_cpu_s": 0.2, "bare_cpu_s": 0.1, "agent_wall_s": 1.0, "bare_wall_s": 0.5},
            {"agent_cpu_s": 0.3, "bare_cpu_s": 0.1, "agent_wall_s": 1.2, "bare_wall_s": 0.4},
            {"agent_cpu_s": 0.6, "bare_cpu_s": 0.2, "agent_wall_s": 2.0, "bare_wall_s": 0.5},
        ]},
        "run": {"args": ["--quick"], "rows": [
            {"run_wall_s": 60.0, "bare_wall_s": 0.5, "run_cpu_s": 50.0,
             "manager_peak_rss_bytes": 30 * MIB, "worker_peak_rss_bytes": 25 * MIB,
             "bare_peak_rss_bytes": 10 * MIB},
        ]},
        "telemetry": {"1": {"interval_s": 1.0, "seconds": 1, "rows": [
            {"agent": {"cpu_ns": a[0], "wall_ns": a[1], "samples": 1},
             "bare": {"cpu_ns": b[0], "wall_ns": b[1], "samples": 1}}
            for a, b in zip(sampler, bare, strict=True)
        ]}},
    }  # fmt: skip


def test_table_rows_from_hand_made_figures_and_none_for_parts_not_measured() -> None:
    rows = {r["what"]: r for r in board_costs.table(_figures())}
    cpu = rows["evbench-agent --help, CPU"]
    assert cpu["ratio"] == pytest.approx({"median": 3.0, "min": 2.0, "max": 3.0, "n": 3})  # 2, 3, 3
    assert cpu["subject"]["median"] == 0.3 and cpu["bare"]["median"] == 0.1  # seconds
    assert rows["evbench-agent --help, wall"]["ratio"]["median"] == pytest.approx(3.0)  # 2, 3, 4
    assert rows["run --quick, wall"]["ratio"]["median"] == 120.0
    rss = rows["  manager peak RSS"]
    assert rss["unit"] == "MiB" and rss["subject"]["median"] == 30.0
    assert rss["ratio"]["median"] == 3.0
    assert rows["  largest worker peak RSS"]["ratio"]["median"] == 2.5
    telemetry = rows["telemetry 1 Hz, share of one core"]
    assert telemetry["subject"] == pytest.approx({"median": 0.25, "min": 0.2, "max": 0.3, "n": 2})
    assert telemetry["bare"]["median"] == pytest.approx(0.15)
    assert telemetry["ratio"] == pytest.approx({"median": 1.75, "min": 1.5, "max": 2.0, "n": 2})
    # The parts not measured are left out.
    figures = _figures()
    del figures["run"], figures["telemetry"]
    assert [r["what"] for r in board_costs.table(figures)] == [
        "evbench-agent --help, CPU",
        "evbench-agent --help, wall",
    ]


def test_render_prints_median_with_range_and_count() -> None:
    text = board_costs.render(board_costs.table(_figures()))
    assert "| evbench-agent --help, CPU | 0.300 [0.200, 0.600] s " in text
    assert "| 3.00 [2.00, 3.00] | 3 |" in text
    assert "| bare psutil loop: 0.150 [0.100, 0.200] % | 1.75 [1.50, 2.00] | 2 |" in text


def test_ssh_command_for_a_url_and_rejects_other_schemes() -> None:
    assert board_costs.ssh_command("ssh://pi@board.local:2222", None) == [
        "ssh", "-o", "BatchMode=yes", "-p", "2222", "pi@board.local",
    ]  # fmt: skip
    with pytest.raises(SystemExit, match="not an ssh:// URL"):
        board_costs.ssh_command("serial:///dev/ttyUSB0", None)
