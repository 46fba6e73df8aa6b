"""The link over ISO-TP on SocketCAN: `isotp://can0?tx=0x7E0&rx=0x7E8&fd=1&dlen=64`.

The kernel's `can-isotp` module segments each link frame (length, kind,
sequence, body: one ISO-TP PDU) into CAN or CAN FD frames and reassembles it
on the other end; one send() is one message, one recv() one message. Before
it opens anything the port checks, from sysfs, that the interface exists, is
CAN, is up and (for fd=1) takes CAN FD frames, so each problem is one line
with its fix. The options go in with the structs of isotp_options.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from evbench_agent.link import isotp_options as opts
from evbench_agent.link.framing import HEADER, KINDS, LENGTH, Frame, FrameError, pack
from evbench_core.errors import UserError

#: The largest PDU every can-isotp accepts (older kernels' MAX_MSG_LENGTH; newer
#: ones default to 8300): a longer message is refused before it is sent.
MAX_PDU = 8200
#: include/uapi/linux/if_arp.h ARPHRD_CAN; include/uapi/linux/if.h IFF_UP.
ARPHRD_CAN = 280
IFF_UP = 0x1
SYS_NET = Path("/sys/class/net")
#: How long a send waits for can-isotp to finish the socket's previous PDU (it sends
#: one at a time): a bus slower than the rate holds the sender up (send_lateness
#: shows it) instead of failing the run; a PDU stuck this long is one error.
SEND_TIMEOUT_S = 10.0
_OPTIONS = {"tx", "rx", "fd", "dlen", "bs", "stmin", "ext", "padding"}


@dataclass(frozen=True)
class IsotpAddress:
    interface: str
    tx_id: int
    rx_id: int
    fd: bool = False
    data_length: int = 8
    block_size: int = 0
    stmin: int = 0
    extended: bool = False
    padding: bool = True

    def swapped(self) -> IsotpAddress:
        """The other end's address: it sends on our rx id and listens on our tx id."""
        return IsotpAddress(
            self.interface, self.rx_id, self.tx_id, self.fd, self.data_length,
            self.block_size, self.stmin, self.extended, self.padding,
        )  # fmt: skip


def _number(query: dict[str, list[str]], name: str, default: int, url: str) -> int:
    try:
        return int(query.get(name, [str(default)])[-1], 0)
    except ValueError:
        raise UserError(f"{name}= in {url!r} is not a number") from None


def parse(url: str) -> IsotpAddress:
    parts = urlsplit(url)
    if parts.scheme != "isotp" or not parts.netloc or parts.path not in ("", "/"):
        raise UserError(f"not an ISO-TP address: {url!r}", "write isotp://can0?tx=0x7E0&rx=0x7E8")
    query = parse_qs(parts.query)
    unknown = set(query) - _OPTIONS
    if unknown:
        raise UserError(
            f"unknown ISO-TP option(s) {', '.join(sorted(unknown))} in {url!r}",
            f"known: {', '.join(sorted(_OPTIONS))}",
        )
    if "tx" not in query or "rx" not in query:
        raise UserError(f"{url!r} needs tx= and rx= CAN ids", "e.g. tx=0x7E0&rx=0x7E8")
    fd = bool(_number(query, "fd", 0, url))
    address = IsotpAddress(
        interface=parts.netloc,
        tx_id=_number(query, "tx", 0, url),
        rx_id=_number(query, "rx", 0, url),
        fd=fd,
        data_length=_number(query, "dlen", 64 if fd else 8, url),
        block_size=_number(query, "bs", 0, url),
        stmin=_number(query, "stmin", 0, url),
        extended=bool(_number(query, "ext", 0, url)),
        padding=bool(_number(query, "padding", 1, url)),
    )
    limit = opts.CAN_EFF_MASK if address.extended else opts.CAN_SFF_MASK
    for name, value in (("tx", address.tx_id), ("rx", address.rx_id)):
        if not 0 <= value <= limit:
            raise UserError(
                f"{name}={value:#x} does not fit a {29 if address.extended else 11}-bit CAN id",
                "use ext=1 for 29-bit ids",
            )
    if address.tx_id == address.rx_id:
        raise UserError(f"tx and rx are the same CAN id ({address.tx_id:#x}) in {url!r}")
    allowed = (8, 12, 16, 20, 24, 32, 48, 64) if fd else (8,)
    if address.data_length not in allowed:
        raise UserError(
            f"dlen={address.data_length} is not a {'CAN FD' if fd else 'classic CAN'} length",
            f"choose one of {', '.join(map(str, allowed))}",
        )
    if not (0 <= address.block_size <= 255 and 0 <= address.stmin <= 255):
        raise UserError("bs= and stmin= are bytes (0..255)")
    return address


