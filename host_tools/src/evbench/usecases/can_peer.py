"""The link responder on the lab PC's CAN adapter, through python-can: `pycan://INTERFACE/CHANNEL`.

`pycan://socketcan/can0?tx=0x7E8&rx=0x7E0&fd=1&dlen=64`, `pycan://pcan/PCAN_USBBUS1?...`,
`pycan://kvaser/0?...`, `pycan://virtual/demo?...`: INTERFACE is a python-can interface
name, CHANNEL that interface's channel (a path after the second slash:
`pycan://slcan//dev/ttyACM0`). The ISO-TP options are those of the agent's `isotp://`
URL and are checked by its parser (tx, rx, fd, dlen, bs, stmin, ext, padding), plus
`bitrate` and `dbitrate`, handed to adapters that set their own bit rate (PCAN,
Kvaser; SocketCAN takes its rates from `ip link`).

Each link frame is one ISO-TP PDU, segmented and reassembled by the `can-isotp`
package (userspace ISO 15765-2 over a python-can bus), as the kernel's can-isotp
does on the board: the board's `isotp://` client and this responder interoperate.
python-can and can-isotp are the host's optional extra `evbench[can]`; they are
imported only when a pycan:// port opens. Each adapter's library raises its own
exception types, so opening one turns any of them into one UserError naming the
interface, the channel and the cause.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from evbench_agent.link import bus_responder, isotp_options, isotp_port
from evbench_agent.link.framing import DEFAULT_MAX_FRAME, Frame, FrameError, pack
from evbench_core.errors import UserError

log = logging.getLogger(__name__)

SCHEME = "pycan"
#: The options only this URL has; the ISO-TP ones are isotp_port's.
_RATE_OPTIONS = ("bitrate", "dbitrate")
#: How long one CAN frame's send may block (a full adapter queue, a controller in bus-off).
SEND_TIMEOUT_S = 1.0
#: The ISO-TP stack's read granularity (its thread wakes at least this often).
READ_TIMEOUT_S = 0.05
#: Replies waiting for the bus at most: beyond, the bus is not moving and a reply is dropped.
MAX_QUEUED = 64
#: ISO 15765-2 N_Bs and N_Cr: a missing flow control or consecutive frame ends a transfer.
TRANSFER_TIMEOUT_MS = 1000
EXAMPLE = "pycan://socketcan/can0?tx=0x7E8&rx=0x7E0&fd=1&dlen=64"
INSTALL_HINT = "pip install 'evbench[can]' (python-can and can-isotp)"


@dataclass(frozen=True)
class PycanAddress:
    """A pycan:// URL: the python-can interface and channel, the ISO-TP options, the rates."""

    url: str
    interface: str
    channel: str | int
    isotp: isotp_port.IsotpAddress
    bitrate: int | None = None
    data_bitrate: int | None = None


def _libraries() -> tuple[ModuleType, ModuleType]:
    """python-can and can-isotp, imported here only (the evbench[can] extra)."""
    try:
        import can
        import isotp
    except ImportError as error:
        raise UserError(
            f"pycan:// needs python-can and can-isotp ({error.name} is not installed)",
            INSTALL_HINT,
        ) from error
    return can, isotp


def _rate(query: dict[str, list[str]], name: str, url: str) -> int | None:
    if name not in query:
        return None
    text = query[name][-1]
    if not text.isdigit() or not 0 < int(text) <= 15_000_000:
        raise UserError(
            f"{name}={text} in {url!r} is not a bit rate (bits per second)",
            "e.g. bitrate=500000&dbitrate=2000000",
        )
    return int(text)


