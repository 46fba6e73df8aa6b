"""The report's plots, drawn with matplotlib's Agg backend on the host only.

Each plot appears only when the run holds its data, so a codec-only run has
two plots and a run with the link suite and telemetry has more. `plans`
says which plots the data call for without drawing; `draw` renders them to
PNG bytes. Every axis names its unit, every caption its method and n.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display, no GUI toolkit on a lab PC or in CI

import matplotlib.pyplot as plt
from matplotlib import ticker
from matplotlib.figure import Figure

from evbench.report import telemetry
from evbench.report.context import RunContext
from evbench_agent import metrics

TIME_METRICS = ("encode", "decode", "decode_access")
SIZE_METRICS = ("size", "size_deflate")
LINK_SUITE = "link"
DPI = 96
#: Up to this many bars per panel the panels sit side by side, each bar labelled.
SIDE_BY_SIDE_BARS = 24


@dataclass(frozen=True)
class Plot:
    name: str
    title: str
    caption: str
    png: bytes


@dataclass(frozen=True)
class _Plan:
    name: str
    title: str
    caption: str
    draw: Callable[[RunContext], Figure]


def _records(context: RunContext, suite: str, names: tuple[str, ...]) -> list[dict]:
    return [
        r
        for r in context.records
        if r.get("suite") == suite and r.get("metric") in names and r.get("median") is not None
    ]


def _label(metric: str) -> str:
    known = metrics.METRICS.get(metric)
    return known.label if known else metric


def _bars(context: RunContext, names: tuple[str, ...], scale: float, unit: str) -> Figure:
    """One panel per metric; profiles on x, a bar per codec; whiskers: 95 % CI of the median."""
    records = _records(context, "codec", names)
    present = [m for m in names if any(r["metric"] == m for r in records)]
    profiles = sorted({r["profile"] for r in records})
    codecs = [c for c in context.codecs() if any(r["codec"] == c for r in records)]
    bars_per_panel = len(profiles) * len(codecs)
    if bars_per_panel <= SIDE_BY_SIDE_BARS:
        figure, axes = plt.subplots(
            1, len(present), figsize=(4.2 * len(present), 3.6), squeeze=False, dpi=DPI
        )
        panels = axes[0]
    else:  # many profiles: one wide panel per metric, stacked
        width_in = min(18.0, 3.0 + 0.1 * bars_per_panel)
        figure, axes = plt.subplots(
            len(present), 1, figsize=(width_in, 3.4 * len(present)), squeeze=False, dpi=DPI
        )
        panels = axes[:, 0]
    width = 0.8 / max(len(codecs), 1)
    for axis, metric in zip(panels, present, strict=True):
        for index, codec in enumerate(codecs):
            xs, heights, low, high = [], [], [], []
            for position, profile in enumerate(profiles):
                record = next(
                    (
                        r
                        for r in records
                        if (r["metric"], r["codec"], r["profile"]) == (metric, codec, profile)
                    ),
                    None,
                )
                if record is None:
                    continue
                median = record["median"] * scale
                xs.append(position + (index - (len(codecs) - 1) / 2) * width)
                heights.append(median)
                ci_low, ci_high = record.get("ci95_low"), record.get("ci95_high")
                low.append(median - ci_low * scale if ci_low is not None else 0.0)
                high.append(ci_high * scale - median if ci_high is not None else 0.0)
            bars = axis.bar(xs, heights, width, yerr=[low, high], capsize=3, label=codec)
            if bars_per_panel <= SIDE_BY_SIDE_BARS:  # beyond that the labels overlap
                axis.bar_label(bars, labels=[f"{h:.3g}" for h in heights], fontsize="x-small")
        axis.set_xticks(range(len(profiles)), profiles, rotation=30, ha="right")
        axis.set_title(_label(metric))
        axis.set_ylabel(unit)
        if scale != 1.0:
            # Codecs differ by 50x: a log axis keeps the small bar and its interval visible.
            axis.set_yscale("log")
            axis.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            axis.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: f"{v:g}"))
            axis.yaxis.set_minor_formatter(ticker.NullFormatter())
        axis.grid(axis="y", alpha=0.3)
    if bars_per_panel <= SIDE_BY_SIDE_BARS:
        panels[0].legend(fontsize="small")
    else:  # beside the panel, where it covers no bar
        panels[0].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    return figure


def _link_values(context: RunContext, metric: str) -> dict[str, list[float]]:
    """Per-message values of a link metric, per codec, in the order they were measured."""
    values: dict[str, list[float]] = {}
    for sample_set in context.samples():
        if sample_set.suite == LINK_SUITE and sample_set.metric == metric:
            values.setdefault(sample_set.codec or "-", []).extend(sample_set.values)
    return values


def _rtt_distribution(context: RunContext) -> Figure:
    figure, axis = plt.subplots(figsize=(6.4, 3.6), dpi=DPI)
    for codec, values in _link_values(context, "rtt").items():
        ordered = sorted(v * 1e6 for v in values)
        fractions = [(i + 1) / len(ordered) for i in range(len(ordered))]
        axis.step(ordered, fractions, where="post", label=f"{codec} (n={len(ordered)})")
    axis.set_xscale("log")  # the tail (scheduling hiccups) is 10-100x the median
    axis.set_xlabel("RTT, encode to decoded reply (µs, log scale)")
    axis.set_ylabel("fraction of messages")
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")
    figure.tight_layout()
    return figure


def _over_time(metric: str, ylabel: str) -> Callable[[RunContext], Figure]:
    """Per-message values in send order, phases joined; dotted lines between phases."""

    def draw(context: RunContext) -> Figure:
        figure, axis = plt.subplots(figsize=(7.2, 3.6), dpi=DPI)
        for index, (codec, phases) in enumerate(_link_phases(context, metric).items()):
            start = 0
            for phase_values in phases:
                xs = range(start, start + len(phase_values))
                label = codec if start == 0 else None
                axis.plot(
                    xs, [v * 1e6 for v in phase_values], ".", ms=3, color=f"C{index}", label=label
                )
                start += len(phase_values)
                axis.axvline(start - 0.5, color=f"C{index}", linestyle=":", linewidth=0.6)
        axis.set_xlabel("message number in send order (phases joined)")
        values = [v for phases in _link_phases(context, metric).values() for p in phases for v in p]
        if min(values) > 0:  # a log axis shows the tail and the bulk; it cannot show zeros
            axis.set_yscale("log")
        axis.set_ylabel(ylabel + (", log scale" if min(values) > 0 else ""))
        axis.grid(alpha=0.3)
        axis.legend(fontsize="small", markerscale=3)
        figure.tight_layout()
        return figure

    return draw


def _link_phases(context: RunContext, metric: str) -> dict[str, list[list[float]]]:
    """Per codec, each phase's per-message values (a sample set is one phase)."""
    phases: dict[str, list[list[float]]] = {}
    for sample_set in context.samples():
        if sample_set.suite == LINK_SUITE and sample_set.metric == metric:
            phases.setdefault(sample_set.codec or "-", []).append(sample_set.values)
    return phases


