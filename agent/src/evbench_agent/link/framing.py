"""Frames on a TCP stream: a 4-byte little-endian length, then the frame.

A frame is `kind` (1 byte), `sequence` (8 bytes, little-endian) and a body.
A REPLY's body starts with the responder's processing time (8 bytes,
little-endian nanoseconds, its own clock: from the recv() that brought the
message to just before the reply's send), then the echo or the ack
(protocol version 2; docs/link.md has the whole format).
Every frame leaves in one write (`sendall` of one bytes object) on a socket
with TCP_NODELAY: two writes under Nagle's algorithm and delayed ACK can stall
a message for tens of milliseconds. Lengths read from the wire are checked
against a cap before anything is allocated for them.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import NamedTuple

from evbench_core.errors import UserError

#: The length prefix: a 4-byte little-endian unsigned integer, as the seed app.
LENGTH = struct.Struct("<I")
#: What follows it in every frame: kind and sequence number.
HEADER = struct.Struct("<BQ")
#: Length, kind and sequence at once (what pack() writes before the body).
_PREFIX = struct.Struct("<IBQ")
#: A REPLY's prefix: length, kind, sequence and the responder's processing time (ns).
_REPLY_PREFIX = struct.Struct("<IBQQ")
#: The processing time at the start of a REPLY body.
PROCESSING = struct.Struct("<Q")
#: Largest frame (kind + sequence + body) accepted unless configured otherwise.
DEFAULT_MAX_FRAME = 1 << 20
#: recv() size: several frames of the usual payloads arrive in one call.
RECV_SIZE = 1 << 16

#: Frame kinds.
HELLO = 0  # handshake, both directions; body is a JSON object (handshake.py)
MESSAGE = 1  # client -> responder: an encoded message
REPLY = 2  # responder -> client: the echo or the ack of MESSAGE `sequence`
STATS = 3  # client -> responder: asks for STATS_REPLY (empty body)
STATS_REPLY = 4  # responder -> client: a JSON object with the connection's counts
KINDS = frozenset({HELLO, MESSAGE, REPLY, STATS, STATS_REPLY})


class FrameError(UserError):
    """The byte stream is not evbench link frames (garbage, oversize, cut short).

    A user error: the peer is not what --peer promised (exit 2, not a bug)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(
            message, hint or "check that --peer is an 'evbench-agent serve' of this version"
        )


class PeerClosed(FrameError):
    """The peer closed the connection (or reset it)."""


class Frame(NamedTuple):
    """One frame (a named tuple: made per message, so it must be cheap to make)."""

    kind: int
    sequence: int
    body: bytes


def pack(kind: int, sequence: int, body: bytes = b"") -> bytes:
    """One frame, length prefix included, ready for a single sendall()."""
    return _PREFIX.pack(HEADER.size + len(body), kind, sequence) + body


def pack_reply(sequence: int, processing_ns: int, body: bytes) -> bytes:
    """A REPLY frame whose body starts with the responder's processing time."""
    length = HEADER.size + PROCESSING.size + len(body)
    return _REPLY_PREFIX.pack(length, REPLY, sequence, processing_ns) + body


def split_reply(body: bytes) -> tuple[int, bytes]:
    """(processing time in ns, echo or ack) from a REPLY body."""
    if len(body) < PROCESSING.size:
        raise FrameError(f"a REPLY body of {len(body)} bytes has no processing time")
    return PROCESSING.unpack_from(body)[0], body[PROCESSING.size :]