def check_interface(address: IsotpAddress, sys_net: Path = SYS_NET) -> None:
    """One-line UserErrors for an interface that is missing, not CAN, down, or not FD."""
    name = address.interface
    where = sys_net / name
    if "/" in name or not where.is_dir():
        raise UserError(
            f"no network interface {name!r}",
            f"list them with 'ip -details link show type can'; for a test bus: "
            f"modprobe vcan && ip link add {name} type vcan",
        )
    if int((where / "type").read_text()) != ARPHRD_CAN:
        raise UserError(f"{name!r} is not a CAN interface", "ip -details link show type can")
    if not int((where / "flags").read_text(), 16) & IFF_UP:
        raise UserError(
            f"CAN interface {name!r} is down",
            f"ip link set {name} up type can bitrate 500000"
            " (and dbitrate 2000000 fd on for CAN FD)",
        )
    if address.fd and int((where / "mtu").read_text()) < opts.CANFD_MTU:
        raise UserError(
            f"{name!r} does not take CAN FD frames (MTU below {opts.CANFD_MTU})",
            f"ip link set {name} down; ip link set {name} up type can bitrate 500000 "
            f"dbitrate 2000000 fd on (vcan: ip link set {name} mtu 72)",
        )


def open_socket() -> socket.socket:
    """An ISO-TP socket; a kernel without SocketCAN or can-isotp is a one-line UserError."""
    family = getattr(socket, "AF_CAN", None)
    protocol = getattr(socket, "CAN_ISOTP", None)
    if family is None or protocol is None:
        raise UserError("this Python has no SocketCAN ISO-TP support (Linux only)")
    try:
        return socket.socket(family, socket.SOCK_DGRAM, protocol)
    except OSError as error:
        if error.errno == errno.EAFNOSUPPORT:
            raise UserError(
                "this kernel has no SocketCAN (address family AF_CAN not supported)",
                "modprobe can can-isotp (CONFIG_CAN, CONFIG_CAN_ISOTP)",
            ) from error
        if error.errno == errno.EPROTONOSUPPORT:
            raise UserError(
                "the kernel's can-isotp module is not loaded", "modprobe can-isotp"
            ) from error
        raise UserError(f"cannot open an ISO-TP socket: {error.strerror}") from error


def configure(sock: socket.socket, address: IsotpAddress) -> None:
    flags = opts.CAN_ISOTP_TX_PADDING if address.padding else 0
    sock.setsockopt(opts.SOL_CAN_ISOTP, opts.CAN_ISOTP_OPTS, opts.IsotpOptions(flags).pack())
    fc = opts.FlowControlOptions(address.block_size, address.stmin)
    sock.setsockopt(opts.SOL_CAN_ISOTP, opts.CAN_ISOTP_RECV_FC, fc.pack())
    if address.fd:
        sock.setsockopt(
            opts.SOL_CAN_ISOTP,
            opts.CAN_ISOTP_LL_OPTS,
            opts.LinkLayerOptions.fd(address.data_length).pack(),
        )


