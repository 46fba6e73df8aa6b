"""A bus interface's counters, before and after each link phase over it.

For a network interface (a CAN controller, vcan, any netdev) the counters come
from iproute2, `ip -details -statistics -json link show dev IFACE` (capped at
IP_TIMEOUT_S): the generic `stats64` (rx/tx bytes, packets, errors, dropped)
and, for a CAN device, its `info_data` (bit rates, `state`, `berr_counter`)
and `info_xstats` (the driver's `struct can_device_stats`: restarts,
bus_error, arbitration_lost, error_warning, error_passive, bus_off), the
field names iproute2 prints in ip/iplink_can.c. Without iproute2 (or an `ip`
that has no -json, as BusyBox's), /sys/class/net/IFACE/statistics gives the
generic counters only. For a UART the counters come from the TIOCGICOUNT
ioctl (serial_core's per-port counts: characters received and sent, framing,
overrun, parity, break and buffer-overrun errors); a pseudo-terminal has no
such counts, and then nothing is recorded for it.

A phase is flagged when any error counter rose during it or, on CAN, the
controller is not ERROR-ACTIVE at its end. arbitration_lost is recorded but
never flags: two nodes answering each other contend for the bus by design.
Two snapshots per phase, no sampling: a counter says how many events there
were, not when.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import struct
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evbench_core.results import SampleSet

log = logging.getLogger(__name__)

IP_TIMEOUT_S = 2.0
SYS_NET = Path("/sys/class/net")
#: The generic netdev counters, by their sysfs names (stats64's rx/tx halves).
GENERIC: tuple[str, ...] = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")
GENERIC += ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped")
#: The same counters as one half (rx or tx) of ip's stats64 names them.
IP_STATS = ("bytes", "packets", "errors", "dropped")
#: struct can_device_stats, as ip/iplink_can.c names its fields in JSON.
CAN_XSTATS: tuple[str, ...] = ("restarts", "bus_error", "arbitration_lost", "error_warning")
CAN_XSTATS += ("error_passive", "bus_off")
#: enum can_state (linux/can/netlink.h); ip prints the names.
CAN_STATES = ("ERROR-ACTIVE", "ERROR-WARNING", "ERROR-PASSIVE", "BUS-OFF", "STOPPED", "SLEEPING")
ERROR_ACTIVE = CAN_STATES[0]
#: struct serial_icounter_struct (linux/serial.h): 20 ints; these are the ones kept.
TIOCGICOUNT = 0x545D  # asm-generic/ioctls.h: the same on x86, arm and arm64
ICOUNT = struct.Struct("20i")
ICOUNT_FIELDS = {"rx": 4, "tx": 5, "frame": 6, "overrun": 7, "parity": 8, "brk": 9}
ICOUNT_FIELDS |= {"buf_overrun": 10}
#: Counters whose rise flags a phase.
ERROR_COUNTERS = frozenset(
    {"rx_errors", "tx_errors", "rx_dropped", "tx_dropped"}
    | {"restarts", "bus_error", "error_warning", "error_passive", "bus_off"}
    | {"frame", "overrun", "parity", "brk", "buf_overrun"}
)
#: Counters of bytes (a UART's rx/tx count characters, 8N1 bytes); the rest are counts.
BYTE_COUNTERS = frozenset({"rx_bytes", "tx_bytes", "rx", "tx"})
#: Levels, not counters: recorded as they are at the end of the phase, not as a rise.
#: berr_tx/berr_rx are the controller's transmit and receive error counters (TEC, REC),
#: which rise on errors and fall on good frames; state is enum can_state's number.
LEVELS = ("berr_tx", "berr_rx", "state")
METRIC = "bus_counter"
ERRORS_METRIC = "bus_errors"


@dataclass(frozen=True)
class Snapshot:
    """One interface's counters at one moment."""

    interface: str
    source: str  # "ip", "sysfs" or "TIOCGICOUNT"
    counters: dict[str, int]
    levels: dict[str, int] = field(default_factory=dict)
    state: str | None = None  # a CAN controller's state, as ip names it
    bit_rate: int | None = None
    data_bit_rate: int | None = None


