"""End-to-end: the link suite over the virtual board's own buses.

The board (evboard_qemu.py) has two Kvaser PCIcan controllers on one emulated
CAN bus, which the guest's kvaser_pci and sja1000 drivers make can0 and can1
(classic CAN, set up at 500 kbit/s), and a PCI 16550, the guest's ttyS0,
whose other end is a pseudo-terminal on this host. The link suite's client
runs on the board (`evbench-agent run --suite link --link-transport ...`):

- over ISO-TP with 8-byte classic frames from can0 to a responder on can1,
  both on the board, through the real SocketCAN drivers;
- with an ISO-TP id pair nobody answers: one clear line, exit 2, soon;
- over the UART from ttyS0 to a responder on this host (the host venv's
  `evbench-agent serve`) on the pty's other end.

QEMU paces neither its CAN bus nor its UARTs, so this checks correctness, not
timing: every message of every phase answered (as many RTTs as messages sent),
none lost, and the frames and bytes really went through the emulated
controllers (their own counters); `bus_load` there is nominal.
"""

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from evboard_fixture import BoardSession, evboard_session  # noqa: F401 (fixture `evboard`)

from evbench.usecases.deploy import build_zipapp

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]

AGENT = "python3 /tmp/evbench-agent.pyz"
HOST_AGENT = Path(sys.executable).with_name("evbench-agent")
#: The smallest plan that still shows a phase boundary: 2 phases of 10 messages.
PHASES, COUNT = 2, 10
SPEC = "/tmp/buses-spec.json"
BIT_RATE = 500_000
BAUD = 115_200
#: can0 asks on 0x7E0 and hears 0x7E8; the responder on can1 the other way round.
CLIENT_URL = f"isotp://can0?tx=0x7E0&rx=0x7E8&bitrate={BIT_RATE}"
RESPONDER_URL = "isotp://can1?tx=0x7E8&rx=0x7E0"
#: A seed message in protobuf is about 277 bytes (docs/buses.md); 200 is a safe floor.
#: As an ISO-TP PDU with the 13-byte header, 213 bytes on 8-byte classic frames are a
#: First Frame (6 bytes) and ceil((213 - 6) / 7) = 30 Consecutive Frames: 31 frames.
FRAMES_PER_MESSAGE_AT_LEAST = 31
#: Classic CAN runs at 5 Hz: the emulated sja1000 takes an interrupt per frame, and on a
#: loaded 2-core host (CI's tiers side by side) 20 Hz's 49 frames a message backed up,
#: RTTs grew from 0.09 to 0.93 s and a reply came after the 1 s that counts it lost.
CAN_RATE_HZ = 5
#: The nominal bus load of protobuf's seed messages at 5 Hz on classic CAN 500 k: a
#: ~290-byte PDU is 1 + ceil((290 - 6) / 7) = 42 frames of 111 bits before stuffing, its
#: flow control 1 and the ~30-byte ack reply 5 + 1: 49 x 111 = 5439 bits, 10.9 ms per
#: 200 ms (5.44 %), and at most 24 stuff bits a frame on top (6.6 %): the range allows
#: a few bytes either way. The suite divides the phase's wire time by one period per
#: message sent (docs/buses.md), so the emulator's stalls (one of 226 ms was seen) do
#: not move it.
LOAD_RANGE = (5.0, 7.0)
#: On the UART each link frame also has 8 bytes of framing (sync, CRCs): 13 + 8 + 200.
UART_BYTES_PER_MESSAGE_AT_LEAST = 221
#: The UART's nominal load, the busier direction (the messages): (277 + 13 + 8) bytes
#: of 10 bits (8N1) at 115200 baud is 25.9 ms of every 50 ms, 51.7 %; the range allows
#: about 20 bytes either way.
UART_LOAD_RANGE = (48.0, 56.0)


@pytest.fixture(scope="module")
def board(evboard: BoardSession) -> BoardSession:
    """The board with the agent as a zipapp and the small plan's spec."""
    evboard.upload(build_zipapp(), "/tmp/evbench-agent.pyz")
    evboard.upload(json.dumps({"link_phases": PHASES}).encode(), SPEC)
    return evboard


