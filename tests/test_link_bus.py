"""The link over a UART on real pseudo-terminals: framing that resynchronises through noise
and damaged, dropped or duplicated bytes, the responder answering through it, and the link
suite end to end (`evbench-agent run` against `evbench-agent serve`, both over uart://).

The line is socat pty <-tcp-> LineSimulator <-tcp-> socat pty (tests/console_rig.py), paced
at the baud rate (8N1: 10 bits a byte). Frames are built by hand from docs/buses.md: 2 (sync)
+ 13 (length, kind, sequence) + 2 (CRC-16/XMODEM) + body + 4 (CRC-32) = 21 + body bytes.
"""

import binascii
import contextlib
import json
import os
import random
import select
import signal
import struct
import subprocess
import sys
import time
import tty
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import require_command
from console_rig import LineSimulator
from link_sockets import held_ptys

from evbench_agent import spec
from evbench_agent.buses.transport import parse_transport, sustainable
from evbench_agent.link import handshake, messages, uart_framing, uart_port
from evbench_agent.link.framing import HELLO, MESSAGE, REPLY, Frame, PeerClosed
from evbench_core.errors import UserError

FRAME_BYTES = 2 + 13 + 2 + 4  # around a message body (module docstring)
MIN_REPLY_BYTES = FRAME_BYTES + 8  # a reply holds at least the 8-byte processing time
BITS_PER_BYTE = 10
FAST_BAUD = 921600  # the fastest rate, for the tests that measure nothing


def by_hand(kind: int, sequence: int, body: bytes) -> bytes:
    header = struct.pack("<IBQ", 9 + len(body), kind, sequence)
    crc16 = binascii.crc_hqx(header, 0)
    crc32 = zlib.crc32(header + body)
    return b"\xeb\x90" + header + struct.pack("<H", crc16) + body + struct.pack("<I", crc32)


def test_a_frame_is_laid_out_as_documented_and_cut_out_of_any_split() -> None:
    # CRC-16/XMODEM and CRC-32 (ISO-HDLC) check values from the CRC RevEng catalogue
    assert binascii.crc_hqx(b"123456789", 0) == 0x31C3
    assert zlib.crc32(b"123456789") == 0xCBF43926
    frame = uart_framing.encode(MESSAGE, 5, b"hello")
    assert frame == by_hand(MESSAGE, 5, b"hello")
    assert len(frame) == 2 + 13 + 2 + 5 + 4
    assert len(frame) - 13 - 5 == uart_framing.OVERHEAD
    # any split of a stream gives the same frames
    body = b"\xeb\x90 a sync word in the body"
    stream = by_hand(MESSAGE, 1, body) + by_hand(REPLY, 1, b"")
    for cut in range(len(stream) + 1):
        deframer = uart_framing.Deframer()
        frames = deframer.feed(stream[:cut]) + deframer.feed(stream[cut:])
        assert frames == [Frame(MESSAGE, 1, body), Frame(REPLY, 1, b"")]
        assert deframer.skipped_bytes == 0


def damaged_stream(count: int, seed: int) -> tuple[bytes, list[Frame]]:
    """`count` frames with noise between them; every third damaged (a flipped,
    a dropped or a duplicated byte). Returns the bytes and the intact frames."""
    rng = random.Random(seed)
    stream, intact = bytearray(), []
    for sequence in range(count):
        body = rng.randbytes(rng.randrange(0, 300))
        frame = bytearray(by_hand(MESSAGE, sequence, body))
        stream += rng.randbytes(rng.randrange(0, 40))  # line noise before it
        damage = sequence % 9
        where = rng.randrange(2, len(frame))
        if damage == 3:
            frame[where] ^= 1 << rng.randrange(8)  # a flipped bit
        elif damage == 6:
            del frame[where]  # a dropped byte
        elif damage == 0 and sequence:
            frame.insert(where, frame[where])  # a duplicated byte
        else:
            intact.append(Frame(MESSAGE, sequence, body))
        stream += frame
    return bytes(stream), intact


