"""Telemetry for the report: CPU, frequency and temperature over time, phases marked.

Reads what the agent's telemetry writes (evbench_agent.telemetry): the run's
`telemetry.jsonl` (a header, then `sample` lines with `t_ns` on the monotonic
clock, `cpu_percent`, `freq_hz` per CPU as {cur, min, max}, `zones_c` per
thermal zone, and `throttle_start`/`throttle_end` events) and `markers.jsonl`
(phase starts and ends on the same clock). A torn or oversized line is
skipped; unknown line types are ignored, so a newer sampler still renders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from evbench_agent.telemetry.timeline import MARKERS, read_markers, windows

TELEMETRY = "telemetry.jsonl"
#: A telemetry line longer than this is not a sample; it is skipped, not parsed.
MAX_LINE = 1 << 20


@dataclass
class Series:
    samples: list[dict[str, Any]] = field(default_factory=list)
    #: (label, start ns, end ns): suites, and codec phases where the suite marks them.
    phases: list[tuple[str, int, int]] = field(default_factory=list)
    #: (t ns, reason) of every throttle_start event.
    throttles: list[tuple[int, str]] = field(default_factory=list)


def _lines(path: Path) -> list[dict[str, Any]]:
    entries = []
    with open(path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if not line.endswith("\n") or len(line) > MAX_LINE:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("t_ns"), int):
                entries.append(entry)
    return entries


def _phase_label(marker: dict[str, Any]) -> str | None:
    """Suites, and phases of one codec; the per-worker and per-profile frames are left out."""
    if marker.get("codec"):
        return f"{marker.get('suite')} {marker['codec']}"
    if marker.get("profile") is None and "worker" not in marker:
        return str(marker.get("suite"))
    return None


def load(directory: Path) -> Series | None:
    """The run's telemetry, or None when the run has no telemetry file."""
    path = Path(directory) / TELEMETRY
    if not path.is_file():
        return None
    series = Series()
    for entry in _lines(path):
        if entry.get("type") == "sample":
            series.samples.append(entry)
        elif entry.get("type") == "throttle_start":
            series.throttles.append((entry["t_ns"], str(entry.get("reason", ""))))
    try:
        markers = read_markers(Path(directory) / MARKERS)
    except (OSError, ValueError, KeyError):
        markers = []  # the samples still render; the phases are then unmarked
    last = series.samples[-1]["t_ns"] if series.samples else 0
    for marker, start, end in windows(markers):
        label = _phase_label(marker)
        if label is not None:
            series.phases.append((label, start, end if end is not None else last))
    return series


def _freq_mhz(sample: dict[str, Any]) -> dict[str, float]:
    found = {}
    for cpu, values in (sample.get("freq_hz") or {}).items():
        current = values.get("cur") if isinstance(values, dict) else values
        if isinstance(current, int | float):
            found[str(cpu)] = current / 1e6
    return found


def _numbers(value: Any) -> dict[str, float]:
    if not isinstance(value, dict):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, int | float)}


#: (panel label, what one sample gives: source -> value in the panel's unit)
PANELS = (
    ("CPU utilisation (%)", lambda s: _numbers({"all CPUs": s.get("cpu_percent")})),
    ("frequency (MHz)", _freq_mhz),
    ("temperature (°C)", lambda s: _numbers(s.get("zones_c"))),
)


def panels(series: Series) -> list[tuple[str, dict[str, list[tuple[float, float]]]]]:
    """The panels with data: label -> source -> [(seconds since start, value)]."""
    start = series.samples[0]["t_ns"]
    found = []
    for label, extract in PANELS:
        lines: dict[str, list[tuple[float, float]]] = {}
        for sample in series.samples:
            for source, value in extract(sample).items():
                lines.setdefault(source, []).append(((sample["t_ns"] - start) / 1e9, value))
        if lines:
            found.append((label, lines))
    return found


def draw(series: Series) -> Figure:
    """One panel per quantity present; phases shaded and named, throttle events in red."""
    start = series.samples[0]["t_ns"]
    present = panels(series)
    figure, axes = plt.subplots(
        len(present), 1, figsize=(7.2, 0.6 + 2.0 * len(present)), sharex=True, squeeze=False
    )
    for axis, (label, lines) in zip(axes[:, 0], present, strict=True):
        for index, (_name, begin, end) in enumerate(series.phases):
            axis.axvspan(
                (begin - start) / 1e9, (end - start) / 1e9, alpha=0.12, color=f"C{index % 10}"
            )
        for source, points in lines.items():
            axis.plot([t for t, _ in points], [v for _, v in points], marker=".", label=source)
        for moment, _reason in series.throttles:
            axis.axvline((moment - start) / 1e9, color="red", linewidth=1.2)
        axis.set_ylabel(label, fontsize="small")
        if label.startswith("CPU"):
            axis.set_ylim(0, 105)
        axis.grid(alpha=0.3)
        axis.legend(fontsize="x-small", loc="lower right")
    top = axes[0, 0]
    for name, begin, _end in series.phases:
        top.annotate(
            name,
            ((begin - start) / 1e9, 1.0),
            xycoords=("data", "axes fraction"),
            fontsize="x-small",
            va="bottom",
        )
    axes[-1, 0].set_xlabel("time since the first sample (s, monotonic clock)")
    figure.tight_layout()
    return figure
