"""`evbench-agent info` lists CAN interfaces and UARTs from sysfs: a fake tree laid out as
the kernel's (no SocketCAN here, so no type 280 entry in /sys), and the real /sys too."""

import json
import os
import subprocess
import sys
from pathlib import Path

from evbench_agent.platform import bus_interfaces


def _file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _device(sysfs: Path, where: str, driver: str | None, bus: str = "platform") -> Path:
    device = sysfs / "devices" / where
    device.mkdir(parents=True, exist_ok=True)
    if driver:
        target = sysfs / "bus" / bus / "drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        (device / "driver").symlink_to(target)
    return device


def _fake_sysfs(root: Path) -> Path:
    sysfs = root / "sys"
    net, tty = sysfs / "class" / "net", sysfs / "class" / "tty"
    # can0: an AM62x MCAN in CAN FD mode (MTU 72), up; vcan0: classic (16), no device.
    for name, mtu, state in (("can0", 72, "up"), ("vcan0", 16, "unknown"), ("eth0", 1500, "up")):
        _file(net / name / "type", "1" if name == "eth0" else "280")
        _file(net / name / "mtu", str(mtu))
        _file(net / name / "operstate", state)
    (net / "can0" / "device").symlink_to(_device(sysfs, "platform/20701000.can", "m_can_platform"))
    # ttyS0: a 16550A (type 4) with a 48 MHz clock behind serial_core's port device (6.5+);
    # ttyS1: registered by 8250 with no UART (type 0); tty0: a console with no device.
    uart = _device(sysfs, "platform/2800000.serial", "omap8250")
    port = uart / "2800000.serial:0" / "2800000.serial:0.0"
    port.mkdir(parents=True)
    base = sysfs / "bus" / "serial-base" / "drivers" / "port"
    base.mkdir(parents=True)
    (port / "driver").symlink_to(base)
    for name, kind in (("ttyS0", "4"), ("ttyS1", "0")):
        _file(tty / name / "type", kind)
        _file(tty / name / "uartclk", "48000000")
        (tty / name / "device").symlink_to(port)
    (tty / "tty0").mkdir(parents=True)
    return sysfs


def test_can_interfaces_and_uarts_of_a_fake_sysfs_and_evbench_agent_info(tmp_path: Path) -> None:
    sysfs = _fake_sysfs(tmp_path)
    found = bus_interfaces.collect(sysfs)
    assert found["can"] == [
        {"name": "can0", "state": "up", "mtu": 72, "fd": True, "driver": "m_can_platform"},
        {"name": "vcan0", "state": "unknown", "mtu": 16, "fd": False, "driver": None},
    ]
    # 48 MHz / 16 = 3 000 000 baud at most; PORT_16550A is 4 in linux/serial_core.h.
    assert found["uart"] == [
        {"name": "ttyS0", "driver": "omap8250", "type": "16550A", "uartclk_hz": 48_000_000,
         "max_baud": 3_000_000}
    ]  # fmt: skip
    lines = bus_interfaces.describe(found)
    assert lines["CAN interfaces"] == "can0 (up, CAN FD, m_can_platform), vcan0 (unknown, classic)"
    assert lines["UARTs"] == "ttyS0 (16550A, omap8250, up to 3000000 baud)"
    env = dict(os.environ, EVBENCH_TELEMETRY_SYSFS=str(sysfs))
    command = [sys.executable, "-m", "evbench_agent", "info"]
    done = subprocess.run(
        [*command, "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    buses = json.loads(done.stdout)["buses"]
    assert [c["name"] for c in buses["can"]] == ["can0", "vcan0"]
    assert [u["name"] for u in buses["uart"]] == ["ttyS0"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert "CAN interfaces: can0 (up, CAN FD, m_can_platform)" in done.stdout


#: The diag probe on an AM62x with can0 up as CAN FD 500 k / 2 M (iproute2 6.x's ip -details,
#: newlines turned into spaces) and a vcan.
AM62X_PROBE = (
    "can can0 72 up 3: can0: <NOARP,UP,LOWER_UP,ECHO> mtu 72 qdisc pfifo_fast state UP"
    "     link/can  promiscuity 0 minmtu 0 maxmtu 0      can <FD> state ERROR-ACTIVE"
    " (berr-counter tx 0 rx 0) restart-ms 0 \t  bitrate 500000 sample-point 0.875 \t  tq 25"
    " prop-seg 34 phase-seg1 35 phase-seg2 10 sjw 1 brp 1 \t  m_can: tseg1 2..256 tseg2"
    " 2..128 sjw 1..128 brp 1..512 brp_inc 1 \t  dbitrate 2000000 dsample-point 0.750 \n"
    "can vcan0 16 unknown 4: vcan0: <NOARP,UP,LOWER_UP> mtu 16 qdisc noqueue state UNKNOWN\n"
    "uart ttyS2 4 48000000\n"
    "uart ttyUSB0 - -\n"
)


def test_diag_reads_can_bit_rates_and_uarts_from_its_probe() -> None:
    from evbench.commands import diag as diag_command
    from evbench.usecases import diag

    section = diag.PARSERS["buses"](AM62X_PROBE)
    assert section["can"] == [
        {"name": "can0", "mtu": 72, "fd": True, "state": "up", "bitrate": 500_000,
         "dbitrate": 2_000_000},
        {"name": "vcan0", "mtu": 16, "fd": False, "state": "unknown"},
    ]  # fmt: skip
    assert section["uart"] == [
        {"name": "ttyS2", "type": "16550A", "uartclk_hz": 48_000_000, "max_baud": 3_000_000},
        {"name": "ttyUSB0", "type": None},
    ]
    lines = diag_command._system_lines({"buses": section})
    assert "can can0: up, CAN FD, 500000/2000000 bit/s" in lines
    assert "can vcan0: unknown, classic CAN" in lines
    assert "uart ttyS2: 16550A, up to 3000000 baud" in lines


def test_the_real_sysfs_read_by_the_agent_and_by_the_diag_probe_in_sh() -> None:
    """The agent lists every tty with a UART behind it and every CAN interface; so does diag."""
    from evbench.usecases import diag

    found = bus_interfaces.collect()
    ttys = Path("/sys/class/tty")
    expected = sorted(
        tty.name for tty in (ttys.glob("*") if ttys.is_dir() else [])
        if (tty / "device").exists() and (tty / "type").exists()
        and (tty / "type").read_text().strip() != "0"
    )  # fmt: skip
    listed = sorted(u["name"] for u in found["uart"] if u["type"] is not None)
    assert listed == expected
    net = Path("/sys/class/net")
    can = sorted(d.name for d in net.glob("*") if (d / "type").read_text().strip() == "280")
    assert sorted(c["name"] for c in found["can"]) == can
    done = subprocess.run(["sh", "-c", diag.PROBES["buses"]], capture_output=True, text=True)
    section = diag.PARSERS["buses"](done.stdout)
    assert [c["name"] for c in section["can"]] == [c["name"] for c in found["can"]]

    def uarts(read: dict) -> list[tuple]:
        return [(u["name"], u["type"], u.get("max_baud")) for u in read["uart"]]

    assert uarts(section) == uarts(found)