@contextlib.contextmanager
def paced_line(directory: Path, baud: int) -> Iterator[tuple[str, str]]:
    """Two pty ends joined by a line at `baud`: the client's and the responder's URLs."""
    socat = require_command("socat")
    line = LineSimulator(baud)
    line.start()
    ends = [directory / "client", directory / "responder"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    processes = [
        subprocess.Popen([socat, f"PTY,link={end},rawer", f"TCP:127.0.0.1:{port}"], **quiet)
        for end, port in zip(ends, line.ports, strict=True)
    ]
    try:
        with held_ptys(ends, processes):
            yield tuple(f"uart://{end}?baud={baud}" for end in ends)
    finally:
        line.stop()


def receive_all(port: uart_port.UartPort, want: int, timeout_s: float) -> list[Frame]:
    frames, deadline = [], time.monotonic() + timeout_s
    while len(frames) < want and time.monotonic() < deadline:
        frames += port.receive(0.2)
    return frames


def test_noise_and_damaged_frames_over_a_real_pty_pair_lose_only_themselves(tmp_path):
    stream, intact = damaged_stream(60, seed=7)
    assert len(intact) == 60 - 6 - 7 - 6  # sequences 3, 12.. (6); 6, 15.. (7); 9, 18.. (6)
    with (
        paced_line(tmp_path, FAST_BAUD) as (a, b),
        uart_port.UartPort(uart_port.parse(a)) as sender,
        uart_port.UartPort(uart_port.parse(b)) as receiver,
    ):
        sender._serial.write(stream)  # the damaged stream, raw, as a noisy line gives it
        sender.send(REPLY, 99, b"after the noise")  # and one frame through the port's own send
        frames = receive_all(receiver, len(intact) + 1, timeout_s=20)
        assert receiver.deframer.skipped_bytes > 0
    assert frames == [*intact, Frame(REPLY, 99, b"after the noise")]


@pytest.mark.parametrize(
    "url",
    ["uart://dev/ttyS1", "tcp:///dev/ttyS1", "uart:///dev/ttyS1?baud=12345",
     "uart:///dev/ttyS1?baud=fast", "uart:///dev/ttyS1?parity=even"],
)  # fmt: skip
def test_bad_uart_addresses_are_user_errors(url: str) -> None:
    with pytest.raises(UserError):
        uart_port.parse(url)


def test_a_line_that_goes_away_mid_run_is_peer_closed() -> None:
    # a USB adapter pulled out: the pty's other end closes, reads fail (EIO)
    board_end, host_end = os.openpty()
    with uart_port.UartPort(uart_port.parse(f"uart://{os.ttyname(host_end)}?baud=115200")) as port:
        os.close(board_end)
        with pytest.raises(PeerClosed):
            for _ in range(5):  # a closed line reads as EOF or EIO, depending on the kernel
                port.receive(0.2)
    os.close(host_end)


def test_a_message_longer_than_its_period_is_said_up_front() -> None:
    # 995 B + 13 header + 8 UART framing = 1016 B x 10 bits / 115200 = 88.2 ms > 50 ms.
    line = parse_transport("uart:///dev/ttyS1?baud=115200")
    said = sustainable(line, bytes(995), 20)
    assert said is not None and "88.2 ms" in said and "50 ms" in said
    # 277 B: (277 + 21) x 10 / 115200 = 25.9 ms: fits in 50 ms.
    assert sustainable(line, bytes(277), 20) is None


def agent_env(token: str | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != handshake.TOKEN_ENV}
    if token is not None:
        env[handshake.TOKEN_ENV] = token
    return env


@contextlib.contextmanager
def serving(url: str, token: str | None = None) -> Iterator[None]:
    """`evbench-agent serve` on the line's far end; SIGTERM stops it cleanly (exit 0)."""
    argv = [sys.executable, "-m", "evbench_agent", "serve", "--transport", url]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=agent_env(token))  # fmt: skip
    try:
        assert json.loads(process.stdout.readline())["transport"] == url
        yield
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err