@dataclass(frozen=True)
class PhaseCounters:
    """What changed on the interface during one phase."""

    interface: str
    source: str
    rises: dict[str, int]  # counter -> after - before
    levels: dict[str, int]  # at the end of the phase
    state: str | None

    @property
    def bus_errors(self) -> int:
        """Error events during the phase: the sum of the error counters' rises."""
        return sum(value for name, value in self.rises.items() if name in ERROR_COUNTERS)

    @property
    def flagged(self) -> bool:
        return self.bus_errors > 0 or self.state not in (None, ERROR_ACTIVE)

    def reasons(self) -> list[str]:
        """What flags the phase, one short item each ("bus_error +3", "state BUS-OFF")."""
        found = [f"{n} +{v}" for n, v in sorted(self.rises.items()) if n in ERROR_COUNTERS and v]
        if self.state not in (None, ERROR_ACTIVE):
            found.append(f"state {self.state}")
        return found


def compare(before: Snapshot, after: Snapshot) -> PhaseCounters:
    """The rise of every counter both snapshots have. A counter that went down was
    reset (the interface re-created, a 32-bit counter wrapped): its rise is counted
    from zero, the least it can have been."""
    rises = {}
    for name, value in after.counters.items():
        if name not in before.counters:
            continue
        rise = value - before.counters[name]
        if rise < 0:
            log.warning(
                "%s's %s went down (%d -> %d): counted from 0",
                after.interface,
                name,
                before.counters[name],
                value,
            )
            rise = value
        rises[name] = rise
    return PhaseCounters(after.interface, after.source, rises, dict(after.levels), after.state)


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _integers(source: Any, names: Sequence[str], prefix: str = "") -> dict[str, int]:
    """The whole-number values of `names` in one object of ip's JSON (None or empty: none),
    each named `prefix` + its name; any other value is left out."""
    found = {}
    for name in names:
        value = _integer((source or {}).get(name))
        if value is not None:
            found[prefix + name] = value
    return found


def parse_ip_link(document: Any, interface: str) -> Snapshot | None:
    """A Snapshot from `ip -details -statistics -json link show dev IFACE`'s output (a
    list of one link); None when it holds no statistics."""
    if not isinstance(document, list) or not document or not isinstance(document[0], dict):
        return None
    link = document[0]
    stats = link.get("stats64") or link.get("stats")
    if not isinstance(stats, dict):
        return None
    counters = {
        **_integers(stats.get("rx"), IP_STATS, "rx_"),
        **_integers(stats.get("tx"), IP_STATS, "tx_"),
    }
    info = link.get("linkinfo") or {}
    data = info.get("info_data") or {}
    counters.update(_integers(info.get("info_xstats"), CAN_XSTATS))
    levels = _integers(data.get("berr_counter"), ("tx", "rx"), "berr_")
    # Older iproute2 printed the state only in its text output, not in JSON.
    state = data.get("state") if isinstance(data.get("state"), str) else None
    if state in CAN_STATES:
        levels["state"] = CAN_STATES.index(state)
    return Snapshot(
        interface,
        "ip",
        counters,
        levels,
        state,
        _integer((data.get("bittiming") or {}).get("bitrate")),
        _integer((data.get("data_bittiming") or {}).get("bitrate")),
    )


def ip_snapshot(interface: str) -> Snapshot | None:
    """The interface's counters from iproute2; None without it or without its answer."""
    ip = shutil.which("ip")
    if ip is None:
        return None
    command = [ip, "-details", "-statistics", "-json", "link", "show", "dev", interface]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=IP_TIMEOUT_S, check=False
        )
        document = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return parse_ip_link(document, interface)


def sysfs_snapshot(interface: str, sys_net: Path = SYS_NET) -> Snapshot | None:
    """The generic counters from /sys/class/net/IFACE/statistics; None if it is absent."""
    directory = sys_net / interface / "statistics"
    counters = {}
    for name in GENERIC:
        try:
            counters[name] = int((directory / name).read_text(encoding="ascii"))
        except (OSError, ValueError):
            continue
    return Snapshot(interface, "sysfs", counters) if counters else None


def parse_icount(data: bytes, device: str) -> Snapshot:
    """A Snapshot from a struct serial_icounter_struct as TIOCGICOUNT fills it."""
    values = ICOUNT.unpack(data[: ICOUNT.size])
    return Snapshot(device, "TIOCGICOUNT", {name: values[i] for name, i in ICOUNT_FIELDS.items()})


