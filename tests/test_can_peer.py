"""The host's CAN responder (`evbench serve --transport pycan://...`) on python-can's virtual
bus, which joins buses of one process only: the command in the main thread, a client (can-isotp
and the agent's framing) in another, ended with SIGTERM; a third bus sees every CAN frame,
checked against ISO 15765-2 worked out here."""

from __future__ import annotations

import json
import logging
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import can
import isotp
import pytest
from conftest import ROOT
from native_cross import expected_ack, receipt_time

from evbench.cli import evbench
from evbench.usecases import can_peer
from evbench_agent.link import bus_connection, bus_responder, client, framing, handshake, messages
from evbench_core.errors import UserError

REQUEST_ID, RESPONSE_ID = 0x7E0, 0x7E8  # the client sends on 0x7E0, the responder on 0x7E8
CAP_S = 10.0  # the longest any one wait of the client may take
PREFIX = struct.Struct("<IBQ")  # docs/link.md: length, kind, sequence


class _Interrupted(Exception):
    """SIGTERM came before the responder's own handler was in place (a failed test)."""


def _url(channel: str, fd: bool) -> str:
    options = "&fd=1&dlen=64" if fd else ""
    return f"pycan://virtual/{channel}?tx={RESPONSE_ID:#x}&rx={REQUEST_ID:#x}{options}"


class Client:
    """The board's side of the link, built from can-isotp and the agent's framing."""

    def __init__(self, channel: str, fd: bool) -> None:
        self.bus = can.Bus(channel=channel, interface="virtual", ignore_config=True)
        self.sniffer = can.Bus(channel=channel, interface="virtual", ignore_config=True)
        address = isotp.Address(
            isotp.AddressingMode.Normal_11bits, txid=REQUEST_ID, rxid=RESPONSE_ID
        )
        params = {"tx_padding": 0xCC, "tx_data_length": 64 if fd else 8, "can_fd": fd,
                  "bitrate_switch": fd, "blocksize": 0, "max_frame_size": 8200}  # fmt: skip
        self.stack = isotp.CanStack(self.bus, address=address, params=params)
        self.stack.start()

    def send(self, kind: int, sequence: int, body: bytes = b"") -> None:
        self.stack.send(framing.pack(kind, sequence, body))

    def receive(self, timeout_s: float = CAP_S) -> bytes | None:
        data = self.stack.recv(block=True, timeout=timeout_s)
        return None if data is None else bytes(data)

    def hello(self, codec: str, mode: str) -> dict[str, Any]:
        """HELLO until the responder answers (a frame sent before its bus opened is gone)."""
        link = messages.bind(codec, "seed")
        hello = handshake.Hello(codec, "seed", messages.message_name(link.profile), mode)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self.send(framing.HELLO, 0, json.dumps(hello.document()).encode())
            answer = self.receive(1.0)
            if answer is not None:
                length, kind, sequence = PREFIX.unpack_from(answer)
                assert (length, kind, sequence) == (len(answer) - 4, framing.HELLO, 0)
                return json.loads(answer[PREFIX.size :])
        raise AssertionError("no answer to HELLO within 30 s")

    def frames(self) -> list[can.Message]:
        """Every CAN frame the sniffer saw since the last call."""
        seen = []
        while (message := self.sniffer.recv(0.2)) is not None:
            seen.append(message)
        return seen

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stack.stop()
        self.bus.shutdown()
        self.sniffer.shutdown()


def serve_while(url: str, talk: Callable[[], Any]) -> Any:
    """Run `evbench serve --transport url` here while `talk` runs in a thread, then SIGTERM,
    only while the command runs (one that ended by itself must not leave one for pytest)."""
    outcome: dict[str, Any] = {}
    lock, serving = threading.Lock(), [True]

    def client() -> None:
        try:
            outcome["value"] = talk()
        except BaseException as error:
            outcome["error"] = error
        finally:
            with lock:
                if serving[0]:
                    os.kill(os.getpid(), signal.SIGTERM)

    def interrupted(_signum: int, _frame: Any) -> None:
        raise _Interrupted

    previous = signal.signal(signal.SIGTERM, interrupted)
    thread = threading.Thread(target=client, daemon=True)
    try:
        thread.start()
        code = evbench(["serve", "--transport", url])
    finally:
        with lock:
            serving[0] = False
        signal.signal(signal.SIGTERM, previous)
    thread.join(CAP_S)
    if "error" in outcome:
        raise outcome["error"]
    assert code == 0
    return outcome["value"]


@pytest.fixture
def channel(request: pytest.FixtureRequest) -> Iterator[str]:
    yield f"evb-{request.node.name}-{os.getpid()}"


