"""Classic CAN data frames (ISO 11898-1): their bits, exact bit stuffing and the worst case.

A data frame is SOF, the arbitration field (11-bit id, RTR; or 11-bit base id,
SRR, IDE, 18-bit extension, RTR), the control field, 0..8 data bytes, a 15-bit
CRC, and the fixed-form tail: CRC delimiter, ACK slot, ACK delimiter, 7 bits
of EOF and 3 of interframe space. Bit stuffing (a complement bit after five
equal bits) applies from SOF to the end of the CRC; payloads are deterministic,
so the stuff bits are counted on the frame's actual bits.
"""

from __future__ import annotations

from typing import NamedTuple

#: CRC delimiter, ACK slot, ACK delimiter, end of frame, interframe space.
TAIL_BITS = 1 + 1 + 1 + 7 + 3
#: The CRC-15 generator x^15+x^14+x^10+x^8+x^7+x^4+x^3+1 (without the x^15 term).
CRC15_POLY = 0x4599
MAX_DATA = 8


class FrameBits(NamedTuple):
    """One frame on the wire: bits before stuffing, stuff bits, and the worst case."""

    unstuffed: int
    stuff: int
    worst_stuff: int

    @property
    def total(self) -> int:
        return self.unstuffed + self.stuff

    @property
    def worst_total(self) -> int:
        return self.unstuffed + self.worst_stuff


def bits_of(value: int, width: int) -> list[int]:
    """`value` as `width` bits, most significant first (the order CAN sends them)."""
    return [(value >> shift) & 1 for shift in range(width - 1, -1, -1)]


def crc15(bits: list[int]) -> int:
    """The CAN CRC-15 of a bit sequence (SOF to the end of the data field)."""
    crc = 0
    for bit in bits:
        feedback = bit ^ ((crc >> 14) & 1)
        crc = (crc << 1) & 0x7FFF
        if feedback:
            crc ^= CRC15_POLY
    return crc


def stuff_count(bits: list[int]) -> int:
    """Stuff bits a transmitter inserts in `bits`: one after every run of five equal
    bits, and the stuff bit itself starts the next run."""
    count, run, last = 0, 0, -1
    for bit in bits:
        if bit == last:
            run += 1
        else:
            last, run = bit, 1
        if run == 5:
            count += 1
            last, run = 1 - bit, 1  # the stuff bit: the complement, a run of one
    return count


def worst_stuff(stuffed_region_bits: int) -> int:
    """The most stuff bits a region of n bits can need: the first after 5 bits,
    then one every 4 (each stuff bit starts the next run)."""
    return max(0, (stuffed_region_bits - 1) // 4)


def header_bits(can_id: int, extended: bool, length: int) -> list[int]:
    """SOF, arbitration and control fields of a data frame carrying `length` bytes."""
    if extended:
        base, extension = (can_id >> 18) & 0x7FF, can_id & 0x3FFFF
        # SOF, base id, SRR (recessive), IDE (recessive), extension, RTR, r1, r0, DLC
        return [0, *bits_of(base, 11), 1, 1, *bits_of(extension, 18), 0, 0, 0, *bits_of(length, 4)]
    # SOF, id, RTR (dominant: a data frame), IDE (dominant), r0, DLC
    return [0, *bits_of(can_id, 11), 0, 0, 0, *bits_of(length, 4)]


def frame_bits(data: bytes, can_id: int = 0x7E0, extended: bool = False) -> FrameBits:
    """The bits of one data frame carrying `data`, stuffed exactly and in the worst case."""
    if len(data) > MAX_DATA:
        raise ValueError(f"a classic CAN frame carries at most 8 bytes, not {len(data)}")
    bits = header_bits(can_id, extended, len(data))
    for byte in data:
        bits.extend(bits_of(byte, 8))
    bits.extend(bits_of(crc15(bits), 15))
    return FrameBits(len(bits) + TAIL_BITS, stuff_count(bits), worst_stuff(len(bits)))
