"""Raw sockets against a link responder, for the tests of its limits (test_link_hardening,
test_link_crowd, test_native_responder): what a peer sees, without the module's client.
Frames are built and cut by hand from docs/link.md's "Wire format" (4-byte LE length of
what follows, kind byte, 8-byte LE sequence, body), not by the module's code. And a short
link run against one (LINK_RUN), read back; and ptys made by socat
(a UART's stand-in), held open."""

import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def closed(sock: socket.socket, timeout_s: float) -> bool:
    """True once the peer closes (EOF or reset) within `timeout_s`."""
    sock.settimeout(timeout_s)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def connect_from(source: str, address: tuple[str, int]) -> socket.socket:
    """A connection from the loopback address `source` (127.0.0.0/8 gives many peers)."""
    return socket.create_connection(address, timeout=5, source_address=(source, 0))


def hello_bytes(**extra: object) -> bytes:
    """A HELLO frame (json, seed, ack unless `extra` says otherwise)."""
    document = {"codec": "json", "profile": "seed", "message": "evbench.seed.BackendDataPacket"}
    document |= {"mode": "ack", "protocol": "evbench-link", "version": 2, **extra}
    body = json.dumps(document).encode()
    # length (kind + sequence + body), kind 0, sequence 0
    return struct.pack("<I", 9 + len(body)) + b"\x00" + b"\x00" * 8 + body


def read_frames(sock: socket.socket, count: int, timeout_s: float = 5.0) -> list[tuple]:
    """`count` frames as (kind, sequence, body); bytes past them are not kept."""
    sock.settimeout(timeout_s)
    data, frames = b"", []
    while len(frames) < count:
        if len(data) >= 4 and len(data) >= 4 + struct.unpack("<I", data[:4])[0]:
            (length,) = struct.unpack("<I", data[:4])
            kind, sequence = data[4], struct.unpack("<Q", data[5:13])[0]
            frames.append((kind, sequence, data[13 : 4 + length]))
            data = data[4 + length :]
            continue
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed after {len(frames)} frames and {len(data)} bytes")
        data += chunk
    return frames


def answer(sock: socket.socket, timeout_s: float = 5.0) -> dict:
    """The HELLO answer."""
    ((kind, _sequence, body),) = read_frames(sock, 1, timeout_s)
    assert kind == 0  # HELLO
    return json.loads(body)


#: The link suite's quick plan at 6 messages a phase, at 100 Hz: 0.06 s instead of 0.3 s.
LINK_RUN = [sys.executable, "-m", "evbench_agent", "run", "--suite", "link", "--quick",
            "--rate", "100", "--count", "6", "--codecs", "json,protobuf"]  # fmt: skip


def measured_link_run(out: Path, mode: str) -> list[dict]:
    """The run's sample sets, once every phase of both codecs was answered in `mode` and
    the responder's CPU measured."""
    sets = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    rtt = [s for s in sets if s["metric"] == "rtt"]
    assert {s["codec"] for s in rtt} == {"json", "protobuf"}
    assert all(s["params"]["mode"] == mode for s in rtt)
    assert all(v == 0 for s in sets if s["metric"] == "lost" for v in s["values"])
    cpu = [v for s in sets if s["metric"] == "cpu_per_msg_responder" for v in s["values"]]
    assert cpu and all(v > 0 for v in cpu)
    return sets


@contextlib.contextmanager
def held_ptys(ends: list[Path], socats: list[subprocess.Popen]) -> Iterator[None]:
    """Once `socats` have made the ptys `ends`, both held open (socat ends the line when a
    pty's last holder closes it, EIO: hold them, as a UART stays); socat stopped after."""
    holds: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while not all(end.exists() for end in ends):
            assert all(socat.poll() is None for socat in socats), "socat exited"
            assert time.monotonic() < deadline, "socat made no ptys in 20 s"
            time.sleep(0.02)
        holds = [os.open(end, os.O_RDWR | os.O_NOCTTY) for end in ends]
        yield
    finally:
        for hold in holds:
            os.close(hold)
        for socat in socats:
            socat.terminate()
            socat.wait(timeout=10)
