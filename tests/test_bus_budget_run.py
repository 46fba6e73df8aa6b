"""Does it fit at 20 Hz? after a real quick local run: `evbench run` prints the bus budget
of the measured sizes after its table, and report.md/html show it. Expected figures are
worked by hand from the frame layouts (docs/buses.md)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require

EVBENCH = [sys.executable, "-m", "evbench"]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    require(importlib.util.find_spec("cantools") is not None, "cantools (requirements-dev.txt)")
    out = tmp_path_factory.mktemp("budget") / "run"
    argv = ["run", "--board", "local", "--suite", "codec", "--profile", "seed"]
    argv += ["--codecs", "json,protobuf,dbc", "--quick", "--details", "--out", str(out)]
    done = subprocess.run([*EVBENCH, *argv], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def _rows(text: str) -> dict[tuple[str, str], list[str]]:
    """Budget rows of the terminal's table by (bus, codec)."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 9 and parts[0] in ("can-500k", "canfd-500k-2M", "uart-115200"):
            rows[(parts[0], parts[1])] = parts[2:]
    return rows


def _sizes(out: Path) -> dict[str, tuple[float, float]]:
    summary = json.loads((out / "summary.json").read_text())
    sizes = [r for r in summary["records"] if r["metric"] == "size" and r["profile"] == "seed"]
    return {record["codec"]: (record["mean"], record["max"]) for record in sizes}


def test_evbench_run_prints_the_budget_after_its_table(quick_run) -> None:
    out, stdout = quick_run
    table_at = stdout.index("Profile ")
    budget_at = stdout.index("Does it fit at 20 Hz?")
    assert budget_at > table_at
    rows = _rows(stdout[budget_at:])
    assert {codec for _, codec in rows} == {"json", "protobuf", "dbc"}
    assert {bus for bus, _ in rows} == {"can-500k", "canfd-500k-2M", "uart-115200"}
    sizes = _sizes(out)
    # dbc: one 64-byte message (+ 5 bytes of id and length) = 69 bytes, every payload.
    assert sizes["dbc"] == (69, 69)
    # On classic CAN its 8 slices and the ack's 2, 111 bits each before stuffing: 1110 bits,
    # 2.22 ms at 500 kbit/s; with 24 worst-case stuff bits each, 1350 bits: 2.70 ms.
    assert rows[("can-500k", "dbc")][:4] == ["69.0/69", "8", "2.22", "2.70"]
    assert rows[("can-500k", "dbc")][-1] == "fits"
    # The largest JSON message on a UART: (max + 13 + 8) bytes of 10 bits at 115200 baud.
    largest = int(sizes["json"][1])
    uart = rows[("uart-115200", "json")]
    assert uart[3] == f"{(largest + 21) * 10 / 115_200 * 1e3:.2f}"
    assert uart[-1] == "sustain"  # "cannot sustain": longer than the 50 ms period
    # Protobuf's mean message + 13 on 64-byte CAN FD: 1 + ceil((n + 13 - 62) / 63) frames.
    mean = round(sizes["protobuf"][0])
    assert rows[("canfd-500k-2M", "protobuf")][1] == str(1 + -(-(mean + 13 - 62) // 63))


def test_the_report_shows_the_budget(quick_run) -> None:
    out, _ = quick_run
    markdown = (out / "report.md").read_text()
    assert "## Does it fit at 20 Hz?" in markdown
    assert "| seed | can-500k | dbc | 69.0/69 | 8 | 2.22 | 2.70 | 4.4% | 5.4% | fits |" in markdown
    assert "no ISO-TP" in markdown
    html = (out / "report.html").read_text()
    assert "Does it fit at 20 Hz?" in html and "<td>canfd-500k-2M</td>" in html