def parse(url: str) -> PycanAddress:
    """The address `url` names; one UserError naming the problem otherwise."""
    if not isinstance(url, str) or not url.startswith(f"{SCHEME}://"):
        raise UserError(f"not a python-can address: {url!r}", f"write {EXAMPLE}")
    parts = urlsplit(url)
    interface, channel = parts.netloc, unquote(parts.path[1:])
    if not interface or not channel:
        raise UserError(
            f"{url!r} needs an interface and a channel: pycan://INTERFACE/CHANNEL",
            f"e.g. {EXAMPLE} or pycan://pcan/PCAN_USBBUS1?tx=0x7E8&rx=0x7E0",
        )
    query = parse_qs(parts.query, keep_blank_values=True)
    bitrate, data_bitrate = (_rate(query, name, url) for name in _RATE_OPTIONS)
    for name in _RATE_OPTIONS:
        query.pop(name, None)
    # The agent's isotp:// parser checks the ISO-TP options: one set of rules for both.
    inner = f"isotp://{SCHEME}?{urlencode(query, doseq=True)}"
    try:
        address = isotp_port.parse(inner)
    except UserError as error:
        message = str(error).replace(repr(inner), repr(url))
        raise UserError(message, error.hint) from None
    return PycanAddress(
        url=url,
        interface=interface,
        channel=int(channel) if channel.isdigit() else channel,
        isotp=address,
        bitrate=bitrate,
        data_bitrate=data_bitrate,
    )


def _check_interface(can: ModuleType, address: PycanAddress) -> None:
    known = sorted(can.interfaces.VALID_INTERFACES)
    if address.interface not in known:
        raise UserError(
            f"python-can has no interface {address.interface!r} (in {address.url!r})",
            f"its interfaces here: {', '.join(known)}",
        )


def open_bus(can: ModuleType, address: PycanAddress) -> Any:
    """The python-can bus, filtered to the id we listen on; any failure is one UserError."""
    _check_interface(can, address)
    options = address.isotp
    mask = 0x1FFFFFFF if options.extended else 0x7FF
    settings: dict[str, Any] = {
        "can_filters": [{"can_id": options.rx_id, "can_mask": mask, "extended": options.extended}],
    }
    if options.fd:
        settings["fd"] = True
    if address.bitrate is not None:
        settings["bitrate"] = address.bitrate
    if address.data_bitrate is not None:
        settings["data_bitrate"] = address.data_bitrate
    try:
        # ignore_config: the URL is the whole configuration (no ~/.canrc, no CAN_* variables).
        return can.Bus(
            channel=address.channel, interface=address.interface, ignore_config=True, **settings
        )
    except Exception as error:  # each adapter's library raises its own types
        raise UserError(
            f"cannot open CAN channel {address.channel!r} on python-can interface "
            f"{address.interface!r}: {type(error).__name__}: {error}",
            _adapter_hint(address),
        ) from error


def _adapter_hint(address: PycanAddress) -> str:
    if address.interface == "socketcan":
        return (
            f"a SocketCAN interface must exist and be up: ip link set {address.channel} "
            "up type can bitrate 500000 (and dbitrate 2000000 fd on for CAN FD)"
        )
    return (
        f"is the adapter plugged in and its driver/library for {address.interface!r} "
        "installed? python -m can.logger -i INTERFACE -c CHANNEL checks it alone"
    )