def _check_reply(pdu: bytes, sequence: int, body_length: int, started_ns: int) -> int:
    """The REPLY's prefix byte for byte; returns its processing time (ns), bounded here."""
    assert pdu[: PREFIX.size] == PREFIX.pack(9 + 8 + body_length, framing.REPLY, sequence)
    assert len(pdu) == PREFIX.size + 8 + body_length
    (processing,) = struct.unpack_from("<Q", pdu, PREFIX.size)
    assert 0 < processing < time.perf_counter_ns() - started_ns
    return processing


@pytest.mark.parametrize("fd", [False, True], ids=["classic-8", "canfd-64"])
def test_echo_and_ack_replies_and_the_frames_on_the_bus(channel: str, fd: bool) -> None:
    seed = messages.bind("protobuf", "seed")
    message = seed.encode(seed.sample_data(1, 1)[0])

    def talk() -> dict[str, Any]:
        with Client(channel, fd) as client:
            seen: dict[str, Any] = {"hello": client.hello("protobuf", "echo")}
            client.frames()
            # Echo: a MESSAGE whose ISO-TP PDU is 277 bytes (13 of link header + 264).
            body = bytes(range(256)) + b"evbench!"
            started = time.perf_counter_ns()
            client.send(framing.MESSAGE, 7, body)
            echo = client.receive()
            assert echo is not None, "no REPLY to the echo MESSAGE"
            _check_reply(echo, 7, len(body), started)
            assert echo[PREFIX.size + 8 :] == body
            seen["frames"] = client.frames()
            # Ack: a real seed message; the ack is evbench.link.Ack in protobuf.
            assert client.hello("protobuf", "ack")["ok"] is True
            acks = []
            for sequence in (0, 1, 300):
                started = time.perf_counter_ns()
                client.send(framing.MESSAGE, sequence, message)
                reply = client.receive()
                assert reply is not None, f"no REPLY to MESSAGE {sequence}"
                acks.append((sequence, started, time.perf_counter_ns(), reply))
            seen["acks"] = acks
            client.send(framing.STATS, 9)
            seen["stats"] = client.receive()
            return seen

    seen = serve_while(_url(channel, fd), talk)

    hello = seen["hello"]
    assert hello["ok"] is True and hello["max_frame"] == 1 << 20  # the default --max-frame
    assert hello["responder"].startswith("evbench-agent ")

    requests = [m for m in seen["frames"] if m.arbitration_id == REQUEST_ID]
    replies = [m for m in seen["frames"] if m.arbitration_id == RESPONSE_ID]
    # The responder's flow control (0x30: continue, block size 0, STmin 0) comes first.
    assert replies[0].data[:3] == bytes([0x30, 0x00, 0x00])
    # 277 bytes: classic 1 FF + 39 CF = 40, CAN FD 1 FF + 4 CF = 5; then the client's FC.
    expected = 40 if fd is False else 5
    assert len(requests) == expected + 1 and requests[-1].data[0] == 0x30
    first = requests[0]
    head = framing.pack(framing.MESSAGE, 7, bytes(range(256)) + b"evbench!")
    assert list(first.data[:2]) == [0x10 | (277 >> 8), 277 & 0xFF]  # 0x11 0x15
    assert bytes(first.data[2:8]) == head[:6]
    assert [m.data[0] for m in requests[1:4]] == [0x21, 0x22, 0x23]
    if fd:
        assert all(m.is_fd and m.bitrate_switch for m in requests[:-1])
        assert [len(m.data) for m in requests[:-1]] == [64, 64, 64, 64, 32]  # 26 + 1 -> 32
    else:
        # Both ends pad to 8 bytes with 0xCC (the agent's padding=1 default, as the kernel).
        assert all(len(m.data) == 8 and not m.is_fd for m in requests + replies)
        assert bytes(replies[0].data) == bytes([0x30, 0, 0]) + b"\xcc" * 5
        # The last CF carries 277 - 6 - 7 * 38 = 5 bytes, padded with 0xCC to 8.
        assert bytes(requests[-2].data[6:]) == b"\xcc\xcc" and requests[-2].data[1:6] == head[-5:]
    # The REPLY's PDU: 13 + 8 + 264 = 285 bytes: classic 1 FF of 6 + ceil(279 / 7) = 40 CF,
    # CAN FD 1 FF of 62 + ceil(223 / 63) = 4 CF; with the FC before it.
    assert len(replies) == (1 + 41 if not fd else 1 + 5)

    for sequence, started, ended, reply in seen["acks"]:
        ack = reply[PREFIX.size + 8 :]
        _check_reply(reply, sequence, len(ack), started)
        receive_ns = receipt_time("protobuf", ack)  # evbench.link.Ack, worked by hand
        assert ack == expected_ack("protobuf", sequence, receive_ns)
        assert started < receive_ns < ended  # the same clock: this process's perf_counter

    stats = seen["stats"]
    assert stats[: PREFIX.size] == PREFIX.pack(len(stats) - 4, framing.STATS_REPLY, 9)
    assert json.loads(stats[PREFIX.size :])["messages"] == 3  # the acks since the last HELLO


