"""A field report on a board, written once against the Board protocol (local, ssh, serial).

Plain shell commands (POSIX sh, /proc and /sys) give what every Linux board
has; the agent adds its versions and a quick codec check. Without the agent,
the report says so and what that leaves out. Every figure carries its unit.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Callable
from typing import Any

from evbench.boards.base import Board
from evbench_agent.telemetry.throttle import limits_the_cpu
from evbench_core.errors import EvbenchError

FORMAT = "evbench-diag"
VERSION = 1
COMMAND_TIMEOUT = 30.0
AGENT_SERVICE = "evbench-agent.service"
#: What the kernel-errors probe says when this user may not read the kernel log.
DMESG_DENIED = "evbench-dmesg-not-permitted"

#: name -> shell snippet; each prints what its parser reads, and nothing on a board without it.
PROBES: dict[str, str] = {
    "model": "for f in /proc/device-tree/model /sys/firmware/devicetree/base/model"
    " /sys/class/dmi/id/product_name; do [ -r $f ] && { tr -d '\\0' <$f; echo; break; }; done",
    "kernel": "uname -srvm",
    "uptime": "cat /proc/uptime; cat /proc/loadavg",
    "image": "cat /etc/os-release 2>/dev/null; for f in /etc/version /etc/timestamp; do"
    ' [ -r $f ] && echo "${f##*/}=$(head -n1 $f)"; done; true',
    "cpufreq": "for d in /sys/devices/system/cpu/cpu[0-9]*; do f=$d/cpufreq; [ -d $f ] &&"
    ' echo "${d##*/} $(cat $f/scaling_cur_freq) $(cat $f/scaling_governor)'
    ' $(cat $f/scaling_max_freq) $(cat $f/cpuinfo_max_freq)"; done 2>/dev/null; true',
    "thermal": "for z in /sys/class/thermal/thermal_zone*; do [ -r $z/temp ] || continue;"
    ' echo "zone ${z##*/} $(cat $z/type) $(cat $z/temp)"; for t in $z/trip_point_*_temp; do'
    ' [ -r $t ] && echo "trip ${z##*/} $(cat ${t%_temp}_type) $(cat $t)"; done; done'
    " 2>/dev/null; for c in /sys/class/thermal/cooling_device*; do [ -r $c/cur_state ] &&"
    ' echo "cool ${c##*/} $(cat $c/type) $(cat $c/cur_state) $(cat $c/max_state)"; done'
    " 2>/dev/null; command -v vcgencmd >/dev/null && vcgencmd get_throttled; true",
    "memory": "cat /proc/meminfo",
    "disk": 'df -P -k / /tmp "$HOME" 2>/dev/null | sort -u',
    "network": "ip -o addr show 2>/dev/null || ifconfig -a 2>/dev/null",
    # CAN interfaces (type 280) with MTU, state and ip's bit rates; ttys with a UART behind
    # them (serial_core type 0: no hardware) with type and base clock.
    "buses": 'for d in /sys/class/net/*; do [ "$(cat $d/type 2>/dev/null)" = 280 ] || continue;'
    ' n=${d##*/}; echo "can $n $(cat $d/mtu) $(cat $d/operstate)'
    " $(ip -details link show dev $n 2>/dev/null | tr '\\n' ' ')\"; done;"
    " for t in /sys/class/tty/*; do [ -e $t/device ] || continue;"
    ' k=$(cat $t/type 2>/dev/null || echo -); [ "$k" = 0 ] && continue;'
    ' echo "uart ${t##*/} $k $(cat $t/uartclk 2>/dev/null || echo -)"; done; true',
    "kernel_errors": "if dmesg >/dev/null 2>&1; then dmesg --level=emerg,alert,crit,err"
    " 2>/dev/null | tail -n 15 || dmesg | grep -iE 'error|fail' | tail -n 15;"
    f" else echo {DMESG_DENIED}; fi",
    "service": f"command -v systemctl >/dev/null || {{ echo no-systemd; exit 0; }};"
    f" systemctl is-enabled {AGENT_SERVICE} 2>&1 | tail -n 1;"
    f" systemctl is-active {AGENT_SERVICE} 2>&1 | tail -n 1",
}

#: Run by the board's Python with the agent importable: encode and decode a few
#: seed payloads with every installed codec, and say whether they come back equal.
CODEC_CHECK = """\
import json
from evbench_agent import codecs, payloads
profile = payloads.get("seed")
items = profile.payloads(5)
report = {}
for name in codecs.available():
    try:
        codec = codecs.get(name)
        # An agent older than the `exact` flag: all its codecs are exact but dbc.
        exact = getattr(codec, "exact", name != "dbc")
        bound = codec.bind(profile)
        sizes, same = [], True
        for item in items:
            data = bound.data(item)
            blob = bound.encode(data)
            back = bound.decode(blob)
            # exact: the value comes back; else (dbc's resolution) it encodes the same again
            same = same and (back == data if exact else bound.encode(back) == blob)
            sizes.append(len(blob))
        report[name] = {"round_trip": same, "exact": exact,
                        "mean_size": sum(sizes) / len(sizes), "n": len(sizes)}
    except Exception as error:
        report[name] = {"error": f"{type(error).__name__}: {error}"}
