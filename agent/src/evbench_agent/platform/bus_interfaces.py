"""The board's CAN interfaces and UARTs with their settings, read from sysfs.

A CAN interface is a network device of type 280 (ARPHRD_CAN); its MTU says
classic CAN (16) or CAN FD (72). Bit rates live in netlink, not sysfs: `ip
-details -json link` gives them where iproute2 is installed. A UART is a tty
with a device behind it; serial_core's `type` 0 (PORT_UNKNOWN) is a port the
8250 driver registered with no hardware behind it, which is left out.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

ARPHRD_CAN = 280
CAN_MTU, CANFD_MTU = 16, 72
#: serial_core's port types (include/uapi/linux/serial_core.h), the common ones.
UART_TYPES = {1: "8250", 2: "16450", 3: "16550", 4: "16550A", 5: "CIRRUS", 6: "16650"}
UART_TYPES |= {7: "16650V2", 8: "16750", 13: "XSCALE", 14: "RM9000", 15: "OCTEON"}
UART_TYPES |= {16: "AR7", 17: "U6_16550A", 18: "TEGRA", 19: "XR17D15X", 23: "8250_CIR"}
UART_TYPES |= {52: "IMX", 61: "AMBA PL011", 90: "OMAP"}
IP_TIMEOUT_S = 2.0
SYSFS = Path("/sys")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None


#: serial_core's own port and controller devices (Linux 6.5+) sit between a tty and its UART.
_SERIAL_BASE = ("port", "ctrl")


def _driver(device: Path) -> str | None:
    """The driver of the device, or of the first parent past serial_core's port devices."""
    if not device.exists():
        return None
    current = device.resolve()
    for _ in range(4):
        link = current / "driver"
        if link.is_symlink() and link.resolve().name not in _SERIAL_BASE:
            return link.resolve().name
        current = current.parent
    return None


def _ip_details(name: str) -> dict[str, Any]:
    """Bit rates and state from iproute2, when it is there (nothing otherwise)."""
    ip = shutil.which("ip")
    if ip is None:
        return {}
    try:
        done = subprocess.run(
            [ip, "-details", "-json", "link", "show", "dev", name],
            capture_output=True,
            text=True,
            timeout=IP_TIMEOUT_S,
            check=False,
        )
        links = json.loads(done.stdout) if done.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return {}
    info = (links[0].get("linkinfo") or {}).get("info_data") or {} if links else {}
    found = {}
    for key, source in (("bitrate", "bittiming"), ("dbitrate", "data_bittiming")):
        rate = (info.get(source) or {}).get("bitrate")
        if isinstance(rate, int):
            found[key] = rate
    if isinstance(info.get("state"), str):
        found["can_state"] = info["state"]
    return found


def can_interfaces(sysfs: Path = SYSFS, ask_ip: bool = True) -> list[dict[str, Any]]:
    """Every CAN network interface: name, state, MTU, CAN FD or not, driver (and bit rates)."""
    found = []
    net = sysfs / "class" / "net"
    for device in sorted(net.glob("*")) if net.is_dir() else []:
        if _read(device / "type") != str(ARPHRD_CAN):
            continue
        mtu = _read(device / "mtu")
        entry: dict[str, Any] = {
            "name": device.name,
            "state": _read(device / "operstate"),
            "mtu": int(mtu) if mtu and mtu.isdigit() else None,
            "fd": mtu == str(CANFD_MTU),
            "driver": _driver(device / "device"),
        }
        if ask_ip:
            entry |= _ip_details(device.name)
        found.append(entry)
    return found


def uarts(sysfs: Path = SYSFS) -> list[dict[str, Any]]:
    """Every tty with hardware behind it: name, driver, UART type, base clock and top baud."""
    found = []
    ttys = sysfs / "class" / "tty"
    for tty in sorted(ttys.glob("*")) if ttys.is_dir() else []:
        if not (tty / "device").exists():
            continue
        kind = _read(tty / "type")
        if kind == "0":
            continue  # a port the driver registered, with no UART behind it
        clock = _read(tty / "uartclk")
        entry: dict[str, Any] = {
            "name": tty.name,
            "driver": _driver(tty / "device"),
            "type": UART_TYPES.get(int(kind), kind) if kind and kind.isdigit() else kind,
        }
        if clock and clock.isdigit() and int(clock) > 0:
            entry["uartclk_hz"] = int(clock)
            entry["max_baud"] = int(clock) // 16  # the usual 16x oversampling
        found.append(entry)
    return found


def collect(sysfs: Path = SYSFS) -> dict[str, list[dict[str, Any]]]:
    """Both lists; iproute2 is asked for bit rates only about the real /sys."""
    return {"can": can_interfaces(sysfs, ask_ip=sysfs == SYSFS), "uart": uarts(sysfs)}


def describe(found: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """One line per kind, for `evbench-agent info`'s text output."""
    can = [
        f"{c['name']} ({c['state']}, {'CAN FD' if c['fd'] else 'classic'}"
        + (f", {c['bitrate']} bit/s" if "bitrate" in c else "")
        + (f"/{c['dbitrate']}" if "dbitrate" in c else "")
        + (f", {c['driver']}" if c.get("driver") else "")
        + ")"
        for c in found["can"]
    ]
    uart = [
        f"{u['name']} ({u['type'] or '-'}, {u['driver'] or '-'}"
        + (f", up to {u['max_baud']} baud" if "max_baud" in u else "")
        + ")"
        for u in found["uart"]
    ]
    return {"CAN interfaces": ", ".join(can) or "none", "UARTs": ", ".join(uart) or "none"}


__all__ = ["CANFD_MTU", "UART_TYPES"]