def _run_link_suite(
    board: BoardSession, url: str, out: str, rate_hz: float = 20
) -> tuple[int, str, float]:
    """The link suite's client on the board: (exit status, its output, seconds from the
    suite's start event to its exit, timed on the board as the lines arrive)."""
    said = board.ssh(
        f"{AGENT} run --suite link --quick --codecs protobuf --count {COUNT} --spec {SPEC}"
        f" --rate {rate_hz:g}"
        f" --link-transport '{url}' --out {out} --progress json 2>&1"
        ' | while IFS= read -r line; do echo "$(date +%s.%N) $line"; done;'
        ' echo "$(date +%s.%N) exit=${PIPESTATUS[0]}"',
        1200,
    )
    stamped = [line.split(" ", 1) for line in said.splitlines() if " " in line]
    started = [float(t) for t, line in stamped if '"event": "start"' in line]
    ended, status = float(stamped[-1][0]), int(stamped[-1][1].removeprefix("exit="))
    text = "\n".join(line for _, line in stamped)
    return status, text, ended - started[0] if started else float("nan")


def _check_records(board: BoardSession, out: str, transport: str, bit_rate: int) -> list[float]:
    """Every periodic phase: as many RTTs as messages sent, none lost; return the
    phases' bus loads (%)."""
    found = [json.loads(line) for line in board.ssh(f"cat {out}/samples.jsonl", 120).splitlines()]
    periodic = [r for r in found if r["params"].get("phase") == "periodic"]

    def records(metric: str) -> list[dict]:
        return [r for r in periodic if r["codec"] == "protobuf" and r["metric"] == metric]

    rtts = records("rtt_transport")
    assert sorted(r["worker"] for r in rtts) == list(range(PHASES)), rtts
    for record in rtts:
        params = record["params"]
        assert params["count"] == COUNT and len(record["values"]) == COUNT, record
        assert params["transport"] == transport and params["bit_rate"] == bit_rate
        assert params["peer"] == "bus"
    assert [r["values"] for r in records("lost")] == [[0.0]] * PHASES
    assert not [r for r in found if r["params"].get("phase") == "capacity"]
    loads = {r["worker"]: r["values"][0] for r in records("bus_load")}
    assert sorted(loads) == list(range(PHASES)), loads
    return [loads[phase] for phase in range(PHASES)]


def _counters(board: BoardSession, names: list[str]) -> dict[str, int]:
    """/sys/class/net/*/statistics counters, e.g. 'can0/tx_packets'."""
    paths = " ".join(f"/sys/class/net/{name.replace('/', '/statistics/')}" for name in names)
    values = board.ssh(f"cat {paths}").split()
    return dict(zip(names, map(int, values), strict=True))


def test_the_board_has_two_kvaser_controllers_and_a_pci_16550(board: BoardSession) -> None:
    """udev loaded kvaser_pci from the root's /lib/modules for both PCI functions; the
    16550 is ttyS0, UART type 4 (PORT_16550A in linux/serial_core.h)."""
    drivers = board.ssh(
        "for n in can0 can1; do basename $(readlink /sys/class/net/$n/device/driver);"
        " cat /sys/class/net/$n/type; done"
    ).split()
    assert drivers == ["kvaser_pci", "280", "kvaser_pci", "280"], drivers  # 280: ARPHRD_CAN
    uart = board.ssh(
        "cat /sys/class/tty/ttyS0/type; basename $(readlink /sys/class/tty/ttyS0/device)"
    )
    assert uart.split()[0] == "4", uart
    for name in ("can0", "can1"):
        board.ssh(f"ip link set {name} down; ip link set {name} up type can bitrate {BIT_RATE}")
        details = board.ssh(f"ip -details link show {name}")
        assert f"bitrate {BIT_RATE}" in details and "state ERROR-ACTIVE" in details, details


@pytest.fixture(scope="module")
def can_responder(board: BoardSession) -> Iterator[None]:
    """`evbench-agent serve` over ISO-TP on can1, on the board."""
    for name in ("can0", "can1"):
        board.ssh(
            f"ip link show {name} | grep -q ',UP' ||"
            f" ip link set {name} up type can bitrate {BIT_RATE}"
        )
    pid = board.ssh(
        f"nohup {AGENT} serve --transport '{RESPONDER_URL}' >/tmp/can-responder.log 2>&1"
        " </dev/null & echo $!"
    ).strip()
    try:
        board.ssh(
            "for i in $(seq 180); do grep -q transport /tmp/can-responder.log && exit 0;"
            " sleep 1; done; cat /tmp/can-responder.log; exit 1",
            timeout=240,
        )
        yield
    finally:
        print(board.ssh(f"kill {pid}; sleep 2; cat /tmp/can-responder.log"))


