"""CAN FD frames (ISO 11898-1:2015): bits at the arbitration and at the data rate.

FD base format: SOF, 11-bit id, RRS, IDE, FDF, res, BRS at the nominal
(arbitration) rate; with BRS set the rate switches to the data rate for ESI,
DLC, the data, the stuff count (3-bit Gray code and parity), the CRC (17 bits
up to 16 data bytes, 21 above) and its fixed stuff bits (one before the stuff
count, then one after every 4 bits: 6 with CRC-17, 7 with CRC-21), and back to
the nominal rate at the CRC delimiter for ACK slot, ACK delimiter, EOF and the
interframe space. Dynamic stuffing (after five equal bits) covers SOF to the
end of the data, counted on the actual bits; the CRC field has only fixed stuff bits.
"""

from __future__ import annotations

from typing import NamedTuple

from evbench_agent.buses.can_classic import bits_of, stuff_count, worst_stuff

#: The data lengths a DLC can say; a frame is padded up to the next one.
LENGTHS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64)
#: CRC delimiter, ACK slot, ACK delimiter, EOF, interframe space (nominal rate).
TAIL_BITS = 1 + 1 + 1 + 7 + 3
#: Stuff count: 3-bit Gray-coded count of stuff bits modulo 8, and a parity bit.
STUFF_COUNT_BITS = 4


class FdFrameBits(NamedTuple):
    """One FD frame: bits at the nominal rate and at the data rate, stuffed exactly
    (`*_stuff`) and in the worst case."""

    nominal: int
    data: int
    nominal_stuff: int
    data_stuff: int
    worst_nominal_stuff: int
    worst_data_stuff: int

    def seconds(self, nominal_bps: int, data_bps: int, worst: bool = False) -> float:
        if worst:
            nominal = self.nominal + self.worst_nominal_stuff
            data = self.data + self.worst_data_stuff
        else:
            nominal, data = self.nominal + self.nominal_stuff, self.data + self.data_stuff
        return nominal / nominal_bps + data / data_bps


def padded_length(length: int) -> int:
    """The frame's data length: the smallest DLC length that holds `length` bytes."""
    for size in LENGTHS:
        if size >= length:
            return size
    raise ValueError(f"a CAN FD frame carries at most 64 bytes, not {length}")


def dlc(length: int) -> int:
    return LENGTHS.index(padded_length(length))


def crc_bits(length: int) -> int:
    return 17 if length <= 16 else 21


def fixed_stuff_bits(length: int) -> int:
    return 6 if crc_bits(length) == 17 else 7


def frame_bits(data: bytes, can_id: int = 0x7E0, brs: bool = True) -> FdFrameBits:
    """The bits of one FD base-format frame carrying `data` (already padded to a
    DLC length; ISO-TP pads with its pad byte)."""
    length = len(data)
    if length != padded_length(length):
        raise ValueError(f"{length} bytes is not a CAN FD data length; pad to {LENGTHS}")
    # SOF, id, RRS, IDE, FDF (recessive), res, BRS
    arbitration = [0, *bits_of(can_id, 11), 0, 0, 1, 0, 1 if brs else 0]
    data_phase = [0, *bits_of(dlc(length), 4)]  # ESI (error active), DLC
    for byte in data:
        data_phase.extend(bits_of(byte, 8))
    # Stuff bits of the arbitration part and of the whole dynamic region, so a run
    # that spans the rate switch is counted once.
    nominal_stuff = stuff_count(arbitration)
    data_stuff = stuff_count(arbitration + data_phase) - nominal_stuff
    worst_nominal = worst_stuff(len(arbitration))
    worst_total = worst_stuff(len(arbitration) + len(data_phase))
    crc_field = STUFF_COUNT_BITS + crc_bits(length) + fixed_stuff_bits(length)
    return FdFrameBits(
        nominal=len(arbitration) + TAIL_BITS,
        data=len(data_phase) + crc_field,
        nominal_stuff=nominal_stuff,
        data_stuff=data_stuff,
        worst_nominal_stuff=worst_nominal,
        worst_data_stuff=worst_total - worst_nominal,
    )