class IsotpPort:
    """One end of the link over ISO-TP: one send is one frame, one recv one frame."""

    def __init__(self, address: IsotpAddress, sys_net: Path = SYS_NET) -> None:
        check_interface(address, sys_net)
        sock = open_socket()
        try:
            configure(sock, address)
            sock.bind(
                (
                    address.interface,
                    opts.can_id(address.rx_id, address.extended),
                    opts.can_id(address.tx_id, address.extended),
                )
            )
        except OSError as error:
            sock.close()
            raise UserError(
                f"cannot bind ISO-TP on {address.interface}: {error.strerror}"
            ) from error
        self.address = address
        self.sock = sock

    def send_packed(self, data: bytes) -> None:
        """BusPort's: a frame packed by framing.pack."""
        self.send(data)

    def send(self, frame: bytes) -> None:
        """Send one packed link frame (framing.pack), a whole ISO-TP PDU."""
        if len(frame) > MAX_PDU:
            raise UserError(
                f"a {len(frame)}-byte frame is more than ISO-TP carries here ({MAX_PDU} bytes)",
                "use a smaller profile, or TCP",
            )
        # Not the last receive's timeout (often a few ms to the next tick), which would
        # fail a send that only waits for the previous message to finish going out.
        self.sock.settimeout(SEND_TIMEOUT_S)
        try:
            self.sock.send(frame)
        except TimeoutError as error:
            raise UserError(
                f"ISO-TP on {self.address.interface}: the previous message was still "
                f"going out after {SEND_TIMEOUT_S:g} s",
                f"check the bus: ip -details -statistics link show {self.address.interface}",
            ) from error
        except OSError as error:
            raise self._user_error(error) from error

    def _user_error(self, error: OSError) -> UserError:
        """The kernel's errors as one line; can-isotp sends in the background, so
        a send's failure (no flow control: ECOMM) may come back at the next recv().

        The errors of one transfer (linux net/can/isotp.c: a consecutive frame out
        of sequence, bad padding, no flow control) are FrameErrors: one message lost,
        which a responder logs and goes on from; a client's handshake still ends on them."""
        if error.errno == errno.ENETDOWN:
            return UserError(f"CAN interface {self.address.interface!r} went down")
        if error.errno in (errno.EILSEQ, errno.EBADMSG):
            return FrameError(
                f"a damaged ISO-TP transfer on {self.address.interface}: {error.strerror}"
            )
        if error.errno == errno.ECOMM:
            return FrameError(
                f"no ISO-TP flow control on {self.address.interface} from id "
                f"{self.address.rx_id:#x}: nobody listens on id {self.address.tx_id:#x}",
                "check the peer's ids: its rx must be our tx and its tx our rx",
            )
        return UserError(f"ISO-TP on {self.address.interface} failed: {error.strerror}")

    def receive(self, timeout_s: float) -> Frame | None:
        """The next frame, or None when none came within `timeout_s` (a lost message,
        or no flow control from a peer on other ids: the kernel times out)."""
        self.sock.settimeout(timeout_s)
        try:
            data = self.sock.recv(MAX_PDU + 1)
        except TimeoutError:
            return None
        except OSError as error:
            raise self._user_error(error) from error
        return unpack(data)

    def send_frame(self, kind: int, sequence: int, body: bytes = b"") -> None:
        self.send(pack(kind, sequence, body))

    def receive_frames(self, timeout_s: float) -> list[Frame]:
        """Like UartPort.receive: the frames that came within `timeout_s` (at most one)."""
        frame = self.receive(timeout_s)
        return [] if frame is None else [frame]

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> IsotpPort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def unpack(data: bytes) -> Frame:
    """One ISO-TP PDU as a link frame; anything else is a FrameError."""
    if len(data) < LENGTH.size + HEADER.size:
        raise FrameError(f"an ISO-TP message of {len(data)} bytes is too short for a link frame")
    (length,) = LENGTH.unpack_from(data)
    if length != len(data) - LENGTH.size:
        raise FrameError(f"a link frame says {length} bytes but the PDU has {len(data) - 4}")
    kind, sequence = HEADER.unpack_from(data, LENGTH.size)
    if kind not in KINDS:
        raise FrameError(f"unknown frame kind {kind}")
    return Frame(kind, sequence, data[LENGTH.size + HEADER.size :])


__all__ = ["MAX_PDU", "IsotpAddress", "parse", "unpack"]