def test_damaged_messages_are_logged_unanswered_and_the_responder_goes_on(
    channel: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("WARNING")

    def talk() -> dict[str, Any]:
        with Client(channel, fd=False) as client:
            assert client.hello("protobuf", "echo")["ok"] is True
            # 1. A PDU whose link length says 100 bytes more than it has.
            good = framing.pack(framing.MESSAGE, 1, b"corrupt")
            client.stack.send(struct.pack("<I", len(good) - 4 + 100) + good[4:])
            unanswered = [client.receive(1.5)]
            # 2. A transfer cut short: a first frame announcing 277 bytes, two
            # consecutive frames, then nothing (sent raw, beside the ISO-TP stack).
            raw = [bytes([0x11, 0x15]) + b"ABCDEF", bytes([0x21]) + b"GHIJKLM"]
            raw.append(bytes([0x22]) + b"NOPQRST")
            for data in raw:
                client.sniffer.send(can.Message(arbitration_id=REQUEST_ID, data=data,
                                                is_extended_id=False))  # fmt: skip
            # The responder waits for the next frame 1 s (ISO 15765-2 N_Cr), then gives up.
            unanswered.append(client.receive(2.0))
            # 3. Then an intact message is answered as ever.
            client.send(framing.MESSAGE, 2, b"intact")
            return {"unanswered": unanswered, "after": client.receive()}

    seen = serve_while(_url(channel, fd=False), talk)
    assert seen["unanswered"] == [None, None]
    after = seen["after"]
    assert after[: PREFIX.size] == PREFIX.pack(9 + 8 + 6, framing.REPLY, 2)
    assert after.endswith(b"intact")
    lines = [(r.name, r.getMessage()) for r in caplog.records if r.levelname == "WARNING"]
    assert any(
        name == "evbench.usecases.can_peer"
        and "link frame says 116 bytes but the PDU has 16" in text
        for name, text in lines
    ), lines
    assert any(
        name == "evbench.usecases.can_peer.isotp" and "consecutive" in text.lower()
        for name, text in lines
    ), lines


def test_sigterm_stops_the_command_and_it_says_where_it_listens(channel: str) -> None:
    url = _url(channel, fd=True)
    argv, pipe = [sys.executable, "-m", "evbench", "serve", "--transport", url], subprocess.PIPE
    process = subprocess.Popen(argv, stdout=pipe, stderr=pipe, text=True)
    try:
        line = process.stdout.readline()  # the responder's one line, once its port is open
        assert json.loads(line) == {"transport": url, "pid": process.pid}
        process.send_signal(signal.SIGTERM)
        assert process.wait(CAP_S) == 0
    finally:
        process.kill()
        process.communicate(timeout=CAP_S)


BAD_URLS = {
    "pycan://virtual/x?tx=0x7E8": "'pycan://virtual/x?tx=0x7E8' needs tx= and rx= CAN ids",
    "pycan://virtual?tx=0x7E8&rx=0x7E0": "needs an interface and a channel",
    "pycan://virtual/x?tx=0x7E8&rx=0x7E0&color=red": "unknown ISO-TP option(s) color in 'pycan:",
    "pycan://virtual/x?tx=0x7E8&rx=0x7E0&bitrate=fast": "bitrate=fast",
    "pycan://virtual/x?tx=0x800&rx=0x7E0": "does not fit a 11-bit CAN id",
    "pycan://virtual/x?tx=0x7E8&rx=0x7E0&fd=1&dlen=10": "dlen=10 is not a CAN FD length",
    "pycan://virtual/x?tx=0x7E8&rx=0x7E8": "tx and rx are the same CAN id",
    "pycan://nosuchbus/x?tx=0x7E8&rx=0x7E0": "python-can has no interface 'nosuchbus'",
    "pycan://socketcan/evbnope0?tx=0x7E8&rx=0x7E0": "cannot open CAN channel 'evbnope0'",
    "canbus://x": "unknown transport",
}


@pytest.mark.parametrize("url", BAD_URLS)
def test_bad_addresses_are_one_line_user_errors_and_the_command_exits_2(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UserError) as caught:
        can_peer.open_port(url).close()
    assert BAD_URLS[url] in str(caught.value)
    assert "\n" not in str(caught.value)
    assert evbench(["serve", "--transport", url]) == 2
    out, err = capsys.readouterr()
    assert out == "" and [line for line in err.splitlines() if ": error: " in line] == [
        f"evbench: error: {caught.value}"
    ]


def test_python_can_and_can_isotp_are_the_hosts_extra_loaded_only_for_a_pycan_port() -> None:
    """Never the agent's dependency; not loaded for `evbench --help` or any other command."""
    agent = (ROOT / "agent" / "pyproject.toml").read_text(encoding="utf-8")
    host = (ROOT / "host_tools" / "pyproject.toml").read_text(encoding="utf-8")
    assert "python-can" not in agent and "can-isotp" not in agent
    assert 'can = ["python-can>=4.3", "can-isotp>=2.0"]' in host
    probe = (
        "import json, sys\n"
        "import evbench.cli, evbench.commands.serve, evbench.usecases.can_peer\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'can', 'isotp'})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_the_agent_s_own_link_client_measures_against_it(channel: str) -> None:
    """BusConnection and run_periodic on a pycan:// port with the ids swapped: 20 seed
    messages at 20 Hz over CAN FD, every one answered in ack mode."""
    client_url = f"pycan://virtual/{channel}?tx={REQUEST_ID:#x}&rx={RESPONSE_ID:#x}&fd=1"
    transport_url = f"isotp://{channel}?tx={REQUEST_ID:#x}&rx={RESPONSE_ID:#x}&fd=1&bitrate=500000"
    link = messages.bind("protobuf", "seed")
    data = link.sample_data(20, 1)

    def talk() -> client.PhaseResult:
        with can_peer.open_port(client_url) as port:
            deadline = time.monotonic() + 30
            while True:  # the responder's bus may not be open yet: HELLO again
                try:
                    connection = bus_connection.BusConnection(
                        port, transport_url, link, "ack", timeout_s=1.0
                    )
                    break
                except handshake.HandshakeError:
                    if time.monotonic() > deadline:
                        raise
            with connection:
                return client.run_periodic(connection, data, 20.0, 20, 0, 0.05)

    result = serve_while(_url(channel, fd=True), talk)
    assert result.error is None
    assert sorted(result.sent) == list(range(20)) and result.lost == 0
    assert sorted(result.answered()) == list(range(20))
    assert result.responder["messages"] == 20  # the responder's own count, from STATS


def test_an_adapter_that_fails_while_serving_is_one_user_error(channel: str) -> None:
    """The bus closed under the port (an unplugged adapter): python-can's error in the ISO-TP
    thread comes out of the next receive as a UserError naming the adapter."""
    with can_peer.open_port(_url(channel, fd=False)) as port:
        port.bus.shutdown()
        deadline = time.monotonic() + CAP_S
        with pytest.raises(UserError) as caught:
            while time.monotonic() < deadline:
                port.receive_frames(0.1)
    assert str(caught.value).startswith(f"the CAN adapter (virtual {channel}) failed: ")
    assert "CanOperationError" in str(caught.value)


class PreparedPort:
    """For bus_responder's serve loop, in place of the kernel's ISO-TP socket (no AF_CAN
    here): returns, call by call, a list of frames or raises the exception it was given."""

    def __init__(self, results: list) -> None:
        self.results = list(results)
        self.sent: list[tuple[int, int, bytes]] = []
        self.closed = False

    def send_frame(self, kind: int, sequence: int, body: bytes = b"") -> None:
        self.sent.append((kind, sequence, body))

    def receive_frames(self, timeout_s: float) -> list[framing.Frame]:
        if not self.results:
            raise KeyboardInterrupt  # how an operator's Ctrl-C ends `serve`
        result = self.results.pop(0)
        if isinstance(result, BaseException):
            raise result
        return result

    def close(self) -> None:
        self.closed = True


def test_serving_drops_a_pdu_that_is_not_a_link_frame_and_ends_on_other_errors(caplog) -> None:
    before_hello = framing.Frame(framing.MESSAGE, 7, b"x")
    port = PreparedPort(
        [framing.FrameError("unknown frame kind 99"), [before_hello], framing.FrameError("short")]
    )
    with caplog.at_level(logging.INFO, logger="evbench_agent.link.bus_responder"):
        bus_responder.serve_transport("isotp://can0", opener=lambda url, max_frame: port)
    assert port.closed
    assert port.results == []  # every prepared result was read: the loop did not stop early
    assert port.sent == []  # nothing is answered before a HELLO
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["dropped a transfer: unknown frame kind 99", "dropped a transfer: short"]
    # Two bad transfers and one MESSAGE before any HELLO: three dropped, none answered.
    assert "answered 0, dropped 3" in caplog.text
    port = PreparedPort([OSError("the interface went down")])
    with pytest.raises(OSError):
        bus_responder.serve_transport("isotp://can0", opener=lambda url, max_frame: port)
    assert port.closed  # the port is closed on the way out