class PythonCanPort:
    """One end of the link over ISO-TP on a python-can bus (bus_responder.BusPort).

    can-isotp runs the ISO-TP state machine in its own threads; the CAN frames go
    through our read and write functions, so an adapter that fails mid-run is
    remembered there and reported by the next receive, not lost in a thread.
    A transfer that fails (cut short, no flow control) is logged by can-isotp
    under this module's logger (`evbench.usecases.can_peer.isotp`) and dropped."""

    def __init__(self, address: PycanAddress) -> None:
        can, isotp = _libraries()
        self.address = address
        self._can = can
        self._can_message = isotp.CanMessage
        self._failure: BaseException | None = None
        self._closed = False
        self.bus = open_bus(can, address)
        options = address.isotp
        modes = isotp.AddressingMode
        mode = modes.Normal_29bits if options.extended else modes.Normal_11bits
        params = {
            "stmin": options.stmin,
            "blocksize": options.block_size,
            "tx_padding": isotp_options.DEFAULT_PAD if options.padding else None,
            "tx_data_length": options.data_length,
            "can_fd": options.fd,
            "bitrate_switch": options.fd,
            "max_frame_size": isotp_port.MAX_PDU,
            "rx_flowcontrol_timeout": TRANSFER_TIMEOUT_MS,
            "rx_consecutive_frame_timeout": TRANSFER_TIMEOUT_MS,
            "logger_name": f"{__name__}.isotp",
        }
        try:
            self.stack = isotp.TransportLayer(
                rxfn=self._read,
                txfn=self._write,
                address=isotp.Address(mode, txid=options.tx_id, rxid=options.rx_id),
                params=params,
                read_timeout=READ_TIMEOUT_S,
            )
            self.stack.start()
        except BaseException:
            self.bus.shutdown()
            raise

    def _read(self, timeout_s: float) -> Any:
        """A CAN frame for the ISO-TP stack (its isotp.CanMessage), or None."""
        if self._failure is not None:
            return None
        try:
            message = self.bus.recv(timeout_s)
        except Exception as error:  # the adapter's library's own types
            self._failure = error
            return None
        if message is None or message.is_error_frame or message.is_remote_frame:
            return None
        return self._can_message(
            arbitration_id=message.arbitration_id,
            data=message.data,
            extended_id=message.is_extended_id,
            is_fd=message.is_fd,
            bitrate_switch=message.bitrate_switch,
        )

    def _write(self, frame: Any) -> None:
        message = self._can.Message(
            arbitration_id=frame.arbitration_id,
            data=frame.data,
            is_extended_id=frame.is_extended_id,
            is_fd=frame.is_fd,
            bitrate_switch=frame.bitrate_switch,
        )
        try:
            self.bus.send(message, timeout=SEND_TIMEOUT_S)
        except Exception as error:  # the adapter's library's own types
            self._failure = error

    def _check(self) -> None:
        if self._failure is not None:
            raise UserError(
                f"the CAN adapter ({self.address.interface} {self.address.channel}) failed: "
                f"{type(self._failure).__name__}: {self._failure}",
                _adapter_hint(self.address),
            )

    def send_packed(self, data: bytes) -> None:
        """BusPort's: a frame packed by framing.pack."""
        self.send(data)

    def send(self, frame: bytes) -> None:
        """Queue one packed link frame (framing.pack) as one ISO-TP PDU."""
        self._check()
        if len(frame) > isotp_port.MAX_PDU:
            raise UserError(
                f"a {len(frame)}-byte frame is more than ISO-TP carries here "
                f"({isotp_port.MAX_PDU} bytes)",
                "use a smaller profile",
            )
        if self.stack.tx_queue.qsize() >= MAX_QUEUED:
            log.warning("%d replies wait for the bus already: one more dropped", MAX_QUEUED)
            return
        self.stack.send(frame)

    def send_frame(self, kind: int, sequence: int, body: bytes = b"") -> None:
        self.send(pack(kind, sequence, body))

    def receive_frames(self, timeout_s: float) -> list[Frame]:
        """The frame that came within `timeout_s` (at most one); a PDU that is not a link
        frame is logged and dropped, as a damaged frame on a UART is."""
        self._check()
        data = self.stack.recv(block=True, timeout=max(0.0, timeout_s))
        if data is None:
            self._check()
            return []
        try:
            return [isotp_port.unpack(bytes(data))]
        except FrameError as error:
            log.warning("dropped an ISO-TP message from %#x: %s", self.address.isotp.rx_id, error)
            return []

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.stack.stop()
        finally:
            self.bus.shutdown()

    def __enter__(self) -> PythonCanPort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_port(url: str, max_frame: int = DEFAULT_MAX_FRAME) -> bus_responder.BusPort:
    """pycan:// through python-can; uart:// and isotp:// as the agent opens them."""
    scheme = url.split(":", 1)[0] if isinstance(url, str) else ""
    if scheme == SCHEME:
        return PythonCanPort(parse(url))
    if scheme in ("uart", "isotp"):
        return bus_responder.open_port(url, max_frame)
    raise UserError(
        f"unknown transport {url!r}",
        f"{EXAMPLE}, isotp://can0?tx=0x7E8&rx=0x7E0 (SocketCAN's kernel ISO-TP) "
        "or uart:///dev/ttyUSB0?baud=115200",
    )