print(json.dumps(report))
"""


def _kv(text: str, separator: str = "=") -> dict[str, str]:
    pairs = (line.split(separator, 1) for line in text.splitlines() if separator in line)
    return {key.strip(): value.strip().strip('"') for key, value in pairs}


def _model(text: str) -> dict[str, Any]:
    return {"model": text.strip() or None}


def _uptime(text: str) -> dict[str, Any]:
    lines = text.split("\n")
    seconds = float(lines[0].split()[0])
    load = [float(value) for value in lines[1].split()[:3]] if len(lines) > 1 else []
    return {"uptime": {"value": seconds, "unit": "s"}, "load_1_5_15min": load}


def _image(text: str) -> dict[str, Any]:
    values = _kv(text)
    keep = ("PRETTY_NAME", "VERSION_ID", "BUILD_ID", "IMAGE_ID", "IMAGE_VERSION", "version")
    return {key.lower(): values[key] for key in keep if key in values}


def _cpufreq(text: str) -> dict[str, Any]:
    cpus = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 5 and fields[1].isdigit():
            cpus.append(
                {
                    "cpu": fields[0],
                    "frequency": {"value": int(fields[1]) * 1000, "unit": "Hz"},
                    "governor": fields[2],
                    "max_allowed": {"value": int(fields[3]) * 1000, "unit": "Hz"},
                    "max_hardware": {"value": int(fields[4]) * 1000, "unit": "Hz"},
                }
            )
    return {"cpus": cpus}


def _thermal(text: str) -> dict[str, Any]:
    zones: dict[str, dict[str, Any]] = {}
    cooling, throttled = [], []
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] == ["zone"] and len(fields) == 4 and fields[3].lstrip("-").isdigit():
            zones[fields[1]] = {"type": fields[2], "temperature": _celsius(fields[3]), "trips": []}
        elif fields[:1] == ["trip"] and len(fields) == 4 and fields[1] in zones:
            zones[fields[1]]["trips"].append(
                {"type": fields[2], "temperature": _celsius(fields[3])}
            )
        elif fields[:1] == ["cool"] and len(fields) == 5:
            state = {"device": fields[1], "type": fields[2], "state": f"{fields[3]}/{fields[4]}"}
            cooling.append(state)
            if fields[3] != "0" and limits_the_cpu(fields[2]):  # a fan slows nothing
                throttled.append(f"{fields[2]} at state {fields[3]} of {fields[4]}")
        elif line.startswith("throttled=") and line.strip() != "throttled=0x0":
            throttled.append(f"vcgencmd {line.strip()}")
    return {"zones": zones, "cooling_devices": cooling, "throttling": throttled}


def _celsius(millidegrees: str) -> dict[str, Any]:
    return {"value": int(millidegrees) / 1000, "unit": "°C"}


def _memory(text: str) -> dict[str, Any]:
    values = _kv(text, ":")
    keep = ("MemTotal", "MemAvailable", "SwapTotal", "SwapFree")
    return {
        key: {"value": int(values[key].split()[0]) * 1024, "unit": "bytes"}
        for key in keep
        if key in values
    }


def _disk(text: str) -> dict[str, Any]:
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1].isdigit():
            mounts.append(
                {
                    "mount": fields[5],
                    "size": {"value": int(fields[1]) * 1024, "unit": "bytes"},
                    "available": {"value": int(fields[3]) * 1024, "unit": "bytes"},
                }
            )
    return {"filesystems": mounts}


def _network(text: str) -> dict[str, Any]:
    interfaces: dict[str, list[str]] = {}
    for line in text.splitlines():
        fields = line.split()
        # `ip -o addr`: "2: eth0    inet 10.0.0.2/24 ..."
        if len(fields) >= 4 and fields[0].endswith(":") and fields[2] in ("inet", "inet6"):
            interfaces.setdefault(fields[1], []).append(fields[3])
    return {"interfaces": interfaces, "raw": None if interfaces else text.strip()[:2000]}


def _buses(text: str) -> dict[str, Any]:
    """CAN interfaces and UARTs from the `buses` probe's lines."""
    from evbench_agent.platform.bus_interfaces import CANFD_MTU, UART_TYPES

    can, uart = [], []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0] == "can":
            entry: dict[str, Any] = {
                "name": fields[1],
                "mtu": int(fields[2]) if fields[2].isdigit() else None,
                "fd": fields[2] == str(CANFD_MTU),
                "state": fields[3],
            }
            details = " ".join(fields[4:])
            for key in ("bitrate", "dbitrate"):
                found = re.search(rf"(?<![a-z]){key} (\d+)", details)
                if found:
                    entry[key] = int(found[1])
            can.append(entry)
        elif len(fields) == 4 and fields[0] == "uart":
            kind, clock = fields[2], fields[3]
            entry = {
                "name": fields[1],
                "type": UART_TYPES.get(int(kind), kind) if kind.isdigit() else None,
            }
            if clock.isdigit() and int(clock) > 0:
                entry["uartclk_hz"], entry["max_baud"] = int(clock), int(clock) // 16
            uart.append(entry)
    return {"can": can, "uart": uart}