def test_the_link_over_isotp_on_the_kvaser_pair(board: BoardSession, can_responder: None) -> None:
    """Classic CAN through the sja1000 driver: every message answered, and each frame
    can0 sent can1 received (and back): nothing dropped on the emulated bus."""
    names = ["can0/tx_packets", "can0/rx_packets", "can1/tx_packets", "can1/rx_packets"]
    names += ["can0/rx_errors", "can1/rx_errors", "can0/rx_over_errors", "can1/rx_over_errors"]
    before = _counters(board, names)
    status, said, _ = _run_link_suite(board, CLIENT_URL, "/tmp/kvaser-run", CAN_RATE_HZ)
    assert status == 0, said
    after = _counters(board, names)
    delta = {name: after[name] - before[name] for name in names}
    loads = _check_records(board, "/tmp/kvaser-run", "isotp", BIT_RATE)
    # The suite's own bus counters around each phase (docs/buses.md, "Bus counters
    # during a run"): can0's, with no error.
    found = [
        json.loads(line) for line in board.ssh("cat /tmp/kvaser-run/samples.jsonl").splitlines()
    ]
    errors = [r for r in found if r["metric"] == "bus_errors"]
    assert sorted(r["worker"] for r in errors) == list(range(PHASES)), errors
    assert all(r["values"] == [0.0] and r["params"]["interface"] == "can0" for r in errors)
    print(f"kvaser pair: bus load {loads}")
    assert all(LOAD_RANGE[0] < load < LOAD_RANGE[1] for load in loads), loads
    # Warm-up messages and the handshakes come on top of the counted messages.
    assert delta["can0/tx_packets"] >= PHASES * COUNT * FRAMES_PER_MESSAGE_AT_LEAST, delta
    assert delta["can0/tx_packets"] == delta["can1/rx_packets"], delta
    assert delta["can1/tx_packets"] == delta["can0/rx_packets"] > 0, delta
    assert not any(delta[name] for name in names if "errors" in name), delta


def test_a_mismatched_isotp_id_pair_fails_with_one_line(
    board: BoardSession, can_responder: None
) -> None:
    """Ids nobody listens on (the responder is on 0x7E0): the HELLO's First Frame gets
    no flow control; can-isotp gives up after its N_Bs timeout (1 s) and the suite says
    so in one line, exit 2. That line (not the handshake's "no answer to HELLO within
    10 s") shows it failed on can-isotp's own deadline; the time from the suite's start,
    which includes its wake-up probe on the emulated board, is only bounded."""
    url = f"isotp://can0?tx=0x7E1&rx=0x7E9&bitrate={BIT_RATE}"
    status, said, seconds = _run_link_suite(board, url, "/tmp/kvaser-bad")
    assert status == 2, said
    errors = [line for line in said.splitlines() if line.startswith("evbench-agent: error:")]
    assert len(errors) == 1, said
    assert "no ISO-TP flow control on can0 from id 0x7e9" in errors[0], errors
    assert "nobody listens on id 0x7e1" in errors[0], errors
    assert "Traceback" not in said, said
    assert seconds < 60, (seconds, said)
    print(f"mismatched ids: failed {seconds:.1f} s after the suite started")


def _serial_counts(board: BoardSession) -> tuple[int, int]:
    """ttyS0's (tx, rx) byte counts from the 8250 driver's /proc/tty/driver/serial."""
    line = board.ssh("grep '^0:' /proc/tty/driver/serial")
    tx, rx = re.search(r"tx:(\d+) rx:(\d+)", line).groups()
    return int(tx), int(rx)


