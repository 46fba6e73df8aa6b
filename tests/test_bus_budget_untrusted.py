"""The bus budget of sizes a record claims (issue 44, item 9): a run's summary is
anyone's file, and `evbench report` made a message of the record's `max` bytes to
budget it (1e8: 46 s and 958 MB; 1e9: over 5 GB; 2^64: an internal error). Now no
large message is made: a zero-filled message's frames repeat, so its cost is worked
without it, and a size no link frame can carry is left out with its reason. Expected
figures are worked by hand from the frame layouts (docs/buses.md, tests/test_bus_budget.py)."""

from __future__ import annotations

import json
import math
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evbench_agent.buses import budget, measured

COMMITTED = Path(__file__).parent / "data" / "runs" / "core-v1"
#: The link's frame header: 4-byte length, kind, 8-byte sequence.
HEADER = 4 + 1 + 8
#: A UART frame adds a 2-byte sync word, a CRC-16 of the header and a CRC-32 of the frame.
UART_OVERHEAD = 2 + 2 + 4
#: An 8-byte classic CAN frame with an 11-bit id, without dynamic stuff bits.
CLASSIC_FRAME_BITS = 111
#: The largest message a link frame's 4-byte length can say (it counts kind and sequence).
MAX_MESSAGE = 2**32 - 1 - (1 + 8)


def _size_record(mean: float, largest: float) -> dict:
    return {"suite": "codec", "metric": "size", "codec": "json", "profile": "seed",
            "unit": "bytes", "params": {}, "n": 1, "mean": mean, "max": largest}  # fmt: skip


def _rows(largest: float, buses=("uart-115200", "can-500k", "100base-t1")) -> dict:
    """The budget's row per bus for a largest (and mean) message of `largest` bytes."""
    on = [budget.bus(name) for name in buses]
    rows, skipped = measured.from_records([_size_record(largest, largest)], 20.0, buses=on)
    assert skipped == []
    return {row.bus: row for row in rows}


@pytest.mark.parametrize("size", [10**8, 10**9, MAX_MESSAGE])
def test_a_huge_claimed_size_is_budgeted_from_the_frame_layout(size: int) -> None:
    rows = _rows(size)
    # UART 8N1: 10 bits a byte, the message in its link frame and the UART frame's bytes.
    uart = rows["uart-115200"]
    assert uart.max_frames == 1
    uart_seconds = (size + HEADER + UART_OVERHEAD) * 10 / 115_200
    assert math.isclose(uart.max_message_seconds, uart_seconds, rel_tol=1e-12)
    # ISO-TP on classic CAN: above 4095 bytes the First Frame has a 6-byte PCI (2 bytes of
    # the link frame), every Consecutive Frame 7; padded to 8 bytes, plus one flow control.
    can = rows["can-500k"]
    frames = 1 + math.ceil((size + HEADER - 2) / 7)
    assert can.max_frames == frames
    can_seconds = (frames + 1) * CLASSIC_FRAME_BITS / 500_000
    assert math.isclose(can.max_message_seconds, can_seconds, rel_tol=1e-12)
    # 100BASE-T1: the TCP stream (the link frame) in segments of 1448 bytes, each with 52
    # bytes of IP and TCP headers and 38 of Ethernet (preamble, SFD, MACs, type, FCS, gap).
    ethernet = rows["100base-t1"]
    full, last = divmod(size + HEADER, 1448)
    wire_bytes = full * (1500 + 38) + (max(46, 52 + last) + 38 if last else 0)
    assert ethernet.max_frames == full + (1 if last else 0)
    assert math.isclose(ethernet.max_message_seconds, wire_bytes * 8 / 100e6, rel_tol=1e-12)
    for row in rows.values():
        assert row.verdict == "cannot sustain"


@pytest.mark.parametrize("size", [100_000, 16_385, 70_000 + 7])
def test_an_extrapolated_size_costs_what_the_message_itself_costs(size: int) -> None:
    """Between the hand-worked cases: the message made and counted frame by frame."""
    reply = measured._reply("json", "seed", 0)
    for name in budget.BUSES:
        bus = budget.bus(name)
        exact = budget.exchange(bus, bytes(size), reply)
        row = _rows(size, [name])[name]
        assert row.max_frames == exact.message_frames, name
        assert math.isclose(row.max_message_seconds, exact.request.bare_seconds, rel_tol=1e-12)
        assert math.isclose(row.worst_seconds, exact.busy_seconds(bus, worst=True), rel_tol=1e-12)
        assert math.isclose(row.mean_seconds, exact.busy_seconds(bus, bare=True), rel_tol=1e-12)


@pytest.mark.parametrize(
    ("mean", "largest", "reason"),
    [
        (300, 2**64, "a largest message of 1.84467e+19 bytes is more than a link frame carries"),
        (300, MAX_MESSAGE + 1, "a largest message of 4.29497e+09 bytes is more than"),
        (300, 1e100, "a largest message of 1e+100 bytes is more than a link frame carries"),
        (300, -1, "a largest message of -1 bytes"),
        (500, 400, "the mean size 500 is above the largest, 400"),
        (300, "9" * 30, "the largest message size is not a number"),
    ],
)
def test_a_size_no_link_frame_carries_is_left_out_with_its_reason(mean, largest, reason) -> None:
    rows, skipped = measured.from_records([_size_record(mean, largest)], 20.0)
    assert rows == []
    assert [(s.codec, s.profile) for s in skipped] == [("json", "seed")]
    assert reason in skipped[0].reason


@pytest.mark.slow
@pytest.mark.parametrize("largest", [10**9, 2**64], ids=["1e9", "2^64"])
def test_evbench_report_of_a_claimed_huge_size_stays_small(tmp_path: Path, largest: int) -> None:
    """`evbench report` under a 600 MB address-space limit: a message of the claimed size
    is never made (1e9 bytes failed with MemoryError, 2^64 with OverflowError: exit 1)."""
    run = tmp_path / "run"
    shutil.copytree(COMMITTED, run)
    summary = json.loads((run / "summary.json").read_text())
    for record in summary["records"]:
        if record["metric"] == "size" and record["codec"] == "json":
            record["max"] = largest
    (run / "summary.json").write_text(json.dumps(summary))
    done = subprocess.run(
        [sys.executable, "-m", "evbench", "report", str(run)],
        capture_output=True, text=True, timeout=300, check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20)),
    )  # fmt: skip
    assert done.returncode == 4, done.stderr  # the checksum no longer matches: partial
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    markdown = (run / "report.md").read_text().replace("\\", "")
    budget_part = markdown[markdown.index("Does it fit at 20 Hz?") :]
    if largest == 2**64:
        assert "Not budgeted: json on seed (a largest message of 1.84467e+19 bytes" in budget_part
    else:
        line = next(x for x in budget_part.splitlines() if "uart-115200" in x and "json" in x)
        assert line.startswith("| seed | uart-115200 | json | 995.5/1000000000 | 1 |"), line