def _lines(key: str) -> Callable[[str], dict[str, Any]]:
    return lambda text: {key: [line for line in text.splitlines() if line.strip()]}


PARSERS: dict[str, Callable[[str], dict[str, Any]]] = {
    "model": _model,
    "kernel": lambda text: {"kernel": text.strip()},
    "uptime": _uptime,
    "image": _image,
    "cpufreq": _cpufreq,
    "thermal": _thermal,
    "memory": _memory,
    "disk": _disk,
    "network": _network,
    "buses": _buses,
    "kernel_errors": lambda text: {
        "lines": [line for line in text.splitlines() if line.strip() and line != DMESG_DENIED],
        "readable": DMESG_DENIED not in text,
    },
    "service": _lines("state"),
}
#: Why a section can come back empty, for the report's "missing" list.
EMPTY_MEANS = {
    "model": "board model: no device tree or DMI model exposed",
    "cpufreq": "CPU frequencies and governors: no cpufreq in this kernel (VM or container?)",
    "thermal": "temperatures: no thermal zones exposed",
    "network": "network: neither `ip` nor `ifconfig` on the board",
}


def _probe(board: Board, name: str, report: dict[str, Any]) -> None:
    try:
        result = board.run(["sh", "-c", PROBES[name]], COMMAND_TIMEOUT)
        text = result.stdout.decode("utf-8", "replace")
        section = PARSERS[name](text)
    except EvbenchError:
        raise  # the transport failed: the whole report would be wrong
    except (ValueError, IndexError) as error:
        report["missing"].append(f"{name}: unreadable output ({error})")
        return
    report["sections"][name] = section
    if name == "kernel_errors" and not section["readable"]:
        report["missing"].append(
            "kernel errors: this user may not read the kernel log (kernel.dmesg_restrict);"
            " log in as root (?user=root) to see them"
        )
    if name in EMPTY_MEANS and not any(section.values()):
        report["missing"].append(EMPTY_MEANS[name])


def _agent_candidates(board: Board) -> list[list[str]]:
    from evbench.usecases.deploy import IMAGE_AGENT

    candidates = [board.agent_command(), [IMAGE_AGENT]]
    return [c for i, c in enumerate(candidates) if c not in candidates[:i]]


def _python_for(command: list[str]) -> list[str]:
    """How to run Python code with the agent importable, given how the agent starts."""
    if command[1:2] == ["-m"]:
        return [command[0]]
    if len(command) == 2 and command[1].endswith(".pyz"):
        return ["env", f"PYTHONPATH={command[1]}", command[0]]
    return ["python3"]


def _agent(board: Board, report: dict[str, Any]) -> None:
    for command in _agent_candidates(board):
        result = board.run([*command, "info", "--json"], COMMAND_TIMEOUT)
        if result.returncode != 0:
            continue
        try:
            info = json.loads(result.stdout)
        except ValueError:
            continue
        report["agent"] = {"command": command, "info": info}
        check = board.run([*_python_for(command), "-c", CODEC_CHECK], COMMAND_TIMEOUT)
        try:
            report["codec_check"] = json.loads(check.stdout)
        except ValueError:
            error = check.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
            report["missing"].append(f"codec check: failed ({' '.join(error) or 'no output'})")
        return
    report["agent"] = None
    report["missing"].append(
        f"agent: not on the board (`evbench deploy --board {shlex.quote(board.url)}`"
        " installs it);"
        " without it: agent and codec versions, the codec check"
    )


def gather(board: Board) -> dict[str, Any]:
    """The whole report as a JSON-ready document."""
    started = time.monotonic()
    report: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "board": board.url,
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sections": {},
        "missing": [],
    }
    for name in PROBES:
        _probe(board, name, report)
    _agent(board, report)
    report["duration"] = {"value": round(time.monotonic() - started, 3), "unit": "s"}
    return report
