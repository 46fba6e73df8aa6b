"""The bus budget of the dbc codec: its payload's own CAN frames (no ISO-TP, no evbench
header), checked against figures worked by hand from the frame layouts."""

from __future__ import annotations

import importlib.util
import json

import pytest
from conftest import require

from evbench.cli import evbench
from evbench_agent.buses import budget
from evbench_core.errors import ExitCode


@pytest.fixture(autouse=True)
def _cantools() -> None:
    require(importlib.util.find_spec("cantools") is not None, "cantools (requirements-dev.txt)")


@pytest.fixture(scope="module")
def seed_rows() -> dict[str, budget.Row]:
    buses = [budget.bus(name) for name in ("can-500k", "canfd-500k-2M", "uart-115200")]
    return {row.bus: row for row in budget.codec_rows("dbc", "seed", buses, 20.0, 5)}


def test_classic_can_sends_the_seed_message_as_eight_8_byte_frames(seed_rows) -> None:
    row = seed_rows["can-500k"]
    # SeedPacket is one 64-byte message: 8 classic frames; the LinkAck reply (16 bytes) 2.
    assert row.max_frames == 8 and row.mean_frames == 8
    # Each 8-byte frame with an 11-bit id is 47 + 64 = 111 bits, worst-case stuffing adds
    # floor((98 - 1) / 4) = 24: 10 frames are 1110 bits (2.22 ms at 500 kbit/s) before
    # stuffing and 1350 bits (2.70 ms) at worst.
    assert 1110 / 500_000 < row.mean_seconds <= 1350 / 500_000
    assert row.worst_seconds == pytest.approx(1350 / 500_000)
    assert row.verdict == "fits"


def test_can_fd_sends_it_as_one_64_byte_frame(seed_rows) -> None:
    row = seed_rows["canfd-500k-2M"]
    assert row.max_frames == 1
    # 64 bytes: 30 bits at 500 k (60 us) + 1 + 4 + 512 + 4 + 21 + 7 = 549 at 2 M (274.5 us);
    # the 16-byte LinkAck: 30 bits (60 us) + 1 + 4 + 128 + 4 + 17 + 6 = 160 (80 us).
    unstuffed = 60e-6 + 274.5e-6 + 60e-6 + 80e-6
    assert unstuffed < row.mean_seconds < row.worst_seconds
    # Worst case: 4 stuff bits in the arbitration phase (8 us), the rest of floor((L-1)/4)
    # at 2 M: L = 17 + 5 + 512 = 534 for 64 bytes -> 133 - 4 = 129 (64.5 us); L = 150 for
    # the ack -> 37 - 4 = 33 (16.5 us).
    worst = unstuffed + 2 * 8e-6 + 64.5e-6 + 16.5e-6
    assert row.worst_seconds == pytest.approx(worst)


def test_a_uart_carries_the_payload_in_the_link_frame(seed_rows) -> None:
    row = seed_rows["uart-115200"]
    # The payload: one frame header (5 bytes) + 64 = 69 bytes; the link frame adds 13, the
    # UART framing 8: 90 bytes of 10 bits at 115200 baud (full duplex: the busier way).
    assert row.max_size == 69
    assert row.mean_seconds == pytest.approx(90 * 10 / 115_200)


def test_ev_full_is_five_can_fd_frames() -> None:
    rows = budget.codec_rows("dbc", "ev-full", [budget.bus("canfd-500k-2M")], 20.0, 3)
    # three 64-byte cell-voltage messages, BMS + inverter (64) and dynamics + charger (48)
    assert rows[0].max_frames == 5 and rows[0].max_size == 4 * 69 + 53


def test_a_profile_the_dbc_does_not_describe_leaves_dbc_out(capsys) -> None:
    assert evbench(["budget", "--profile", "int", "--count", "2", "--json"]) == ExitCode.OK
    assert {row["codec"] for row in json.loads(capsys.readouterr().out)} == {"json", "protobuf"}
