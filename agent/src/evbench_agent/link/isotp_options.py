"""linux/can/isotp.h, packed by hand: the standard library has `socket.CAN_ISOTP`
but none of the ISO-TP socket options or their structs.

    struct can_isotp_options    { __u32 flags; __u32 frame_txtime; __u8 ext_address;
                                  __u8 txpad_content; __u8 rxpad_content;
                                  __u8 rx_ext_address; }                   12 bytes
    struct can_isotp_fc_options { __u8 bs; __u8 stmin; __u8 wftmax; }       3 bytes
    struct can_isotp_ll_options { __u8 mtu; __u8 tx_dl; __u8 tx_flags; }    3 bytes

in native byte order (the kernel reads them with copy_from_sockptr as laid out).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

#: SOL_CAN_BASE (100) + CAN_ISOTP (6).
SOL_CAN_ISOTP = 100 + 6
CAN_ISOTP_OPTS = 1
CAN_ISOTP_RECV_FC = 2
CAN_ISOTP_TX_STMIN = 3
CAN_ISOTP_RX_STMIN = 4
CAN_ISOTP_LL_OPTS = 5

# can_isotp_options.flags
CAN_ISOTP_LISTEN_MODE = 0x001
CAN_ISOTP_EXTEND_ADDR = 0x002
CAN_ISOTP_TX_PADDING = 0x004
CAN_ISOTP_RX_PADDING = 0x008
CAN_ISOTP_CHK_PAD_LEN = 0x010
CAN_ISOTP_CHK_PAD_DATA = 0x020
CAN_ISOTP_HALF_DUPLEX = 0x040
CAN_ISOTP_FORCE_TXSTMIN = 0x080
CAN_ISOTP_FORCE_RXSTMIN = 0x100
CAN_ISOTP_RX_EXT_ADDR = 0x200
CAN_ISOTP_WAIT_TX_DONE = 0x400

#: linux/can.h: struct can_frame and struct canfd_frame sizes, the ll_options `mtu`.
CAN_MTU = 16
CANFD_MTU = 72
#: canfd_frame.flags: bit rate switch for the data phase.
CANFD_BRS = 0x01
#: linux/can.h: an extended (29-bit) identifier is marked in the id's top bit.
CAN_EFF_FLAG = 0x80000000
CAN_SFF_MASK = 0x7FF
CAN_EFF_MASK = 0x1FFFFFFF
#: Linux's CAN_ISOTP_DEFAULT_PAD_CONTENT.
DEFAULT_PAD = 0xCC

_OPTIONS = struct.Struct("=IIBBBB")
_FC_OPTIONS = struct.Struct("=BBB")
_LL_OPTIONS = struct.Struct("=BBB")


@dataclass(frozen=True)
class IsotpOptions:
    flags: int = CAN_ISOTP_TX_PADDING
    frame_txtime_ns: int = 0
    ext_address: int = 0
    txpad_content: int = DEFAULT_PAD
    rxpad_content: int = DEFAULT_PAD
    rx_ext_address: int = 0

    def pack(self) -> bytes:
        return _OPTIONS.pack(
            self.flags,
            self.frame_txtime_ns,
            self.ext_address,
            self.txpad_content,
            self.rxpad_content,
            self.rx_ext_address,
        )

    @classmethod
    def unpack(cls, data: bytes) -> IsotpOptions:
        return cls(*_OPTIONS.unpack(data))


@dataclass(frozen=True)
class FlowControlOptions:
    block_size: int = 0
    stmin: int = 0
    wftmax: int = 0

    def pack(self) -> bytes:
        return _FC_OPTIONS.pack(self.block_size, self.stmin, self.wftmax)

    @classmethod
    def unpack(cls, data: bytes) -> FlowControlOptions:
        return cls(*_FC_OPTIONS.unpack(data))


@dataclass(frozen=True)
class LinkLayerOptions:
    """Classic CAN (mtu 16, tx_dl 8) or CAN FD (mtu 72, tx_dl 8..64, BRS)."""

    mtu: int = CAN_MTU
    tx_dl: int = 8
    tx_flags: int = 0

    def pack(self) -> bytes:
        return _LL_OPTIONS.pack(self.mtu, self.tx_dl, self.tx_flags)

    @classmethod
    def unpack(cls, data: bytes) -> LinkLayerOptions:
        return cls(*_LL_OPTIONS.unpack(data))

    @classmethod
    def fd(cls, data_length: int = 64, bit_rate_switch: bool = True) -> LinkLayerOptions:
        return cls(CANFD_MTU, data_length, CANFD_BRS if bit_rate_switch else 0)


def can_id(value: int, extended: bool = False) -> int:
    """The id as the socket address wants it: 29-bit ids carry CAN_EFF_FLAG."""
    if extended or value > CAN_SFF_MASK:
        if not 0 <= value <= CAN_EFF_MASK:
            raise ValueError(f"a CAN id is at most 29 bits, not {value:#x}")
        return value | CAN_EFF_FLAG
    if value < 0:
        raise ValueError(f"a CAN id is not negative: {value}")
    return value


__all__ = ["DEFAULT_PAD"]
