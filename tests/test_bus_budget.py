"""The bus budget against examples worked by hand from the field widths of ISO 11898-1
(classic CAN, CAN FD), ISO 15765-2 (ISO-TP), 8N1 and IEEE 802.3, never from the modules'
constants: the codecs' messages, the dbc codec's own CAN frames, the sizes of a real quick
run, and sizes a record merely claims (budgeted without making the message, or left out
with the reason no link frame carries them)."""

import importlib.util
import json
import math
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require

from evbench.cli import evbench
from evbench_agent.buses import budget, can_classic, can_fd, ethernet, isotp, measured, uart
from evbench_agent.cli import agent
from evbench_core.errors import ExitCode

# Classic base data frame, field by field (ISO 11898-1).
SOF, ID11, RTR, IDE, R0, DLC, CRC15 = 1, 11, 1, 1, 1, 4, 15
CRC_DELIM, ACK_SLOT, ACK_DELIM, EOF, IFS = 1, 1, 1, 7, 3
TAIL = CRC_DELIM + ACK_SLOT + ACK_DELIM + EOF + IFS


@pytest.mark.parametrize(
    ("data", "can_id", "extended", "region", "unstuffed", "worst", "stuff"),
    [
        # 8 bytes, 11-bit id: a stuffed region of 98 bits. Worst case: a stuff bit after 5
        # bits, then one every 4 (each begins the next run): 1 + 93 // 4 = 24.
        (bytes(range(8)), 0x123, False, SOF + ID11 + RTR + IDE + R0 + DLC + 8 * 8 + CRC15, 111,
         24, range(25)),
        # an extended id adds SRR (1), the 18-bit extension and r1 (1)
        (bytes(8), 0x18DAF110, True, SOF + ID11 + 1 + IDE + 18 + RTR + 1 + R0 + DLC + 64 + CRC15,
         131, 29, range(30)),
        # id 0, no data: 19 zeros, and the CRC-15 of zeros is zero: 34 zeros, a stuff bit
        # (a one) after each 5, the next zero starting a new run: 34 // 5 = 6.
        (b"", 0, False, 19 + 15, 47, 8, [6]),
    ],
    ids=["8-bytes-111-bits", "extended-id-131-bits", "all-dominant"],
)  # fmt: skip
def test_classic_frames_worked_from_the_field_widths(
    data, can_id, extended, region, unstuffed, worst, stuff
) -> None:
    assert (region + TAIL, 1 + (region - 5) // 4) == (unstuffed, worst)
    frame = can_classic.frame_bits(data, can_id=can_id, extended=extended)
    assert (frame.unstuffed, frame.worst_stuff) == (unstuffed, worst)
    assert frame.stuff in stuff and frame.total == unstuffed + frame.stuff


# 00000[1]1111: the stuff bit makes five ones: [0]; 00000[1]00000[1]
@pytest.mark.parametrize(
    ("bits", "stuffed"),
    [([0] * 5 + [1] * 4, 2), ([0] * 10, 2), ([0, 1] * 10, 0), ([1] * 4 + [0] * 4, 0)],
)
def test_stuff_bits_counted_by_hand(bits: list[int], stuffed: int) -> None:
    assert can_classic.stuff_count(bits) == stuffed


def test_crc15_gives_the_catalogued_check_value() -> None:
    # CRC-15/CAN in the CRC RevEng catalogue: poly 0x4599, init 0, check("123456789") 0x059E
    bits = [int(bit) for byte in b"123456789" for bit in f"{byte:08b}"]
    assert can_classic.crc15(bits) == 0x059E


@pytest.mark.parametrize(
    ("frame", "single", "first", "counts"),
    [
        # classic: a Single Frame holds 7; a First Frame 6, then 7 per Consecutive Frame
        (8, 7, 6, [(7, 1), (8, 2), (62, 9), (63, 10), (277, 40), (995, 143)]),
        # CAN FD: a Single Frame (escape form: 0x00, length) 62; a First Frame 62; a CF 63
        (64, 62, 62, [(7, 1), (62, 1), (63, 2), (277, 5), (995, 16)]),
    ],
)
def test_isotp_frame_counts(frame: int, single: int, first: int, counts: list) -> None:
    for size, frames in counts:
        assert (1 if size <= single else 1 + math.ceil((size - first) / (frame - 1))) == frames
        assert isotp.frame_count(size, frame) == frames


def test_isotp_frames_byte_by_byte() -> None:
    segmented = isotp.segment(bytes(range(10)), 8)
    assert segmented.frames == [
        bytes.fromhex("100a000102030405"),  # FF: length 10, 6 bytes
        bytes.fromhex("2106070809cccccc"),  # CF 1, padded with 0xCC
    ]
    assert segmented.flow_control == [bytes.fromhex("300000cccccccccc")]  # CTS, BS 0, STmin 0
    fd = isotp.segment(bytes(8), 64)
    assert fd.frames == [bytes.fromhex("0008") + bytes(8) + b"\xcc\xcc"]  # 10 -> 12-byte DLC
    assert isotp.segment(bytes(4096), 64).frames[0][:6] == bytes.fromhex("100000001000")
    # Block size 4: a flow control after the FF and after each 4 CFs but the last block.
    assert len(isotp.segment(bytes(6 + 7 * 10), 8, block_size=4).flow_control) == 3


def test_can_fd_frames_at_500k_2m_worked_by_hand() -> None:
    # Nominal: SOF, id, RRS, IDE, FDF, res, BRS = 17; CRC delim, ACK, ACK delim, EOF,
    # IFS = 13. Data: ESI 1, DLC 4, 512 data bits, stuff count 4, CRC-21, fixed stuff
    # bits before the stuff count and after every 4 bits of the 25 after it: 1 + 25 // 4 = 7.
    nominal = 17 + 13
    data = 1 + 4 + 64 * 8 + 4 + 21 + (1 + (4 + 21) // 4)
    assert (nominal, data) == (30, 549)
    # id 0x2AA = 01010101010: SOF, id, RRS 0, IDE 0, FDF 1, res 0, BRS 1 has no run of
    # five; ESI 0, DLC 1111 and 0xAA's first bit make five ones: 1 stuff bit in all.
    frame = can_fd.frame_bits(b"\xaa" * 64, can_id=0x2AA)
    assert (frame.nominal, frame.data) == (nominal, data)
    assert (frame.nominal_stuff, frame.data_stuff) == (0, 1)
    expected = nominal / 500_000 + (data + 1) / 2_000_000  # 60 us + 275 us
    assert frame.seconds(500_000, 2_000_000) == pytest.approx(335e-6)
    assert frame.seconds(500_000, 2_000_000) == pytest.approx(expected)
    # 12 bytes or fewer: CRC-17, and 1 + (4 + 17) // 4 = 6 fixed stuff bits
    assert can_fd.frame_bits(bytes(12)).data == 1 + 4 + 96 + 4 + 17 + (1 + (4 + 17) // 4)


def test_a_uart_message_longer_than_its_period_cannot_be_sustained() -> None:
    # start bit, 8 data bits, stop bit: 10 bits a byte
    assert uart.seconds(995, 115_200) == pytest.approx(995 * 10 / 115_200)
    assert uart.seconds(995, 115_200) == pytest.approx(0.0864, abs=5e-5)
    row = budget.rows(budget.bus("uart-115200"), "json", "seed", [bytes(995)], [bytes(41)], 20)
    # 995 B + 13 header + 2 sync word + 2 CRC-16 + 4 CRC-32 = 1016 B = 88.2 ms > 50 ms
    assert row.max_message_seconds == pytest.approx((995 + 13 + 2 + 2 + 4) * 10 / 115_200)
    assert row.verdict == "cannot sustain"


def test_a_classic_can_exchange_lies_between_unstuffed_and_worst_stuffed_frames() -> None:
    row = budget.rows(budget.bus("can-500k"), "json", "seed", [bytes(995)], [bytes(9)], 20)
    # Request 995 + 13 = 1008 B -> 1 + ceil(1002 / 7) = 145 frames; reply 13 + 8 + 9 = 30 B
    # -> 1 + ceil(24 / 7) = 5; one flow control each. 111 bits each, at most 24 stuffed.
    frames = 145 + 1 + 5 + 1
    assert row.max_frames == 145
    assert frames * 111 / 500_000 <= row.mean_seconds <= row.worst_seconds
    assert row.worst_seconds == pytest.approx(frames * 135 / 500_000)
    # at most 152 x 135 bits = 41.0 ms fits in 50 ms, but at least 152 x 111 = 33.7 ms is
    # 67 % of the period, over the 40 % ceiling
    assert row.verdict == "over ceiling"


def test_100base_t1_frames_and_bits_for_the_tcp_stream() -> None:
    # preamble 7 + SFD 1 + MACs 12 + EtherType 2 + FCS 4 + gap 12 = 38 bytes around
    # IPv4 20 + TCP 20 + timestamps 12 + data; a segment carries 1500 - 52 = 1448
    assert ethernet.tcp_segments(1000) == (1, (38 + 52 + 1000) * 8)
    assert ethernet.tcp_segments(1449) == (2, (38 + 1500 + 38 + 52 + 1) * 8)
    assert ethernet.tcp_segments(1) == (1, (38 + 53) * 8)  # 53 >= the 46-byte minimum


def test_evbench_and_the_agent_print_whether_the_seed_fits_at_20_hz(capsys) -> None:
    require(importlib.util.find_spec("cantools") is not None, "cantools (requirements-dev.txt)")
    code = evbench(["budget", "--profile", "seed", "--rate", "20", "--count", "3", "--json"])
    assert code == ExitCode.OK
    rows = {(row["bus"], row["codec"]): row for row in json.loads(capsys.readouterr().out)}
    for bus in ("can-500k", "canfd-500k-2M", "uart-115200"):
        assert {(bus, codec) for codec in ("json", "protobuf", "dbc")} <= set(rows)
    # The seed's JSON is about 995 B: over 86 ms at 115200 8N1, longer than 50 ms.
    assert rows[("uart-115200", "json")]["verdict"] == "cannot sustain"
    # Protobuf (about 277 B + 13): 5 frames of 64 bytes on CAN FD (1 FF + 4 CFs).
    assert rows[("canfd-500k-2M", "protobuf")]["max_frames"] == 5
    assert rows[("canfd-500k-2M", "protobuf")]["verdict"] == "fits"
    # dbc: the seed's 64-byte message as 8 classic frames (worked below)
    assert rows[("can-500k", "dbc")]["max_frames"] == 8
    code = evbench(["budget", "--count", "2"])
    text = capsys.readouterr().out
    assert code == ExitCode.OK and text.startswith("Does it fit at 20 Hz?")
    assert "dbc on CAN: its own CAN frames" in text
    # a profile the DBC does not describe leaves dbc out
    assert evbench(["budget", "--profile", "int", "--count", "2", "--json"]) == ExitCode.OK
    assert {row["codec"] for row in json.loads(capsys.readouterr().out)} == {"json", "protobuf"}
    # the agent prints the same budget on a board
    arguments = ["budget", "--count", "2", "--bus", "can-500k", "--json"]
    assert agent(arguments) == ExitCode.OK
    on_board = json.loads(capsys.readouterr().out)
    assert evbench(arguments) == ExitCode.OK
    assert json.loads(capsys.readouterr().out) == on_board
    assert {row["codec"] for row in on_board} == {"json", "protobuf", "dbc"}


@pytest.mark.parametrize(
    "arguments",
    [["--bus", "nope"], ["--rate", "0"], ["--ceiling", "140"], ["--codecs", "nope"]],
)
def test_evbench_budget_refuses_bad_input(arguments: list[str], capsys) -> None:
    assert evbench(["budget", "--count", "1", *arguments]) == ExitCode.USAGE
    assert "error" in capsys.readouterr().err


def test_the_dbc_codec_is_its_own_can_frames_on_each_bus() -> None:
    require(importlib.util.find_spec("cantools") is not None, "cantools (requirements-dev.txt)")
    buses = [budget.bus(name) for name in ("can-500k", "canfd-500k-2M", "uart-115200")]
    rows = {row.bus: row for row in budget.codec_rows("dbc", "seed", buses, 20.0, 5)}
    # Classic: the 64-byte SeedPacket is 8 frames, the 16-byte LinkAck 2; 47 + 64 = 111 bits
    # each, worst-case stuffing floor((98 - 1) / 4) = 24 more: 1110 bits (2.22 ms at
    # 500 kbit/s) before stuffing, 1350 bits (2.70 ms) at worst.
    on_can = rows["can-500k"]
    assert on_can.max_frames == 8 and on_can.mean_frames == 8
    assert 1110 / 500_000 < on_can.mean_seconds <= 1350 / 500_000
    assert on_can.worst_seconds == pytest.approx(1350 / 500_000)
    assert on_can.verdict == "fits"
    # CAN FD, one frame: 64 bytes are 30 bits at 500 k (60 us) + 1 + 4 + 512 + 4 + 21 + 7 =
    # 549 at 2 M (274.5 us); the LinkAck 30 (60 us) + 1 + 4 + 128 + 4 + 17 + 6 = 160 (80 us).
    on_fd = rows["canfd-500k-2M"]
    assert on_fd.max_frames == 1
    unstuffed = 60e-6 + 274.5e-6 + 60e-6 + 80e-6
    assert unstuffed < on_fd.mean_seconds < on_fd.worst_seconds
    # Worst case: 4 stuff bits at 500 k (8 us), the rest of floor((L-1)/4) at 2 M: L = 17 +
    # 5 + 512 = 534 for 64 bytes -> 133 - 4 = 129 (64.5 us); L = 150, the ack's -> 33 (16.5 us).
    assert on_fd.worst_seconds == pytest.approx(unstuffed + 2 * 8e-6 + 64.5e-6 + 16.5e-6)
    # UART: a frame header (5 bytes) + 64 = 69 in the link frame (+ 13), UART framing 8:
    # 90 bytes of 10 bits at 115200 baud (full duplex: the busier way).
    assert rows["uart-115200"].max_size == 69
    assert rows["uart-115200"].mean_seconds == pytest.approx(90 * 10 / 115_200)
    # ev-full on CAN FD: 3 cell-voltage (64 B), BMS + inverter (64), dynamics + charger (48)
    (ev_full,) = budget.codec_rows("dbc", "ev-full", [budget.bus("canfd-500k-2M")], 20.0, 3)
    assert ev_full.max_frames == 5 and ev_full.max_size == 4 * 69 + 53


COMMITTED = Path(__file__).parent / "data" / "runs" / "core-v1"
HEADER = 4 + 1 + 8  # the link frame's length, kind, sequence
UART_OVERHEAD = 2 + 2 + 4  # sync word, CRC-16 of the header, CRC-32 of the frame
MAX_MESSAGE = 2**32 - 1 - (1 + 8)  # what a 4-byte length counting kind and sequence allows


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
    # UART 8N1: 10 bits a byte of the message, its link frame and the UART frame
    on_uart = rows["uart-115200"]
    assert on_uart.max_frames == 1
    uart_seconds = (size + HEADER + UART_OVERHEAD) * 10 / 115_200
    assert math.isclose(on_uart.max_message_seconds, uart_seconds, rel_tol=1e-12)
    # ISO-TP on classic CAN: above 4095 bytes the FF has a 6-byte PCI (2 bytes of the link
    # frame), every CF 7; 8-byte frames, 11-bit id, no dynamic stuff bits; one flow control.
    on_can = rows["can-500k"]
    frames = 1 + math.ceil((size + HEADER - 2) / 7)
    assert on_can.max_frames == frames
    can_seconds = (frames + 1) * (SOF + ID11 + RTR + IDE + R0 + DLC + 64 + CRC15 + TAIL) / 500_000
    assert math.isclose(on_can.max_message_seconds, can_seconds, rel_tol=1e-12)
    # 100BASE-T1: segments of 1448 bytes, each with 52 of IP and TCP headers and 38 of
    # Ethernet (preamble, SFD, MACs, type, FCS, gap)
    on_ethernet = rows["100base-t1"]
    full, last = divmod(size + HEADER, 1448)
    wire_bytes = full * (1500 + 38) + (max(46, 52 + last) + 38 if last else 0)
    assert on_ethernet.max_frames == full + (1 if last else 0)
    assert math.isclose(on_ethernet.max_message_seconds, wire_bytes * 8 / 100e6, rel_tol=1e-12)
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
def test_evbench_report_of_claimed_huge_sizes_stays_small(tmp_path: Path) -> None:
    """`evbench report` under a 600 MB address-space limit never makes a message of a claimed
    size (1e9 bytes would be a MemoryError, 2^64 an OverflowError)."""
    run = tmp_path / "run"
    shutil.copytree(COMMITTED, run)
    summary = json.loads((run / "summary.json").read_text())
    claimed = {"json": 10**9, "protobuf": 2**64}
    for record in summary["records"]:
        if record["metric"] == "size" and record["codec"] in claimed:
            record["max"] = claimed[record["codec"]]
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
    assert "Not budgeted: protobuf on seed (a largest message of 1.84467e+19 bytes" in budget_part
    line = next(x for x in budget_part.splitlines() if "uart-115200" in x and "json" in x)
    assert line.startswith("| seed | uart-115200 | json | 995.5/1000000000 | 1 |"), line


def _terminal_rows(text: str) -> dict[tuple[str, str], list[str]]:
    """Budget rows of the terminal's table by (bus, codec)."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 9 and parts[0] in ("can-500k", "canfd-500k-2M", "uart-115200"):
            rows[(parts[0], parts[1])] = parts[2:]
    return rows


def test_evbench_run_prints_the_budget_of_its_sizes_and_the_report_shows_it(tmp_path) -> None:
    require(importlib.util.find_spec("cantools") is not None, "cantools (requirements-dev.txt)")
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "evbench", "run", "--board", "local", "--suite", "codec",
            "--profile", "seed", "--codecs", "json,protobuf,dbc", "--quick", "--details",
            "--out", str(out)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    budget_at = done.stdout.index("Does it fit at 20 Hz?")
    assert budget_at > done.stdout.index("Profile ")  # after the run's table
    rows = _terminal_rows(done.stdout[budget_at:])
    assert {codec for _, codec in rows} == {"json", "protobuf", "dbc"}
    assert {bus for bus, _ in rows} == {"can-500k", "canfd-500k-2M", "uart-115200"}
    records = json.loads((out / "summary.json").read_text())["records"]
    sizes = {r["codec"]: (r["mean"], r["max"]) for r in records
             if r["metric"] == "size" and r["profile"] == "seed"}  # fmt: skip
    # dbc: one 64-byte message (+ 5 bytes of id and length) = 69 bytes, every payload.
    assert sizes["dbc"] == (69, 69)
    # classic CAN: 8 + 2 frames of 111 bits (2.22 ms at 500 k), 135 at worst (2.70 ms)
    assert rows[("can-500k", "dbc")][:4] == ["69.0/69", "8", "2.22", "2.70"]
    assert rows[("can-500k", "dbc")][-1] == "fits"
    # the largest JSON message on a UART: (max + 13 + 8) bytes of 10 bits at 115200 baud
    uart_row = rows[("uart-115200", "json")]
    assert uart_row[3] == f"{(int(sizes['json'][1]) + 21) * 10 / 115_200 * 1e3:.2f}"
    assert uart_row[-1] == "sustain"  # "cannot sustain": longer than the 50 ms period
    # protobuf's mean message + 13 on 64-byte CAN FD: 1 + ceil((n + 13 - 62) / 63) frames
    mean = round(sizes["protobuf"][0])
    assert rows[("canfd-500k-2M", "protobuf")][1] == str(1 + -(-(mean + 13 - 62) // 63))
    # report.md and report.html show the same table
    markdown = (out / "report.md").read_text()
    assert "## Does it fit at 20 Hz?" in markdown
    assert "| seed | can-500k | dbc | 69.0/69 | 8 | 2.22 | 2.70 | 4.4% | 5.4% | fits |" in markdown
    assert "no ISO-TP" in markdown
    html = (out / "report.html").read_text()
    assert "Does it fit at 20 Hz?" in html and "<td>canfd-500k-2M</td>" in html