def _sample_counts(context: RunContext, names: tuple[str, ...]) -> str:
    counts = sorted({r["n"] for r in _records(context, "codec", names)})
    return f"n per bar: {counts[0]}" + (f" to {counts[-1]}." if len(counts) > 1 else ".")


def plans(context: RunContext) -> list[_Plan]:
    """The plots this run's data call for, in report order."""
    found: list[_Plan] = []
    if _records(context, "codec", TIME_METRICS):
        found.append(
            _Plan(
                "codec-times",
                "Encode, decode and decode + access time per codec and profile",
                "Bars: median time of one operation (µs, log scale); whiskers: 95 % CI of "
                "the median (none when n < 6). A sample is the mean over a calibrated loop. "
                + _sample_counts(context, TIME_METRICS),
                lambda c: _bars(c, TIME_METRICS, 1e6, "µs per operation"),
            )
        )
    if _records(context, "codec", SIZE_METRICS):
        found.append(
            _Plan(
                "codec-sizes",
                "Encoded size and deflated size per codec and profile",
                "Bars: median bytes over every payload of the profile; whiskers: 95 % CI "
                "of the median. Deflated: zlib level 6. " + _sample_counts(context, SIZE_METRICS),
                lambda c: _bars(c, SIZE_METRICS, 1.0, "bytes"),
            )
        )
    if _link_values(context, "rtt"):
        found.append(
            _Plan(
                "rtt-cdf",
                "RTT distribution per codec",
                "Empirical CDF of every recorded message's RTT (warm-up excluded).",
                _rtt_distribution,
            )
        )
        found.append(
            _Plan(
                "rtt-time",
                "RTT over time",
                "Each message's RTT (start of encoding to decoded reply) in send order (µs).",
                _over_time("rtt", "RTT (µs)"),
            )
        )
    if _link_values(context, "send_lateness"):
        found.append(
            _Plan(
                "lateness-time",
                "Send lateness over time",
                "How late each periodic tick fired after its absolute deadline (µs).",
                _over_time("send_lateness", "send lateness (µs)"),
            )
        )
    series = telemetry.load(context.directory)
    if series is not None and series.samples:
        shown = [label for label, _lines in telemetry.panels(series)]
        missing = [p[0] for p in telemetry.PANELS if p[0] not in shown]
        found.append(
            _Plan(
                "telemetry",
                "CPU utilisation, frequency and temperature over time",
                f"Telemetry samples (n={len(series.samples)}) on the run's monotonic clock; "
                f"grey bands are suites (named above), coloured spans codec phases, red lines "
                f"throttle events ({len(series.throttles)})."
                + (f" No sensor for: {', '.join(missing)}." if missing else ""),
                lambda _c: telemetry.draw(series),
            )
        )
    return found


def draw(context: RunContext) -> list[Plot]:
    """Render every plot the data call for as PNG."""
    rendered = []
    for plan in plans(context):
        figure = plan.draw(context)
        try:
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=DPI)
        finally:
            plt.close(figure)
        rendered.append(Plot(plan.name, plan.title, plan.caption, buffer.getvalue()))
    return rendered
