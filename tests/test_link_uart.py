"""The link over a UART: framing that resynchronises, over a real pseudo-terminal pair.

socat joins two ptys; one end writes link frames with noise, damaged, dropped
and duplicated bytes between and inside them, the other must hand out exactly
the intact frames, in order. The frame layout is built by hand in the test
from docs/buses.md (sync word, header, CRC-16/XMODEM, body, CRC-32).
"""

from __future__ import annotations

import binascii
import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import require_command

from evbench_agent.buses import transport as bus_transport
from evbench_agent.link import handshake, messages, uart_framing, uart_port
from evbench_agent.link.framing import MESSAGE, REPLY, Frame, PeerClosed
from evbench_core.errors import UserError


def by_hand(kind: int, sequence: int, body: bytes) -> bytes:
    header = struct.pack("<IBQ", 9 + len(body), kind, sequence)
    crc16 = binascii.crc_hqx(header, 0)
    crc32 = zlib.crc32(header + body)
    return b"\xeb\x90" + header + struct.pack("<H", crc16) + body + struct.pack("<I", crc32)


def test_a_frame_is_laid_out_as_documented() -> None:
    # by_hand's CRCs are the catalogued ones: CRC-16/XMODEM and CRC-32 (ISO-HDLC) check
    # values in the CRC RevEng catalogue.
    assert binascii.crc_hqx(b"123456789", 0) == 0x31C3
    assert zlib.crc32(b"123456789") == 0xCBF43926
    frame = uart_framing.encode(MESSAGE, 5, b"hello")
    assert frame == by_hand(MESSAGE, 5, b"hello")
    assert len(frame) == 2 + 13 + 2 + 5 + 4
    assert len(frame) - 13 - 5 == uart_framing.OVERHEAD


def test_any_split_of_a_stream_gives_the_same_frames() -> None:
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


@pytest.fixture
def pty_pair(tmp_path: Path) -> Iterator[tuple[str, str]]:
    socat = require_command("socat")
    a, b = tmp_path / "a", tmp_path / "b"
    process = subprocess.Popen(
        [socat, "-d", "-d", f"pty,raw,echo=0,link={a}", f"pty,raw,echo=0,link={b}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not (a.exists() and b.exists()):
            assert process.poll() is None, "socat exited"
            assert time.monotonic() < deadline, "socat made no ptys in 20 s"
            time.sleep(0.02)
        yield str(a), str(b)
    finally:
        process.terminate()
        process.wait(timeout=10)


def receive_all(port: uart_port.UartPort, want: int, timeout_s: float) -> list[Frame]:
    frames: list[Frame] = []
    deadline = time.monotonic() + timeout_s
    while len(frames) < want and time.monotonic() < deadline:
        frames += port.receive(0.2)
    return frames


def test_noise_and_damaged_frames_over_a_real_pty_pair_lose_only_themselves(
    pty_pair: tuple[str, str],
) -> None:
    a, b = pty_pair
    stream, intact = damaged_stream(60, seed=7)
    assert len(intact) == 60 - 6 - 7 - 6  # sequences 3, 12.. (6); 6, 15.. (7); 9, 18.. (6)
    with (
        uart_port.UartPort(uart_port.parse(f"uart://{a}?baud=115200")) as sender,
        uart_port.UartPort(uart_port.parse(f"uart://{b}?baud=115200")) as receiver,
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
    # A USB adapter pulled out: the pseudo-terminal's other end closes, reads fail (EIO).
    board_end, host_end = os.openpty()
    with uart_port.UartPort(uart_port.parse(f"uart://{os.ttyname(host_end)}?baud=115200")) as port:
        os.close(board_end)
        with pytest.raises(PeerClosed):
            for _ in range(5):  # a closed line reads as EOF or EIO, depending on the kernel
                port.receive(0.2)
    os.close(host_end)


def test_a_message_longer_than_its_period_is_said_up_front() -> None:
    # 995 B + 13 header + 8 UART framing = 1016 B x 10 bits / 115200 = 88.2 ms > 50 ms.
    line = bus_transport.parse_transport("uart:///dev/ttyS1?baud=115200")
    said = bus_transport.sustainable(line, bytes(995), 20)
    assert said is not None and "88.2 ms" in said and "50 ms" in said
    # 277 B: (277 + 21) x 10 / 115200 = 25.9 ms: fits in 50 ms.
    assert bus_transport.sustainable(line, bytes(277), 20) is None


def test_the_responder_answers_over_a_uart_through_noise(pty_pair: tuple[str, str]) -> None:
    """`evbench-agent serve --transport uart://...` on one pty, a client on the other."""
    a, b = pty_pair
    responder = subprocess.Popen(
        [sys.executable, "-m", "evbench_agent", "serve", "--transport", f"uart://{b}?baud=115200"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={key: value for key, value in os.environ.items() if key != handshake.TOKEN_ENV},
    )  # fmt: skip
    try:
        assert json.loads(responder.stdout.readline())["transport"].startswith("uart://")
        link = messages.bind("protobuf", "seed")
        hello = handshake.Hello("protobuf", "seed", messages.message_name(link.profile), "ack")
        with uart_port.UartPort(uart_port.parse(f"uart://{a}?baud=115200")) as client:
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
    finally:
        responder.send_signal(signal.SIGTERM)
        _out, err = responder.communicate(timeout=30)
    assert responder.returncode == 0, err