def test_the_responder_answers_over_a_uart_through_noise(tmp_path: Path) -> None:
    """`evbench-agent serve --transport uart://...` on one end, a client by hand on the other."""
    link = messages.bind("protobuf", "seed")
    hello = handshake.Hello("protobuf", "seed", messages.message_name(link.profile), "ack")
    with (
        paced_line(tmp_path, FAST_BAUD) as (near, far),
        serving(far),
        uart_port.UartPort(uart_port.parse(near)) as client,
    ):
        client.send(0, 0, json.dumps(hello.document()).encode())
        answer = receive_all(client, 1, timeout_s=30)
        assert [frame.kind for frame in answer] == [0]
        assert json.loads(answer[0].body)["ok"] is True
        payloads = [link.encode(item) for item in link.sample_data(4, 1)]
        for sequence, body in enumerate(payloads):
            client._serial.write(b"\x00\xeb\x90\xff noise \xeb")  # line noise between
            client.send(MESSAGE, sequence, body)
        damaged = bytearray(uart_framing.encode(MESSAGE, 9, payloads[0]))
        damaged[30] ^= 0x10  # a flipped bit: the responder never sees message 9
        client._serial.write(bytes(damaged))
        client.send(3, 10)  # STATS
        frames = receive_all(client, 5, timeout_s=30)
    replies = [frame for frame in frames if frame.kind == REPLY]
    assert sorted(link.decode_ack(frame.body[8:])[0] for frame in replies) == [0, 1, 2, 3]
    stats = [json.loads(frame.body) for frame in frames if frame.kind == 4]
    assert stats and stats[0]["messages"] == 4


def test_a_frame_cut_short_by_its_sender_does_not_deafen_the_responder() -> None:
    """A sender stopped after a frame's header (a reboot, Ctrl-C): once the line stays
    silent the responder drops the part, and answers the HELLO that came behind it
    (taken in as the part's body, it was never answered)."""
    line_end, board_end = os.openpty()
    tty.setraw(line_end)
    url = f"uart://{os.ttyname(board_end)}?baud=115200"
    link = messages.bind("protobuf", "seed")
    hello = handshake.Hello("protobuf", "seed", messages.message_name(link.profile), "ack")
    cut = by_hand(MESSAGE, 7, bytes(3000))[:40]  # its header says 3,000 more bytes come
    answers: list[Frame] = []
    try:
        with serving(url):
            os.write(line_end, cut + by_hand(HELLO, 0, json.dumps(hello.document()).encode()))
            deframer, deadline = uart_framing.Deframer(), time.monotonic() + 10
            while not answers and time.monotonic() < deadline:
                if select.select([line_end], [], [], 0.2)[0]:
                    answers = deframer.feed(os.read(line_end, 4096))
    finally:
        os.close(line_end)
        os.close(board_end)
    assert [frame.kind for frame in answers] == [HELLO]
    assert json.loads(answers[0].body)["ok"] is True


def test_a_responder_whose_line_goes_away_ends_in_one_error() -> None:
    """A USB adapter pulled out under `serve`: exit 2 with one error and its hint, not a
    warning a read for ever (it wrote ~10 MB/s and then ignored SIGTERM)."""
    line_end, board_end = os.openpty()
    url = f"uart://{os.ttyname(board_end)}?baud=115200"
    argv = [sys.executable, "-m", "evbench_agent", "serve", "--transport", url]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=agent_env())  # fmt: skip
    try:
        assert json.loads(process.stdout.readline())["transport"] == url
        os.close(board_end)
        os.close(line_end)  # the line's other end is gone: reads fail (EIO)
        _out, err = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 2, err
    error, hint = err.splitlines()
    assert error.startswith(f"evbench-agent: error: the line went away: {url[7:].split('?')[0]}")
    assert hint.startswith("evbench-agent: hint: check the adapter"), err


def run_link(
    out: Path, url: str, *args: str, spec: dict | None = None, token: str | None = None
) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "evbench_agent", "run", "--suite", "link", "--quick"]
    if spec is not None:
        (out.parent / "spec.json").write_text(json.dumps(spec))
        argv += ["--spec", str(out.parent / "spec.json")]
    argv += ["--link-transport", url, "--out", str(out), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=agent_env(token), timeout=300)


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def bodies(codec: str, params: dict) -> list[bytes]:
    """The encoded payloads a phase with these params sent, in order."""
    link = messages.bind(codec, "seed")
    return [link.encode(item) for item in link.sample_data(params["payloads"], params["seed"])]


