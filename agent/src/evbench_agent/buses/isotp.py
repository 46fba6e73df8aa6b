"""ISO-TP (ISO 15765-2) segmentation: the CAN frames one message becomes.

A message of up to 7 bytes is a Single Frame (PCI byte 0x0L); on CAN FD up to
62 bytes go in one Single Frame with the escape form (0x00, length). Longer
messages are a First Frame (0x1L LL and 6 data bytes on classic CAN, 62 on FD
with 64-byte frames; 0x10 0x00 and a 32-bit length above 4095 bytes) followed by
Consecutive Frames (0x2N, N counting 1..15, 0, 1..., and 7 or 63 data bytes).
The receiver answers the First Frame with a Flow Control frame (0x30, block
size, STmin), and again after every `block_size` Consecutive Frames when the
block size is not 0. Frames are padded as Linux's can-isotp pads them: with
padding on, to at least 8 bytes and the next CAN FD length; with it off, only
CAN FD frames over 8 bytes (mandatory) are padded.
"""

from __future__ import annotations

from typing import NamedTuple

from evbench_agent.buses import can_fd

#: Linux's CAN_ISOTP_DEFAULT_PAD_CONTENT.
PAD_BYTE = 0xCC
#: The largest length a First Frame's 12-bit length field can say.
MAX_SHORT_LENGTH = 4095
FLOW_CONTROL_CTS = bytes((0x30,))


class Segmented(NamedTuple):
    """The frames one message takes: the sender's and the receiver's flow control."""

    frames: list[bytes]
    flow_control: list[bytes]


def _pad(frame: bytes, padding: bool, pad_byte: int) -> bytes:
    # A frame never exceeds the link's frame length, itself a CAN FD length, so
    # the next CAN FD length is never beyond it.
    length = len(frame)
    if padding:
        target = max(8, can_fd.padded_length(length))
    elif length > 8:
        target = can_fd.padded_length(length)
    else:
        return frame
    return frame + bytes([pad_byte]) * (target - length)


def single_frame_capacity(frame_length: int) -> int:
    return 7 if frame_length == 8 else frame_length - 2


def segment(
    message: bytes,
    frame_length: int = 8,
    padding: bool = True,
    block_size: int = 0,
    pad_byte: int = PAD_BYTE,
) -> Segmented:
    """The frames of `message` over ISO-TP with `frame_length`-byte CAN frames (8: classic)."""
    if frame_length not in can_fd.LENGTHS or frame_length < 8:
        raise ValueError(f"an ISO-TP frame length is 8..64, a CAN FD length; not {frame_length}")

    def pad(frame: bytes) -> bytes:
        return _pad(frame, padding, pad_byte)

    size = len(message)
    if size <= 7:
        return Segmented([pad(bytes((size,)) + message)], [])
    if size <= single_frame_capacity(frame_length):
        return Segmented([pad(bytes((0x00, size)) + message)], [])
    if size <= MAX_SHORT_LENGTH:
        pci = bytes((0x10 | (size >> 8), size & 0xFF))
    else:
        pci = bytes((0x10, 0x00)) + size.to_bytes(4, "big")
    first = frame_length - len(pci)
    frames = [pad(pci + message[:first])]
    per_frame = frame_length - 1
    sequence = 1
    for offset in range(first, size, per_frame):
        frames.append(pad(bytes((0x20 | sequence,)) + message[offset : offset + per_frame]))
        sequence = (sequence + 1) & 0x0F
    consecutive = len(frames) - 1
    blocks = 1 if block_size == 0 else -(-consecutive // block_size)
    control = pad(bytes((0x30, block_size, 0)))
    return Segmented(frames, [control] * blocks)


def frame_count(size: int, frame_length: int = 8) -> int:
    """Frames (Single, or First and Consecutive) of a `size`-byte message; no flow control."""
    return len(segment(bytes(size), frame_length).frames)
