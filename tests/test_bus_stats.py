"""A bus interface's counters around each link phase (evbench_agent.telemetry.bus_stats).

Generic counters come from a real veth pair, frames sent through it by a packet socket (a
veth counts each frame's length, no FCS or padding); a peer that is down makes it drop every
frame (tx_dropped). No SocketCAN here: CAN fields are read from documents as `ip -details
-statistics -json link show can0` prints them (iproute2's ip/iplink_can.c, ip/ipaddress.c).
"""

import json
import os
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import require, require_command

from evbench.report import bus_counters, markdown, sections, table
from evbench.report.context import load_context
from evbench_agent import spec as specs
from evbench_agent.link import messages, timing
from evbench_agent.progress import Progress
from evbench_agent.suites import RunContext
from evbench_agent.suites.link import plan as link_suite
from evbench_agent.suites.link.bus_phases import BusPhases
from evbench_agent.telemetry import bus_stats
from evbench_core import comparison, results
from evbench_core.analysis import identity
from evbench_core.errors import UserError
from evbench_core.results import RunWriter

#: Broadcast destination, a local source, the "local experimental" EtherType, zeros.
FRAME_BYTES = 100
FRAME = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + bytes(FRAME_BYTES - 14)


@pytest.fixture
def veth() -> Iterator[tuple[str, str]]:
    """A veth pair (a, b), both up, with IPv6 off so the kernel itself sends nothing."""
    require(os.geteuid() == 0, "root (to create a veth pair)")
    ip = require_command("ip")
    a, b = f"evbs{os.getpid() % 100000}a", f"evbs{os.getpid() % 100000}b"
    subprocess.run([ip, "link", "add", a, "type", "veth", "peer", "name", b], check=True)
    try:
        for name in (a, b):
            Path(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6").write_text("1")
            subprocess.run([ip, "link", "set", name, "up"], check=True)
        yield a, b
    finally:
        subprocess.run([ip, "link", "del", a], check=False)


def _send(interface: str, count: int) -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sender:
        sender.bind((interface, 0))
        for _ in range(count):
            assert sender.send(FRAME) == FRAME_BYTES


def _settle(counters: bus_stats.BusCounters, seconds: float = 2.0) -> bus_stats.Snapshot:
    """A snapshot once the counters have stopped moving (veth counts as it forwards)."""
    deadline, last = time.monotonic() + seconds, counters.snapshot()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = counters.snapshot()
        assert last is not None and now is not None
        if now.counters == last.counters:
            return now
        last = now
    raise AssertionError(f"{counters.name}'s counters still moving after {seconds} s")


def _phase(phases: BusPhases, interface: str, codec: str, index: int, frames: int) -> None:
    """One phase as the suite's hook records it, `frames` sent on `interface` during it."""
    assert phases.counters is not None
    before = _settle(phases.counters)
    _send(interface, frames)
    _settle(phases.counters)
    phases._after_phase("seed", codec, index, before)


def test_a_real_interface_counts_what_was_sent_and_flags_what_it_dropped(
    veth: tuple[str, str],
) -> None:
    a, b = veth
    sender, receiver = bus_stats.BusCounters("isotp", a), bus_stats.BusCounters("isotp", b)
    before, before_b = _settle(sender), _settle(receiver)
    assert before.source == "ip"  # iproute2 is installed here: the first source answers
    _send(a, 25)
    change = bus_stats.compare(before, _settle(sender))
    assert change.rises["tx_packets"] == 25
    assert change.rises["tx_bytes"] == 25 * FRAME_BYTES
    assert change.rises["tx_errors"] == change.rises["tx_dropped"] == 0
    assert change.bus_errors == 0 and not change.flagged and change.reasons() == []
    received = bus_stats.compare(before_b, _settle(receiver))
    assert (received.rises["rx_packets"], received.rises["rx_bytes"]) == (25, 25 * FRAME_BYTES)
    # sysfs, the fallback without iproute2, reads the same kernel counters.
    assert bus_stats.sysfs_snapshot(a).counters == {
        name: value for name, value in _settle(sender).counters.items() if name in bus_stats.GENERIC
    }
    subprocess.run(["ip", "link", "set", b, "down"], check=True)
    before = _settle(sender)
    _send(a, 7)  # the peer is down: veth drops each one and counts it
    change = bus_stats.compare(before, _settle(sender))
    assert change.rises["tx_dropped"] == 7 and change.rises["tx_packets"] == 0
    assert change.bus_errors == 7 and change.flagged
    assert change.reasons() == ["tx_dropped +7"]


class _Said(Progress):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def test_the_link_suite_records_each_phases_counters_and_the_report_names_the_errors(
    veth: tuple[str, str], tmp_path: Path
) -> None:
    """The suite's own hook on a real interface standing in for the bus: a clean phase, then
    one with dropped frames, per codec; the records, and what the terminal and report say."""
    a, b = veth
    url = f"isotp://{a}?tx=0x7E0&rx=0x7E8&fd=1&dlen=64&bitrate=500000&dbitrate=2000000"
    run_spec = specs.from_dict({"link_transport": url, "codecs": ["json", "protobuf"]})
    said = _Said()
    context = RunContext(run_spec, RunWriter(tmp_path / "run", "r1"), said)
    phases = BusPhases(context, link_suite.Settings.from_spec(run_spec), timing.current())
    _phase(phases, a, "json", 0, 10)
    _phase(phases, a, "protobuf", 0, 10)
    subprocess.run(["ip", "link", "set", b, "down"], check=True)
    _phase(phases, a, "protobuf", 1, 3)
    _phase(phases, a, "json", 1, 3)

    assert said.lines == [
        f"link: bus errors on {a} during seed {codec} phase 2: tx_dropped +3"
        for codec in ("protobuf", "json")
    ]
    samples = list(results.read_samples(tmp_path / "run"))
    errors = {(s.codec, s.worker): s.values for s in samples if s.metric == "bus_errors"}
    assert errors == {("json", 0): [0.0], ("protobuf", 0): [0.0], ("protobuf", 1): [3.0],
                      ("json", 1): [3.0]}  # fmt: skip
    counter = {
        (s.codec, s.worker, s.params["counter"]): (s.values, s.unit)
        for s in samples
        if s.metric == "bus_counter"
    }
    assert counter["json", 0, "tx_packets"] == ([10.0], "count")
    assert counter["json", 0, "tx_bytes"] == ([10.0 * FRAME_BYTES], "bytes")
    assert counter["protobuf", 1, "tx_dropped"] == ([3.0], "count")
    for sample in samples:  # the phase's identity, plus the interface (and the counter)
        assert sample.params["phase"] == "periodic" and sample.params["interface"] == a
        assert sample.params["transport"] == "isotp" and sample.params["counter_source"] == "ip"
        assert identity.role(sample.suite, sample.metric) == identity.CONTEXT
    # The terminal and the report name the flagged phases, and only them.
    found = bus_counters.phases(samples)
    flags = [(p.codec, p.index, p.flagged) for p in found]
    assert flags == [("json", 0, False), ("protobuf", 0, False), ("json", 1, True),
                     ("protobuf", 1, True)]  # fmt: skip
    rows = [["seed", codec, "2", a, "3", "tx_dropped +3"] for codec in ("json", "protobuf")]
    summary = f"Bus counters ({a}, from ip): errors in 2 of 4 phases."
    assert bus_counters.text(samples) == "\n".join(
        [summary, "  seed json phase 2: tx_dropped +3", "  seed protobuf phase 2: tx_dropped +3"]
    )
    assert bus_counters.table_rows(found) == rows
    report = load_context(tmp_path / "run")
    section = sections.bus_counters_section(report)
    assert section is not None and section.warning
    assert section.paragraphs[0] == summary and section.rows == rows
    assert "| seed | json | 2 |" in markdown.render("r1", [section], [])
    # the context table has the bus_errors row (no winner), not one row per counter
    _headers, cells = table.context_cells(comparison.compare(report.samples(), "json", "protobuf"))
    labels = [row[1] for row in cells]
    assert labels == ["Bus error events (periodic)"], labels  # as lost and late are labelled


def _can0(state: str, berr: tuple[int, int], xstats: dict[str, int], tx: tuple[int, int]) -> str:
    """`ip -details -statistics -json link show can0` of an MCAN at 500 k / 2 M."""
    stats = dict.fromkeys(("restarts", "bus_error", "arbitration_lost"), 0)
    stats |= dict.fromkeys(("error_warning", "error_passive", "bus_off"), 0) | xstats
    link = {
        "ifindex": 3, "ifname": "can0", "flags": ["NOARP", "UP", "LOWER_UP", "ECHO"], "mtu": 72,
        "link_type": "can",
        "linkinfo": {
            "info_kind": "can",
            "info_data": {
                "ctrlmode": ["FD"], "state": state, "berr_counter": {"tx": berr[0], "rx": berr[1]},
                "restart_ms": 100, "clock": 80000000,
                "bittiming": {"bitrate": 500000, "sample_point": "0.875", "tq": 25},
                "data_bittiming": {"bitrate": 2000000, "sample_point": "0.750", "tq": 25},
            },
            "info_xstats": stats,
        },
        "stats64": {
            "rx": {"bytes": 0, "packets": 0, "errors": 0, "dropped": 0, "over_errors": 0},
            "tx": {"bytes": tx[1], "packets": tx[0], "errors": 0, "dropped": 0},
        },
    }  # fmt: skip
    return json.dumps([link])


def _snapshot(document: str) -> bus_stats.Snapshot:
    taken = bus_stats.parse_ip_link(json.loads(document), "can0")
    assert taken is not None
    return taken


ACTIVE, CLEAN = "ERROR-ACTIVE", (0, 0)


@pytest.mark.parametrize(
    ("before", "after", "rises", "bus_errors", "levels", "reasons"),
    [
        # 40 frames of 64 bytes went out; 3 bus errors, one step to warning, one to passive
        # (arbitration lost is contention, not an error); enum can_state: passive is 2
        ((ACTIVE, CLEAN, {"bus_error": 10, "arbitration_lost": 2}, (100, 6400)),
         ("ERROR-PASSIVE", (128, 3), {"bus_error": 13, "arbitration_lost": 9,
                                      "error_warning": 1, "error_passive": 1}, (140, 8960)),
         {"tx_packets": 40, "tx_bytes": 2560, "bus_error": 3, "arbitration_lost": 7}, 3 + 1 + 1,
         (128, 3, 2), ["bus_error +3", "error_passive +1", "error_warning +1",
                       "state ERROR-PASSIVE"]),
        # clean, though arbitration was lost
        ((ACTIVE, CLEAN, {"arbitration_lost": 5}, (10, 640)),
         (ACTIVE, CLEAN, {"arbitration_lost": 8}, (30, 1920)),
         {"arbitration_lost": 3, "tx_packets": 20}, 0, (0, 0, 0), []),
        # left bus-off (3): its counters rose in an earlier phase, but it is still off
        (("BUS-OFF", (256, 0), {"bus_off": 1, "bus_error": 40}, (5, 320)),
         ("BUS-OFF", (256, 0), {"bus_off": 1, "bus_error": 40}, (5, 320)),
         {"bus_off": 0, "tx_packets": 0}, 0, (256, 0, 3), ["state BUS-OFF"]),
        # a counter that went down (the interface re-created, or a 32-bit counter wrapped):
        # 2 is the least it can have risen by
        ((ACTIVE, CLEAN, {"bus_error": 4_000_000_000}, (9, 72)),
         (ACTIVE, CLEAN, {"bus_error": 2}, (9, 72)), {"bus_error": 2}, 2, (0, 0, 0),
         ["bus_error +2"]),
    ],
    ids=["errors", "arbitration-lost", "bus-off", "counter-went-down"],
)  # fmt: skip
def test_a_can_phases_counters_worked_by_hand(before, after, rises, bus_errors, levels, reasons):
    change = bus_stats.compare(_snapshot(_can0(*before)), _snapshot(_can0(*after)))
    assert {name: change.rises[name] for name in rises} == rises
    assert change.bus_errors == bus_errors
    assert change.levels == dict(zip(("berr_tx", "berr_rx", "state"), levels, strict=True))
    assert change.flagged is bool(reasons) and change.reasons() == reasons


def test_a_uarts_counts_from_a_serial_icounter_struct_worked_by_hand() -> None:
    # cts dsr rng dcd rx tx frame overrun parity brk buf_overrun reserved[9]
    data = struct.pack("20i", 1, 2, 3, 4, 995, 277, 2, 1, 0, 0, 5, *range(9))
    taken = bus_stats.parse_icount(data, "/dev/ttyS1")
    assert taken.counters == {"rx": 995, "tx": 277, "frame": 2, "overrun": 1, "parity": 0,
                              "brk": 0, "buf_overrun": 5}  # fmt: skip
    before = bus_stats.parse_icount(struct.pack("20i", *[0] * 20), "/dev/ttyS1")
    change = bus_stats.compare(before, taken)
    assert change.bus_errors == 2 + 1 + 5 and change.flagged


def test_no_counters_from_an_ip_answer_without_them_no_such_interface_or_a_pty() -> None:
    """Nothing is recorded, nothing fails (a pty has no serial_core TIOCGICOUNT)."""
    for document in ([], [{"ifname": "can0"}], {"not": "a list"}, [7]):
        assert bus_stats.parse_ip_link(document, "can0") is None
    controller, terminal = os.openpty()
    try:
        pty = os.ttyname(terminal)
        assert bus_stats.uart_snapshot(pty) is None
        no_such = bus_stats.BusCounters("isotp", "evbs-no-such")
        for counters in (no_such, bus_stats.BusCounters("uart", pty)):
            assert counters.snapshot() is None and counters.source == "none"
            assert counters.params()["counter_source"] == "none"
    finally:
        os.close(controller)
        os.close(terminal)


def test_phases_of_one_counter_pool_into_one_context_record() -> None:
    """Each phase is its own sample set; the summary has one record per counter, n = phases."""
    counters = bus_stats.BusCounters("isotp", "can0")
    params = {"phase": "periodic", "rate_hz": 20.0, "transport": "isotp"}
    sets = []
    for phase, bus_error in enumerate((0, 2, 0)):
        change = bus_stats.PhaseCounters("can0", "ip", {"bus_error": bus_error, "tx_packets": 40},
                                         {}, "ERROR-ACTIVE")  # fmt: skip
        sets += bus_stats.phase_sample_sets("link", "seed", "json", params, phase, counters, change)
    records = {(r["metric"], r["params"].get("counter")): r for r in results.summarize(sets)}
    assert set(records) == {("bus_errors", None), ("bus_counter", "bus_error"),
                            ("bus_counter", "tx_packets")}  # fmt: skip
    assert records["bus_errors", None]["n"] == 3 and records["bus_errors", None]["max"] == 2
    assert records["bus_counter", "tx_packets"]["median"] == 40


def test_a_phase_that_fails_to_start_still_says_the_bus_errors_first(
    veth: tuple[str, str], tmp_path: Path
) -> None:
    """No answer to HELLO can be a controller gone bus-off: the bus's errors are said before
    the error. The phase fails for real (no AF_CAN here: the ISO-TP port cannot open) after
    5 frames were dropped within it."""
    a, b = veth
    subprocess.run(["ip", "link", "set", b, "down"], check=True)
    run_spec = specs.from_dict({"link_transport": f"isotp://{a}?tx=0x7E0&rx=0x7E8"})
    said = _Said()
    context = RunContext(run_spec, RunWriter(tmp_path / "run", "r3"), said)
    phases = BusPhases(context, link_suite.Settings.from_spec(run_spec), timing.current())
    opens_the_port = phases.prepare

    def drops_then_opens() -> None:
        # sent, and counted, between the phase's two snapshots: no race with its `ip` runs
        assert phases.counters is not None
        _send(a, 5)  # the peer is down: veth drops each one and counts it
        _settle(phases.counters)
        opens_the_port()

    phases.prepare = drops_then_opens
    with pytest.raises(UserError):
        phases.periodic("seed", "json", 0, messages.bind("json", "seed"), [])
    assert phases.counters is not None and phases.counters.source == "ip"
    assert said.lines == [f"link: bus errors on {a} during seed json phase 1: tx_dropped +5"]
    assert not list(results.read_samples(tmp_path / "run"))  # said, not recorded


def test_an_interface_at_other_rates_than_the_url_is_said() -> None:
    """The bus load is counted against the URL's rates; the MCAN above runs at 500 k / 2 M."""
    mcan = _snapshot(_can0(ACTIVE, CLEAN, {}, (0, 0)))
    assert (mcan.bit_rate, mcan.data_bit_rate, mcan.state) == (500000, 2000000, ACTIVE)
    assert bus_stats.rate_mismatch(500000, 2000000, mcan) is None
    assert bus_stats.rate_mismatch(500000, 5000000, mcan) == (
        "can0 runs at 500000 / 2000000 bit/s but the bus load is counted against "
        "500000 / 5000000 bit/s (make bitrate= and dbitrate= in the URL the interface's)"
    )
    assert bus_stats.rate_mismatch(250000, 0, mcan).startswith("can0 runs at 500000 / 2000000")
    # vcan (no bit timing) and the sysfs fallback say no rate: nothing to compare.
    assert bus_stats.rate_mismatch(500000, 2000000, None) is None
    assert bus_stats.rate_mismatch(500000, 0, bus_stats.Snapshot("vcan0", "ip", {})) is None