def by_phase(found: list[dict], metric: str) -> dict[int, dict]:
    periodic = [r for r in found if r["params"].get("phase") == "periodic"]
    return {r["worker"]: r for r in periodic if r["metric"] == metric}  # worker: phase index


def test_the_link_suite_over_a_uart_at_115200_baud_with_a_token(tmp_path: Path) -> None:
    baud = 115200
    out = tmp_path / "run"
    with paced_line(tmp_path, baud) as (client, far), serving(far, token="bus-token-7"):
        refused = run_link(tmp_path / "without", client, "--codecs", "protobuf", "--count", "2",
                           spec={"link_phases": 1})  # fmt: skip
        # the quick plan at 20 Hz, two phases (not six) to keep the test short
        done = run_link(out, client, "--codecs", "protobuf", "--payloads", "5",
                        spec={"link_phases": 2}, token="bus-token-7")  # fmt: skip
    assert refused.returncode != 0 and "token" in refused.stderr, refused.stderr
    assert done.returncode == 0, done.stderr
    assert "cannot go out" not in done.stderr  # protobuf's seed message fits 50 ms here
    found = records(out)
    rtt = by_phase(found, "rtt_transport")
    assert sorted(rtt) == [0, 1]
    params = rtt[0]["params"]
    assert (params["transport"], params["bit_rate"], params["rate_hz"]) == ("uart", baud, 20.0)
    count, warmup = params["count"], params["warmup_count"]
    assert (count, warmup) == (6, 1)  # quick: 0.3 s and 0.05 s at 20 Hz
    sent = bodies("protobuf", params)
    sequences = range(warmup, warmup + count)
    markers = (out / "markers.jsonl").read_text().splitlines()
    ends = [json.loads(line) for line in markers if '"end"' in line and "periodic" in line]
    for phase in (0, 1):
        # One record per message sent, none lost, every one answered.
        assert len(rtt[phase]["values"]) == count
        assert by_phase(found, "lost")[phase]["values"] == [0.0]
        # Each round trip carries the message and at least a minimal reply over the line.
        for sequence, measured in zip(sequences, rtt[phase]["values"], strict=True):
            on_the_wire = FRAME_BYTES + len(sent[sequence % len(sent)]) + MIN_REPLY_BYTES
            assert measured > on_the_wire * BITS_PER_BYTE / baud
        # Bus load: the measured messages' bits over one period (1/20 s) each; full duplex,
        # and the acks are far smaller, so the messages' direction is the busier one.
        counted = [len(sent[s % len(sent)]) for s in sequences]
        bits = sum(FRAME_BYTES + size for size in counted) * BITS_PER_BYTE
        load = by_phase(found, "bus_load")[phase]
        assert load["unit"] == "percent"
        assert load["values"][0] == pytest.approx(100 * bits / baud / (count / 20), rel=1e-9)
        assert 45 < load["values"][0] < 60  # ~298 B x 10 bits x 20 Hz / 115200 = 52 %
    assert not any(r["metric"] == "bandwidth_wire" for r in found)  # Ethernet's: not a UART's
    assert [end["messages"] for end in ends] == [warmup + count] * 2


