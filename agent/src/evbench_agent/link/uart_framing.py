"""evbench link frames on a UART: a sync word, header CRC and frame CRC, so the
receiver resynchronises after line noise, dropped or duplicated bytes.

On the line each link frame (docs/link.md: 4-byte length, kind, 8-byte
sequence, body) goes as

    EB 90 | length kind sequence (13 bytes) | CRC-16 of those 13 | body | CRC-32 of header and body

(CRC-16/XMODEM from binascii.crc_hqx, CRC-32 from zlib, both little-endian;
8 bytes around every frame). The receiver looks for the sync word, checks the
header CRC before it trusts the length (so a corrupt length never makes it
wait for bytes that are not coming), then waits for the body and checks the
CRC-32 (a frame whose sender stopped after its header is dropped by the port
once the line has stayed silent: uart_port.STALE_PART_S). Whatever fails is
dropped one byte at a time until the next sync word: a damaged frame is lost
(the link counts it lost or late), the frames after it are found again.
Nothing is ever reassembled from two frames.
"""

from __future__ import annotations

import binascii
import struct
import zlib

from evbench_agent.link.framing import DEFAULT_MAX_FRAME, HEADER, KINDS, Frame

SYNC = b"\xeb\x90"
#: Length, kind and sequence: the link's own 13-byte frame header.
_HEADER = struct.Struct("<IBQ")
_CRC16 = struct.Struct("<H")
_CRC32 = struct.Struct("<I")
#: Bytes a UART frame adds to the link frame: sync word, header CRC, frame CRC.
OVERHEAD = len(SYNC) + _CRC16.size + _CRC32.size
_BEFORE_BODY = len(SYNC) + _HEADER.size + _CRC16.size


def encode(kind: int, sequence: int, body: bytes = b"") -> bytes:
    """One link frame as it goes on the UART, ready for one write."""
    header = _HEADER.pack(HEADER.size + len(body), kind, sequence)
    return (
        SYNC
        + header
        + _CRC16.pack(binascii.crc_hqx(header, 0))
        + body
        + _CRC32.pack(zlib.crc32(body, zlib.crc32(header)))
    )


class Deframer:
    """Cuts link frames out of UART bytes, skipping what is not a whole, intact frame."""

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray()
        #: Bytes dropped while looking for a frame (noise, damaged frames).
        self.skipped_bytes = 0
        #: Frames whose header or frame CRC failed.
        self.bad_frames = 0

    def buffered(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Frame]:
        """Add received bytes; return every whole, intact frame now complete."""
        self._buffer += data
        frames: list[Frame] = []
        buffer = self._buffer
        while True:
            start = buffer.find(SYNC)
            if start < 0:
                # Keep a last byte that may be the first half of a sync word.
                keep = 1 if buffer[-1:] == SYNC[:1] else 0
                self._skip(len(buffer) - keep)
                return frames
            self._skip(start)
            if len(buffer) < _BEFORE_BODY:
                return frames
            header = bytes(buffer[len(SYNC) : len(SYNC) + _HEADER.size])
            (crc16,) = _CRC16.unpack_from(buffer, len(SYNC) + _HEADER.size)
            length, kind, sequence = _HEADER.unpack(header)
            if (
                crc16 != binascii.crc_hqx(header, 0)
                or not HEADER.size <= length <= self.max_frame
                or kind not in KINDS
            ):
                self._drop_one()
                continue
            end = _BEFORE_BODY + length - HEADER.size
            if len(buffer) < end + _CRC32.size:
                return frames
            body = bytes(buffer[_BEFORE_BODY:end])
            (crc32,) = _CRC32.unpack_from(buffer, end)
            if crc32 != zlib.crc32(body, zlib.crc32(header)):
                self._drop_one()
                continue
            frames.append(Frame(kind, sequence, body))
            del buffer[: end + _CRC32.size]

    def drop_part(self) -> list[Frame]:
        """Drop the part of a frame held (its sender stopped mid-frame); return the
        whole frames found in the bytes held after its sync word."""
        if self._buffer.startswith(SYNC):
            self.bad_frames += 1
        self._skip(1)
        return self.feed(b"")

    def _skip(self, count: int) -> None:
        if count:
            del self._buffer[:count]
            self.skipped_bytes += count

    def _drop_one(self) -> None:
        """A damaged frame: drop its sync word's first byte and look again."""
        self.bad_frames += 1
        self._skip(1)
