"""Telemetry for the report: read the run's telemetry file, draw it over time.

The file is JSON Lines, one object per line with `t`, monotonic seconds on
the suites' clock, and `kind`: `sample` (`cpu_percent`, `freq_hz` per core,
`temps` in °C per zone), `marker` (`name`, `event` start or end: the phases)
or `throttle` (`reason`). A torn last line is skipped, as in samples.jsonl;
unknown kinds and fields are ignored so a newer sampler still renders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

FILE_NAMES = ("telemetry.jsonl",)
#: A telemetry line longer than this is not ours; it is skipped, not parsed.
MAX_LINE = 1 << 20


@dataclass
class Series:
    samples: list[dict[str, Any]] = field(default_factory=list)
    phases: list[tuple[str, float, float]] = field(default_factory=list)
    throttles: list[tuple[float, str]] = field(default_factory=list)


def find(directory: Path) -> Path | None:
    return next((directory / n for n in FILE_NAMES if (directory / n).is_file()), None)


def load(directory: Path) -> Series | None:
    """The run's telemetry, or None when the run has no telemetry file."""
    path = find(Path(directory))
    if path is None:
        return None
    series = Series()
    open_phases: dict[str, float] = {}
    with open(path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if not line.endswith("\n") or len(line) > MAX_LINE:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or not isinstance(entry.get("t"), int | float):
                continue
            kind = entry.get("kind", "sample")
            if kind == "sample":
                series.samples.append(entry)
            elif kind == "marker":
                name = str(entry.get("name", "?"))
                if entry.get("event") == "end" and name in open_phases:
                    series.phases.append((name, open_phases.pop(name), entry["t"]))
                else:
                    open_phases[name] = entry["t"]
            elif kind == "throttle":
                series.throttles.append((entry["t"], str(entry.get("reason", ""))))
    last = series.samples[-1]["t"] if series.samples else 0.0
    series.phases += [(name, start, last) for name, start in open_phases.items()]
    return series


def _values(samples: list[dict[str, Any]], key: str) -> dict[str, list[tuple[float, float]]]:
    """Per-source time series of one sample field (a number, or a dict or list of them)."""
    lines: dict[str, list[tuple[float, float]]] = {}
    for sample in samples:
        value = sample.get(key)
        if isinstance(value, int | float):
            value = {"all": value}
        elif isinstance(value, list):
            value = {f"cpu{i}": v for i, v in enumerate(value)}
        if not isinstance(value, dict):
            continue
        for source, number in value.items():
            if isinstance(number, int | float):
                lines.setdefault(str(source), []).append((sample["t"], float(number)))
    return lines


PANELS = (
    ("cpu_percent", "CPU utilisation (%)", 1.0),
    ("freq_hz", "frequency (MHz)", 1e-6),
    ("temps", "temperature (°C)", 1.0),
)


def draw(series: Series) -> Figure:
    """One panel per quantity present; phases shaded, throttle events as red lines."""
    start = series.samples[0]["t"]
    present = [p for p in PANELS if _values(series.samples, p[0])]
    figure, axes = plt.subplots(
        max(len(present), 1),
        1,
        figsize=(7.2, 2.2 * max(len(present), 1)),
        sharex=True,
        squeeze=False,
    )
    for axis, (key, label, scale) in zip(axes[:, 0], present, strict=False):
        for source, points in _values(series.samples, key).items():
            axis.plot([t - start for t, _ in points], [v * scale for _, v in points], label=source)
        for index, (_name, begin, end) in enumerate(series.phases):
            axis.axvspan(begin - start, end - start, alpha=0.12, color=f"C{index % 10}")
        for moment, _reason in series.throttles:
            axis.axvline(moment - start, color="red", linewidth=1)
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
        axis.legend(fontsize="x-small", loc="upper right")
    for name, begin, _end in series.phases:
        axes[0, 0].annotate(
            name,
            (begin - start, 1.0),
            xycoords=("data", "axes fraction"),
            fontsize="x-small",
            rotation=90,
            va="top",
        )
    axes[-1, 0].set_xlabel("time since the first sample (s, monotonic)")
    figure.tight_layout()
    return figure