@pytest.mark.integration  # two runs over a paced line: about 10 s on an idle machine
def test_an_overloaded_uart_is_said_up_front_and_offers_the_same_load_short_or_long(tmp_path):
    """At 9600 baud protobuf's seed message (~300 B + 21: ~0.33 s) cannot go out at 20 Hz:
    warned before the phase, every message late or lost. The offered load (bits over one
    50 ms period each) is the same for 10 and 60 messages (within 5 %: payloads differ)."""
    baud = 9600
    runs, loads, said = {}, {}, {}
    with paced_line(tmp_path, baud) as (client, far):
        for count in (10, 60):
            with serving(far):
                runs[count] = run_link(tmp_path / f"run-{count}", client, "--codecs", "protobuf",
                                       "--count", str(count), spec={"link_phases": 1})  # fmt: skip
    for count, done in runs.items():
        out = tmp_path / f"run-{count}"
        assert done.returncode == 0, done.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        largest = bodies("protobuf", {"payloads": 200, "seed": manifest["spec"]["seed"]})
        ms = (FRAME_BYTES + max(map(len, largest))) * BITS_PER_BYTE / baud * 1e3
        warnings = [line for line in done.stderr.splitlines() if "warning:" in line]
        assert ms > 50 and len(warnings) == 1 and f"{ms:.1f} ms" in warnings[0], done.stderr
        assert "cannot go out 20 times a second" in warnings[0]
        assert manifest["notes"] == [warnings[0].split("warning: ", 1)[1]]
        found = records(out)
        lost = by_phase(found, "lost")[0]["values"][0]
        answered = len(by_phase(found, "rtt").get(0, {"values": []})["values"])
        # every message answered (and then late) or lost; none on time
        assert lost + answered == count and lost >= 1
        assert by_phase(found, "late")[0]["values"][0] == answered
        params = by_phase(found, "rtt_transport").get(0, by_phase(found, "lost")[0])["params"]
        sent = bodies("protobuf", params)
        sequences = range(params["warmup_count"], params["warmup_count"] + count)
        bits = sum(FRAME_BYTES + len(sent[s % len(sent)]) for s in sequences) * 10
        loads[count] = by_phase(found, "bus_load")[0]["values"][0]
        assert loads[count] == pytest.approx(100 * bits / baud / (count / 20), rel=1e-9)
        said[count] = [line for line in done.stderr.splitlines() if "cannot carry" in line]
    assert loads[10] > 100 and loads[60] > 100
    assert loads[10] == pytest.approx(loads[60], rel=0.05)
    for count, lines in said.items():
        assert len(lines) == 1 and f"offered {loads[count]:.0f} %" in lines[0], lines


def test_a_uart_that_does_not_exist_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = run_link(out, f"uart://{tmp_path}/ttyNONE?baud=115200")
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if ": error:" in line]
    assert len(errors) == 1 and f"cannot open {tmp_path}/ttyNONE" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("tcp://127.0.0.1:5", "unknown link transport"),
        ("uart:///dev/ttyS1?baud=12345", "not a rate"),
        ("isotp://can0?tx=0x7E0", "needs tx= and rx="),
        ("isotp://can0?tx=0x7E0&rx=0x7E8&bitrate=fast", "bits per second"),
        ("isotp://can0?tx=0x7E0&rx=0x7E8&bitrate=2000000", "not CAN rates"),
        ("isotp://can0?tx=0x7E0&rx=0x7E8&fd=1&dbitrate=0", "not CAN rates"),
        ("uart:///dev/ttyS1 192.0.2.7:5", "--peer names a TCP responder"),  # a bus and a peer
    ],
)
def test_bad_link_transports_are_refused_with_the_spec(url: str, message: str) -> None:
    transport, _, peer = url.partition(" ")
    peers = {"link_peer": peer} if peer else {}
    with pytest.raises(UserError, match=message):
        spec.from_dict({"link_transport": transport, "codecs": ["json"], **peers})


def test_a_transport_says_its_bus_and_rates_in_the_params() -> None:
    uart = parse_transport("uart:///dev/ttyS1?baud=921600")
    assert uart.params() == {"transport": "uart", "bit_rate": 921600}
    stated = parse_transport(
        "isotp://can0?tx=0x123&rx=0x456&fd=1&dlen=32&bitrate=250000&dbitrate=5000000"
    )
    assert stated.params() == {
        "transport": "isotp", "bit_rate": 250000, "data_bit_rate": 5000000,
        "frame_length": 32, "bit_rate_source": "url",
    }  # fmt: skip
    assert (stated.tx_id, stated.rx_id) == (0x123, 0x456)
    assert "bitrate" not in stated.port_url and "dlen=32" in stated.port_url
    # Classic CAN, no rates given: 500 kbit/s assumed, and the params say so.
    assumed = parse_transport("isotp://can0?tx=0x7E0&rx=0x7E8")
    assert assumed.params() == {
        "transport": "isotp", "bit_rate": 500000, "frame_length": 8, "bit_rate_source": "assumed"
    }  # fmt: skip


def test_a_uart_without_pyserial_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "serial", None)  # what an image without pyserial gives
    with pytest.raises(UserError, match="needs pyserial"):
        uart_port.UartPort(uart_port.parse("uart:///dev/ttyS1?baud=115200"))
