"""Raw sockets against a link responder, for the tests of its limits (test_link_hardening,
test_link_crowd, test_native_responder): what a peer sees, without the module's client.
Frames are built and cut by hand from docs/link.md's "Wire format" (4-byte LE length of
what follows, kind byte, 8-byte LE sequence, body), not by the module's code."""

import json
import socket
import struct


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
