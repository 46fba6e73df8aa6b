"""A change in a metric's better direction is never printed as a regression (issue 44,
item 5: a +185 % throughput gain read REGRESSION in `evbench compare`).

Capacity (messages a second) is higher-is-better: a later run whose every phase carries
2.85 times the baseline's messages a second has gained 185 %, by construction. The runs
are written with the real results writer and compared by the real command, in process.
"""

from __future__ import annotations

import math
from pathlib import Path

from test_compare_runs import write_run

from evbench.cli import evbench
from evbench_core.results import SampleSet

PHASES = 10
CAPACITY = {"peer": "loopback", "mode": "ack", "window": 8, "duration_s": 1.0}


def _run(directory: Path, factor: float) -> Path:
    sets = []
    for phase in range(PHASES):
        offset = 0.01 * (phase - (PHASES - 1) / 2)  # a small symmetric spread of phases
        params = dict(CAPACITY, phases=PHASES, phase_index=phase)
        for codec in ("json", "protobuf"):
            value = [3000.0 * factor * math.exp(offset)]
            sets.append(SampleSet("link", "seed", codec, "capacity_msgs", "messages/s", params,
                                  value, phase))  # fmt: skip
    return write_run(directory, sets)


def test_a_185_percent_capacity_gain_is_not_printed_as_a_regression(tmp_path, capsys):
    base, gain = _run(tmp_path / "a", 1.0), _run(tmp_path / "b", 2.85)
    evbench(["compare", "--baseline", str(base), str(gain)])
    out, err = capsys.readouterr()
    rows = [line for line in out.splitlines() if line.startswith("link") and "Capacity" in line]
    assert rows, out
    for row in rows:
        cells = [cell.strip() for cell in row.split("|")]
        assert "+185.0%" in cells, row
        assert "REGRESSION" not in row, row  # a gain in a higher-is-better metric
        assert any(cell.startswith("better") for cell in cells), row
    assert "regressed" not in err, err
