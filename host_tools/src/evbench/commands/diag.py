"""evbench diag: a field report on a board (local, ssh:// or a serial console)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evbench.commands import _outputs
from evbench.commands._board_options import add_board_options, open_board_from
from evbench.usecases import diag
from evbench_core import results
from evbench_core.errors import ExitCode

NAME = "diag"
HELP = "report a board's state: model, kernel, clocks, temperatures, memory, disk, network, agent"
REPORT_NAME = "diag.json"


def setup_parser(parser: argparse.ArgumentParser) -> None:
    add_board_options(parser, default="local")
    parser.add_argument("--out", type=Path, help=f"also save {REPORT_NAME} (and any transcript)")


def _figure(value: dict[str, Any] | None) -> str:
    if not value:
        return "?"
    number, unit = value["value"], value["unit"]
    if unit == "bytes":
        return f"{number / 2**20:.0f} MiB"
    if unit == "Hz":
        return f"{number / 1e6:.0f} MHz"
    if unit == "s":
        return f"{number / 3600:.1f} h" if number >= 3600 else f"{number:.0f} s"
    return f"{number:g} {unit}"


def _identity_lines(sections: dict[str, Any]) -> list[str]:
    """The board model, kernel, uptime with its load, and the image."""
    uptime = sections.get("uptime", {})
    load = " ".join(f"{value:g}" for value in uptime.get("load_1_5_15min", []))
    image = sections.get("image", {})
    versions = "".join(
        f", {key} {image[key]}" for key in ("build_id", "image_version") if key in image
    )
    return [
        f"board model: {sections.get('model', {}).get('model') or '?'}",
        f"kernel:      {sections.get('kernel', {}).get('kernel', '?')}",
        f"uptime:      {_figure(uptime.get('uptime'))} (load {load or '?'})",
        f"image:       {image.get('pretty_name', '?')}{versions}",
    ]


def _cpu_lines(sections: dict[str, Any]) -> list[str]:
    """Each CPU's frequency and governor, and its allowed maximum against the hardware's."""
    lines = []
    for cpu in sections.get("cpufreq", {}).get("cpus", []):
        capped = " (capped)" if cpu["max_allowed"]["value"] < cpu["max_hardware"]["value"] else ""
        lines.append(
            f"{cpu['cpu']}:        {_figure(cpu['frequency'])}, {cpu['governor']},"
            f" max {_figure(cpu['max_allowed'])} of {_figure(cpu['max_hardware'])}{capped}"
        )
    return lines


def _thermal_lines(sections: dict[str, Any]) -> list[str]:
    """Each thermal zone with its trip points, then the throttling seen."""
    thermal = sections.get("thermal", {})
    lines = []
    for zone, data in thermal.get("zones", {}).items():
        trips = ", ".join(f"{t['type']} {_figure(t['temperature'])}" for t in data["trips"])
        said = f" (trips: {trips})" if trips else ""
        lines.append(f"{zone}: {data['type']} {_figure(data['temperature'])}{said}")
    lines.append(f"throttling:  {'; '.join(thermal.get('throttling', [])) or 'none seen'}")
    return lines


def _storage_lines(sections: dict[str, Any]) -> list[str]:
    """Memory, each filesystem's free space and each network interface's addresses."""
    memory = sections.get("memory", {})
    lines = [
        f"memory:      {_figure(memory.get('MemAvailable'))} available"
        f" of {_figure(memory.get('MemTotal'))}"
    ]
    lines += [
        f"disk {mount['mount']}: {_figure(mount['available'])} free of {_figure(mount['size'])}"
        for mount in sections.get("disk", {}).get("filesystems", [])
    ]
    lines += [
        f"net {name}: {', '.join(addresses)}"
        for name, addresses in sections.get("network", {}).get("interfaces", {}).items()
    ]
    return lines


def _bus_lines(sections: dict[str, Any]) -> list[str]:
    """Each CAN interface (state, kind, bit rates) and UART; a line when there is none."""
    buses = sections.get("buses", {})
    lines = []
    for can in buses.get("can", []):
        rates = "/".join(str(can[k]) for k in ("bitrate", "dbitrate") if k in can)
        lines.append(
            f"can {can['name']}: {can['state']}, {'CAN FD' if can['fd'] else 'classic CAN'}"
            + (f", {rates} bit/s" if rates else "")
        )
    for uart in buses.get("uart", []):
        top = f", up to {uart['max_baud']} baud" if "max_baud" in uart else ""
        lines.append(f"uart {uart['name']}: {uart['type'] or 'no UART type'}{top}")
    if "buses" in sections and not any(buses.values()):
        lines.append("buses:       no CAN interface, no UART")
    return lines


def _kernel_error_lines(sections: dict[str, Any]) -> list[str]:
    """The kernel's last error lines (or why they could not be read)."""
    kernel = sections.get("kernel_errors", {})
    if not kernel.get("readable", True):
        return ["kernel errors: not readable by this user (see missing)"]
    errors = kernel.get("lines", [])
    return [f"kernel errors (last {len(errors)}):"] + (
        [f"  {line[:160]}" for line in errors] or ["  none"]
    )


def _system_lines(sections: dict[str, Any]) -> list[str]:
    state = sections.get("service", {}).get("state", [])
    return [
        *_identity_lines(sections),
        *_cpu_lines(sections),
        *_thermal_lines(sections),
        *_storage_lines(sections),
        *_bus_lines(sections),
        *_kernel_error_lines(sections),
        f"agent service ({diag.AGENT_SERVICE}): {' / '.join(state) or '?'}",
    ]


def _agent_lines(report: dict[str, Any]) -> list[str]:
    agent = report.get("agent")
    if not agent:
        return ["agent:       not found"]
    info = agent["info"]
    lines = [
        f"agent:       {info.get('agent')} (results format {info.get('results_format')}),"
        f" Python {info.get('python')}, protobuf {info.get('protobuf')}"
        f" ({info.get('protobuf_backend')})"
    ]
    for codec, check in report.get("codec_check", {}).items():
        if "error" in check:
            lines.append(f"codec {codec}: ERROR {check['error']}")
        else:
            verdict = "round trip DIFFERS"
            if check["round_trip"]:  # a codec that is not exact: to its values' resolution
                verdict = "round trip ok" + ("" if check.get("exact", True) else ", to resolution")
            lines.append(
                f"codec {codec}: {verdict}, {check['mean_size']:.1f} bytes mean (n = {check['n']})"
            )
    return lines


def render(report: dict[str, Any]) -> str:
    """The report as text, one fact a line."""
    lines = [f"evbench diag: {report['board']} at {report['taken_at']}"]
    lines += _system_lines(report["sections"])
    lines += _agent_lines(report)
    if report["missing"]:
        lines.append("missing:")
        lines += [f"  - {item}" for item in report["missing"]]
    lines.append(f"(gathered in {report['duration']['value']:.1f} s)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    out = args.out.resolve() if args.out else None
    if out:
        _outputs.make_directory(out, "--out")
    with open_board_from(args) as board:
        try:
            report = diag.gather(board)
        finally:
            if out:
                board.save_transcript(out)
    print(render(report))
    if not out and board.transcript_path is not None:
        print(f"console transcript: {board.transcript_path}", file=sys.stderr)
    if out:
        results.write_json(out / REPORT_NAME, report)
        print(f"\nreport: {out / REPORT_NAME}")
    return ExitCode.OK
