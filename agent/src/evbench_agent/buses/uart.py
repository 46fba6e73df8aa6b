"""A UART (or RS-485) line: asynchronous characters, e.g. 8N1.

Each byte is a start bit, 8 data bits, an optional parity bit and 1 or 2
stop bits: 10 bits per byte in 8N1. The line is full duplex (RS-232) or a
shared pair (RS-485 half duplex); budget.py says which it assumes.
"""

from __future__ import annotations

#: Rates a UART on an AM62x is commonly run at (bit/s).
COMMON_RATES = (9600, 19200, 57600, 115200, 230400, 460800, 921600, 3000000)


def bits_per_byte(data_bits: int = 8, parity: bool = False, stop_bits: int = 1) -> int:
    return 1 + data_bits + (1 if parity else 0) + stop_bits


def seconds(
    size: int, baud: int, data_bits: int = 8, parity: bool = False, stop_bits: int = 1
) -> float:
    """Time on the line for `size` bytes sent back to back."""
    return size * bits_per_byte(data_bits, parity, stop_bits) / baud