def configure(sock: socket.socket, send_timeout_s: float) -> None:
    """TCP_NODELAY, and a kernel send timeout so a peer that stops reading
    cannot block us forever (SO_SNDTIMEO costs no extra system call per send,
    unlike a Python socket timeout, which polls before every operation)."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval(send_timeout_s))


def timeval(seconds: float) -> bytes:
    """A struct timeval for SO_SNDTIMEO / SO_RCVTIMEO."""
    whole = int(seconds)
    return struct.pack("ll", whole, int((seconds - whole) * 1e6))


def send(sock: socket.socket, data: bytes) -> None:
    """Send one packed frame; a peer that vanished or stopped reading raises PeerClosed."""
    try:
        sock.sendall(data)
    except BlockingIOError as error:
        raise PeerClosed("the peer stopped reading (send timed out)") from error
    except (BrokenPipeError, ConnectionResetError) as error:
        raise PeerClosed(f"the peer closed the connection ({error.strerror})") from error


class FrameReader:
    """Cuts frames out of whatever recv() returns: partial reads, several at once."""

    def __init__(self, sock: socket.socket, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.sock = sock
        self.max_frame = max_frame
        self._buffer = bytearray()
        #: Whole frames already cut out but not yet handed over (see unread()).
        self._pending: list[Frame] = []
        #: perf_counter_ns() just after the last recv() returned: when the data arrived.
        self.received_ns = 0

    def unread(self, frames: list[Frame]) -> None:
        """Hand `frames` out again, first, at the next receive() (the handshake reads
        only its HELLO; what came in the same write is the conversation's)."""
        self._pending = list(frames) + self._pending

    def buffered(self) -> int:
        """Bytes received but not yet cut into frames."""
        return len(self._buffer)

    def first_length(self) -> int | None:
        """The length prefix at the head of the buffer, once its 4 bytes are in."""
        if len(self._buffer) < LENGTH.size:
            return None
        length: int = LENGTH.unpack_from(self._buffer)[0]
        return length

    def fill(self) -> None:
        """One recv() into the buffer, cutting nothing (the handshake checks the
        first length against its own, smaller cap before it waits for a body)."""
        self._buffer += self._recv()

    def _recv(self) -> bytes:
        try:
            data = self.sock.recv(RECV_SIZE)
        except ConnectionResetError as error:
            raise PeerClosed("the peer reset the connection") from error
        self.received_ns = time.perf_counter_ns()
        if not data:
            if self._buffer:
                raise FrameError(
                    f"the peer closed the connection in the middle of a frame "
                    f"({len(self._buffer)} bytes of it received)"
                )
            raise PeerClosed("the peer closed the connection")
        return data

    def receive(self) -> list[Frame]:
        """One recv() (it blocks only if nothing is waiting), then every whole frame.

        Frames handed back with unread() come first, without a recv().
        A kernel receive timeout (SO_RCVTIMEO) that expires raises BlockingIOError."""
        if self._pending:
            frames, self._pending = self._pending, []
            return frames
        data = self._recv()
        if self._buffer:
            self._buffer += data
            return self.frames()
        frames, used = self._cut(data)  # the usual case: no copy into the buffer
        if used < len(data):
            self._buffer += data[used:]
        return frames

    def frames(self) -> list[Frame]:
        """Every whole frame in the buffer; a partial one stays for the next recv()."""
        frames, used = self._cut(bytes(self._buffer))
        del self._buffer[:used]
        if self._pending:
            frames, self._pending = self._pending + frames, []
        return frames

    def _cut(self, data: bytes) -> tuple[list[Frame], int]:
        """The whole frames at the start of `data`, and how many bytes they take.

        This runs for every message on both ends, inside the measured round
        trip, so it unpacks length, kind and sequence in one call and makes
        frames with tuple.__new__ (calling a NamedTuple goes through Python code)."""
        frames = []
        offset, size, max_frame = 0, len(data), self.max_frame
        unpack, new = _PREFIX.unpack_from, tuple.__new__
        prefix, body_at = LENGTH.size, _PREFIX.size
        # A frame has at least `body_at` bytes: fewer cannot hold one, nor a full prefix.
        while size - offset >= body_at:
            length, kind, sequence = unpack(data, offset)
            if length > max_frame or length < HEADER.size:
                raise FrameError(
                    f"a frame length of {length} bytes is outside 9..{max_frame} "
                    "(not an evbench link peer, or a corrupt stream)"
                )
            end = offset + prefix + length
            if size < end:
                break
            if kind not in KINDS:
                raise FrameError(f"unknown frame kind {kind} (not an evbench link peer?)")
            frames.append(new(Frame, (kind, sequence, data[offset + body_at : end])))
            offset = end
        return frames, offset


__all__ = ["DEFAULT_MAX_FRAME", "Frame", "FrameError", "pack"]