def test_the_link_over_the_uart_to_a_host_pty(board: BoardSession) -> None:
    """The responder on this host on the PCI 16550's pty, the client on the board's
    ttyS0: every message answered, and the bytes went through the 16550."""
    responder = subprocess.Popen(
        [str(HOST_AGENT), "serve", "--transport", f"uart://{board.board.uart_path}?baud={BAUD}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert responder.stdout is not None
        ready = responder.stdout.readline()
        assert '"transport"' in ready, ready
        # QEMU looks for a reader on its pty end once a second and drops what the guest
        # sends until it sees one.
        time.sleep(2)
        tx_before, rx_before = _serial_counts(board)
        status, said, _ = _run_link_suite(board, f"uart:///dev/ttyS0?baud={BAUD}", "/tmp/uart-run")
        assert status == 0, said
        tx_after, rx_after = _serial_counts(board)
        loads = _check_records(board, "/tmp/uart-run", "uart", BAUD)
        print(f"UART: bus load {loads}")
        assert all(UART_LOAD_RANGE[0] < load < UART_LOAD_RANGE[1] for load in loads), loads
        sent = tx_after - tx_before
        assert sent >= PHASES * COUNT * UART_BYTES_PER_MESSAGE_AT_LEAST, (sent, said)
        assert rx_after - rx_before >= PHASES * COUNT * 21, (rx_after - rx_before, said)
    finally:
        responder.send_signal(signal.SIGTERM)
        try:
            output, _ = responder.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            responder.kill()
            output, _ = responder.communicate(timeout=30)
        print(output)


#: meta-evbench's can0 file (evbench-can), as the image installs it.
CAN_NETWORK = (
    Path(__file__).resolve().parents[2]
    / "meta-evbench/recipes-connectivity/evbench-can/files/80-evbench-can0.network"
)

#: Where it goes on the board: networkd's runtime directory (gone at the next boot).
RUNTIME_NETWORK = "/run/systemd/network/80-evbench-can0.network"


def _can0(board: BoardSession) -> dict:
    return json.loads(board.ssh("ip -details -json link show can0"))[0]


def _restart_networkd(board: BoardSession) -> None:
    """The board has no D-Bus, so `networkctl reload` cannot reach networkd: restart it
    (detached, since it may drop eth0's lease, and with it this SSH session, a moment)."""
    board.ssh("nohup sh -c 'sleep 1; systemctl restart systemd-networkd' >/dev/null 2>&1 &")


def _can0_when_reachable(board: BoardSession) -> dict:
    """can0's details; while networkd takes eth0's lease again, SSH may fail a moment."""
    for _ in range(30):
        try:
            return _can0(board)
        except AssertionError:
            time.sleep(1)
    return _can0(board)


def test_the_layers_networkd_file_brings_can0_up(board: BoardSession) -> None:
    """systemd-networkd on the board, given meta-evbench's file, sets the kvaser can0's
    bit rate and bus-off restart and brings it up. The SJA1000 is classic CAN only, so
    the file's two CAN FD lines are left out here; every other line is the shipped one.
    can0 is first set to other values by hand, so what is read back is networkd's."""
    lines = CAN_NETWORK.read_text().splitlines()
    classic = [line for line in lines if not line.startswith(("DataBitRate=", "FDMode="))]
    assert len(lines) - len(classic) == 2, lines
    board.ssh("ip link set can0 down; ip link set can0 type can bitrate 125000 restart-ms 0")
    assert _can0(board)["linkinfo"]["info_data"]["bittiming"]["bitrate"] == 125_000
    board.upload(("\n".join(classic) + "\n").encode(), RUNTIME_NETWORK)
    try:
        _restart_networkd(board)
        info: dict = {}
        for _ in range(60):
            info = _can0_when_reachable(board)
            data = info["linkinfo"]["info_data"]
            if data["bittiming"]["bitrate"] == BIT_RATE and "UP" in info["flags"]:
                break
            time.sleep(1)
        data = info["linkinfo"]["info_data"]
        assert data["bittiming"]["bitrate"] == BIT_RATE, info
        assert data["restart_ms"] == 100, info  # RestartSec=100ms
        assert "UP" in info["flags"] and data["state"] == "ERROR-ACTIVE", info
        print(f"networkd set can0: {data['bittiming']['bitrate']} bit/s, {data['state']}")
    finally:
        # Leave can0 as the other tests set it up: by hand, at 500 kbit/s.
        board.ssh(f"rm -f {RUNTIME_NETWORK}")
        _restart_networkd(board)
        time.sleep(3)
        _can0_when_reachable(board)
        board.ssh(
            f"ip link set can0 down; ip link set can0 up type can bitrate {BIT_RATE} restart-ms 0"
        )