def uart_snapshot(device: str) -> Snapshot | None:
    """A UART's counts through TIOCGICOUNT; None where the tty keeps none (a pty)."""
    try:
        fd = os.open(device, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = fcntl.ioctl(fd, TIOCGICOUNT, bytes(ICOUNT.size))
    except OSError:
        return None
    finally:
        os.close(fd)
    return parse_icount(data, device)


class BusCounters:
    """Snapshots of the interface a link transport runs on, from one source for the
    whole run (the first that answers), so every phase's counters are comparable."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name  # "isotp" (a netdev) or "uart" (a tty device)
        self.source: str | None = None
        self.first: Snapshot | None = None

    def snapshot(self) -> Snapshot | None:
        """The counters now, or None where no source gives any (said once in the log;
        not asked again: a pty stays a pty)."""
        if self.source == "none":
            return None
        if self.kind == "uart":
            taken = uart_snapshot(self.name)
        elif self.source == "sysfs":
            taken = sysfs_snapshot(self.name)
        else:
            taken = ip_snapshot(self.name)
            if taken is None and self.source is None:
                taken = sysfs_snapshot(self.name)
        if self.first is None:
            self.first = taken
            self.source = taken.source if taken else "none"
            if taken is None:
                log.info("%s keeps no counters evbench can read: none recorded", self.name)
        return taken if taken is not None and taken.source == self.source else None

    def params(self) -> dict[str, Any]:
        """Identity params of the counter records: the interface, the source, and the
        bit rates the interface itself reports (constant over the run: the first snapshot)."""
        params: dict[str, Any] = {"interface": self.name, "counter_source": self.source}
        if self.first is not None and self.first.bit_rate is not None:
            params["interface_bit_rate"] = self.first.bit_rate
            if self.first.data_bit_rate:
                params["interface_data_bit_rate"] = self.first.data_bit_rate
        return params


def rate_mismatch(bit_rate: int, data_rate: int, snapshot: Snapshot | None) -> str | None:
    """One line when the interface runs at other rates than the bus load is counted
    against (`data_rate` 0: classic CAN, no data phase); None when they agree or the
    interface says none (vcan, sysfs)."""
    if snapshot is None or snapshot.bit_rate is None:
        return None
    actual_data = snapshot.data_bit_rate or 0
    if snapshot.bit_rate == bit_rate and (not data_rate or actual_data == data_rate):
        return None
    actual = f"{snapshot.bit_rate}" + (f" / {actual_data}" if actual_data else "")
    counted = f"{bit_rate}" + (f" / {data_rate}" if data_rate else "")
    return (
        f"{snapshot.interface} runs at {actual} bit/s but the bus load is counted against "
        f"{counted} bit/s (make bitrate= and dbitrate= in the URL the interface's)"
    )


def counters_of(transport: Any) -> BusCounters:
    """The counters of a link transport's interface (buses.transport.BusTransport):
    an ISO-TP URL names a network interface, a UART URL a device."""
    parts = urlsplit(transport.port_url)
    return BusCounters(transport.kind, parts.netloc if transport.kind == "isotp" else parts.path)


def phase_sample_sets(
    suite: str,
    profile: str,
    codec: str,
    phase_params: dict[str, Any],
    phase: int,
    counters: BusCounters,
    change: PhaseCounters,
) -> list[SampleSet]:
    """One phase's context records: `bus_errors` (the error events, one value), and a
    `bus_counter` per counter (its rise) and per level (at the end of the phase)."""
    params = {**phase_params, **counters.params()}
    sets = [
        SampleSet(
            suite, profile, codec, ERRORS_METRIC, "count", params, [float(change.bus_errors)], phase
        )
    ]
    values = {**change.rises, **change.levels}
    for name in sorted(values):
        unit = "bytes" if name in BYTE_COUNTERS else "count"
        sets.append(
            SampleSet(
                suite,
                profile,
                codec,
                METRIC,
                unit,
                dict(params, counter=name),
                [float(values[name])],
                phase,
            )
        )
    return sets


__all__ = ["CAN_STATES", "ERRORS_METRIC", "ERROR_COUNTERS", "METRIC"]
