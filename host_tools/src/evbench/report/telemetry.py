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

from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from evbench.report.colours import codec_colours
from evbench_agent.telemetry.timeline import MARKERS, read_markers, windows

TELEMETRY = "telemetry.jsonl"
#: A telemetry line longer than this is not a sample; it is skipped, not parsed.
MAX_LINE = 1 << 20


@dataclass
class Series:
    samples: list[dict[str, Any]] = field(default_factory=list)
    #: (suite, start ns, end ns) of every suite, the idle baseline included.
    suites: list[tuple[str, int, int]] = field(default_factory=list)
    #: (codec, start ns, end ns) of every codec phase a suite marks (the link suite does).
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


def _kind(marker: dict[str, Any]) -> str | None:
    """'codec' for one codec's phase, 'suite' for a whole suite; None for inner frames."""
    if marker.get("codec"):
        return "codec"
    if marker.get("profile") is None and "worker" not in marker:
        return "suite"
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
        span = (start, end if end is not None else last)
        if _kind(marker) == "codec":
            series.phases.append((str(marker["codec"]), *span))
        elif _kind(marker) == "suite":
            series.suites.append((str(marker.get("suite")), *span))
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
    """One panel per quantity present; suites banded and named, codec phases coloured,
    throttle events as red lines."""
    start = series.samples[0]["t_ns"]
    present = panels(series)
    codecs = sorted({codec for codec, _begin, _end in series.phases})
    colour = codec_colours(codecs)  # by name: the same colour as in the other plots
    figure = Figure(figsize=(8.4, 1.0 + 2.0 * len(present)), dpi=96)
    FigureCanvasAgg(figure)  # Agg: no display, no GUI toolkit
    axes = figure.subplots(len(present), 1, sharex=True, squeeze=False)
    for axis, (label, lines) in zip(axes[:, 0], present, strict=True):
        for index, (_suite, begin, end) in enumerate(series.suites):
            shade = "0.85" if index % 2 else "0.93"
            axis.axvspan((begin - start) / 1e9, (end - start) / 1e9, color=shade, zorder=0)
        for codec, begin, end in series.phases:
            axis.axvspan((begin - start) / 1e9, (end - start) / 1e9, color=colour[codec], alpha=0.2)
        for source, points in lines.items():
            axis.plot([t for t, _ in points], [v for _, v in points], marker=".", label=source)
        for moment, _reason in series.throttles:
            axis.axvline((moment - start) / 1e9, color="red", linewidth=1.2)
        axis.set_ylabel(label, fontsize="small")
        if label.startswith("CPU"):
            axis.set_ylim(0, 105)
        axis.grid(alpha=0.3)
        # Beside the panel, where it covers no line.
        axis.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    top = axes[0, 0]
    for suite, begin, _end in series.suites:
        top.annotate(
            suite,
            ((begin - start) / 1e9, 1.01),
            xycoords=("data", "axes fraction"),
            fontsize="x-small",
            va="bottom",
        )
    if codecs:
        handles: list[Artist] = [
            Patch(color=colour[c], alpha=0.4, label=f"{c} phase") for c in codecs
        ]
        if series.throttles:
            handles.append(Line2D([], [], color="red", label="throttle starts"))
        figure.legend(handles=handles, loc="upper right", fontsize="x-small", ncols=4)
    axes[-1, 0].set_xlabel("time since the first sample (s, monotonic clock)")
    height = figure.get_figheight()
    figure.subplots_adjust(
        left=0.09, right=0.8, top=1 - 0.55 / height, bottom=0.5 / height, hspace=0.25
    )
    return figure
