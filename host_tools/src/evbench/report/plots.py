"""The report's plots, drawn with matplotlib's Agg canvas on the host only.

No pyplot: each figure is a `Figure` on its own Agg canvas, so no display or GUI
toolkit is looked for, nothing global is kept, and pyplot's import is saved.
Figures are laid out with fixed margins rather than tight_layout, which drew
every figure once more just to measure its labels.

Each plot appears only when the run holds its data, so a codec-only run has
two plots and a run with the link suite and telemetry has more. `plans`
says which plots the data call for without drawing; `figure` lays one out,
measured once so that no label is cut; `draw` renders them to PNG bytes.
Every axis names its unit, every caption its method and n.

A codec has the same colour in every plot of every report: its own entry of
`CODEC_COLOURS`, an A/A copy (`json-aa`) a paler shade of its original, any
other name a colour of `FALLBACK_COLOURS` picked by a stable hash of the name.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
from matplotlib import ticker
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from evbench.report import telemetry
from evbench.report.colours import codec_colours
from evbench.report.context import RunContext
from evbench.report.units import format_value, significant
from evbench_core.analysis import metrics
from evbench_core.results import SampleSet

LINK_SUITE = "link"
DPI = 96
#: Up to this many bars per panel the panels sit side by side; beyond, stacked and wide.
SIDE_BY_SIDE_BARS = 24
#: Up to this many bars per panel each bar carries its value (more would overlap).
LABELLED_BARS = 8
#: A profile name (a user schema's `schema:package.Message`) is wrapped at its dots,
#: colons, dashes and underscores into lines of at most this many characters.
PROFILE_LABEL_WIDTH = 18
#: The space left between a label that stuck out and the figure's grown edge, in inches.
EDGE_PAD = 0.06


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


def _new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)  # Agg: no display, no GUI toolkit on a lab PC or in CI
    return figure


def _legend_above(figure: Figure, handles: list, labels: list[str], top: float) -> None:
    """A legend in its own band above the panels, where it covers no bar or line."""
    columns = min(len(labels), 5)
    figure.legend(
        handles, labels, loc="upper center", ncols=max(columns, 1), fontsize="small",
        frameon=False, bbox_to_anchor=(0.5, 1.0),
    )  # fmt: skip
    rows = -(-len(labels) // max(columns, 1))
    figure.subplots_adjust(top=top - 0.06 * max(rows - 1, 0))


class _PlainLogLocator(ticker.LogLocator):
    """Ticks at 1, 2 and 5 of each decade when they fit the axis; at decades (every
    decade, or every second, third ...) when the view spans too many for that; at
    plain steps (60, 70, 80) when the view holds fewer than two of 1, 2, 5 x 10^k.
    So a log axis always carries at least two labelled ticks: matplotlib's LogLocator
    with subs gives none at all once it must skip decades."""

    def __init__(self) -> None:
        super().__init__(subs=(1.0, 2.0, 5.0))

    def tick_values(self, vmin: float, vmax: float) -> Sequence[float]:
        low, high = sorted((vmin, vmax))
        if not (math.isfinite(low) and math.isfinite(high)) or high <= 0:
            return super().tick_values(vmin, vmax)
        low = max(low, high * 1e-300)
        room = max(2, min(9, self.axis.get_tick_space())) if self.axis is not None else 9
        first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
        inside = lambda ticks: [t for t in ticks if low * (1 - 1e-9) <= t <= high * (1 + 1e-9)]  # noqa: E731
        decades = inside(10.0**k for k in range(first, last + 1))
        steps = inside(s * 10.0**k for k in range(first, last + 1) for s in (1.0, 2.0, 5.0))
        if 2 <= len(steps) <= room:
            return steps
        if len(steps) > room and len(decades) >= 2:
            stride = -(-len(decades) // room)
            return decades[::stride]
        linear = ticker.MaxNLocator(nbins=max(room - 1, 1), steps=[1, 2, 2.5, 5, 10])
        return [t for t in linear.tick_values(low, high) if t > 0 and inside([t])]


def _plain_log_axis(axis: Axis) -> None:
    """A log axis labelled 1, 2, 5, 10, 20 ... in plain numbers: no 6 x 10^2 (and no
    mathtext, whose parser costs more than the rest of the plot)."""
    axis.set_major_locator(_PlainLogLocator())
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: significant(v, 4)))
    # No minor ticks: each tick is a few artists, and eight per decade cost more to draw
    # than the rest of the panel.
    axis.set_minor_locator(ticker.NullLocator())


def _profile_label(profile: str) -> str:
    """`profile` in lines of at most PROFILE_LABEL_WIDTH characters, broken after a dot,
    colon, dash or underscore where it can be (a user schema's `schema:pkg.Message`),
    else between the words of a CamelCase name, else anywhere."""
    pieces = []
    for piece in re.findall(r"[^.:_\-]+[.:_\-]?|[.:_\-]", profile):
        if len(piece) > PROFILE_LABEL_WIDTH:
            piece = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "\0", piece)
        for word in piece.split("\0"):
            pieces += [
                word[i : i + PROFILE_LABEL_WIDTH] for i in range(0, len(word), PROFILE_LABEL_WIDTH)
            ]
    lines = [""]
    for piece in pieces:
        if lines[-1] and len(lines[-1]) + len(piece) > PROFILE_LABEL_WIDTH:
            lines.append("")
        lines[-1] += piece
    return "\n".join(lines)


def _bar(record: dict[str, Any], statistic: str, scale: float) -> tuple[float, float, float]:
    """A bar's height and its whiskers below and above it, in the panel's unit: the mean
    and the smallest to the largest value (`statistic` "mean", where the record has a
    mean), else the median and its 95 % CI; a missing bound draws no whisker."""
    if statistic == "mean" and record.get("mean") is not None:
        value = record["mean"] * scale
        low, high = record.get("min"), record.get("max")
    else:
        value = record["median"] * scale
        low, high = record.get("ci95_low"), record.get("ci95_high")
    below = max(value - low * scale, 0.0) if low is not None else 0.0
    above = max(high * scale - value, 0.0) if high is not None else 0.0
    return value, below, above


def _bar_figure(panels: int, bars_per_panel: int) -> tuple[Figure, Any, bool]:
    """The figure, its panels (one per metric) and whether they stand side by side (few
    bars each) or stacked as wide panels (many profiles)."""
    if bars_per_panel <= SIDE_BY_SIDE_BARS:
        figure = _new_figure(4.2 * panels, 4.2)
        return figure, figure.subplots(1, panels, squeeze=False)[0], True
    figure = _new_figure(min(18.0, 3.0 + 0.1 * bars_per_panel), 3.4 * panels + 0.6)
    return figure, figure.subplots(panels, 1, squeeze=False)[:, 0], False


def _dress_bar_panel(
    axis: Any, metric: str, profiles: Sequence[str], unit: str, statistic: str, scale: float
) -> None:
    """A panel's profile ticks, title, unit and grid; a log axis for timings."""
    axis.set_xticks(
        range(len(profiles)), [_profile_label(p) for p in profiles], rotation=30,
        ha="right", rotation_mode="anchor",
    )  # fmt: skip
    axis.set_title(_label(metric))
    axis.set_ylabel(f"{unit} ({statistic})")
    if scale != 1.0:
        # Codecs differ by 50x: a log axis keeps the small bar and its interval visible.
        axis.set_yscale("log")
        _plain_log_axis(axis.yaxis)
    axis.grid(axis="y", alpha=0.3)


@dataclass(frozen=True)
class _BarPanels:
    """What the bar panels draw: the metrics present (a panel each), the profiles (on x)
    and codecs (a bar each) that have records, and each record by (metric, codec, profile)."""

    metrics: list[str]
    profiles: list[str]
    codecs: list[str]
    records: dict[tuple[str, str, str], dict[str, Any]]

    @classmethod
    def of(cls, context: RunContext, names: tuple[str, ...]) -> _BarPanels:
        records = _records(context, "codec", names)
        metrics = {r["metric"] for r in records}
        codecs = {r["codec"] for r in records}
        return cls(
            [m for m in names if m in metrics],
            sorted({r["profile"] for r in records}),
            [c for c in context.codecs() if c in codecs],
            {(r["metric"], r["codec"], r["profile"]): r for r in records},
        )

    @property
    def bars_per_panel(self) -> int:
        return len(self.profiles) * len(self.codecs)

    def placed(self, metric: str) -> list[tuple[float, str, dict[str, Any]]]:
        """(x, codec, record) of each bar of `metric`'s panel: a group per profile, the
        codecs side by side within it."""
        width = 0.8 / max(len(self.codecs), 1)
        return [
            (position + (index - (len(self.codecs) - 1) / 2) * width, codec, record)
            for index, codec in enumerate(self.codecs)
            for position, profile in enumerate(self.profiles)
            if (record := self.records.get((metric, codec, profile))) is not None
        ]


def _bar_panel(
    axis: Any,
    panels: _BarPanels,
    metric: str,
    colours: dict[str, Any],
    scale: float,
    unit: str,
    statistic: str,
) -> None:
    """One metric's bars with their whiskers, labelled while they do not overlap."""
    placed = panels.placed(metric)
    xs = [x for x, _, _ in placed]
    drawn = [_bar(record, statistic, scale) for _, _, record in placed]
    heights = [height for height, _, _ in drawn]
    low, high = [below for _, below, _ in drawn], [above for _, _, above in drawn]
    # One bar call and one errorbar call per panel: each call builds its own
    # container of artists, and per-codec calls cost several times the drawing.
    width = 0.8 / max(len(panels.codecs), 1)
    bars = axis.bar(xs, heights, width, color=[colours[codec] for _, codec, _ in placed])
    axis.errorbar(xs, heights, yerr=[low, high], fmt="none", ecolor="black", capsize=3)
    if panels.bars_per_panel <= LABELLED_BARS:  # beyond that the labels overlap
        # As the tables write the figure: a size as "995.5 B", a time to 3 digits.
        labels = [
            format_value(h, unit, metric) if unit == "bytes" else significant(h) for h in heights
        ]
        axis.bar_label(bars, labels=labels, fontsize="x-small")
    _dress_bar_panel(axis, metric, panels.profiles, unit, statistic, scale)


def _bars(
    context: RunContext, names: tuple[str, ...], scale: float, unit: str, statistic: str
) -> Figure:
    """One panel per metric; profiles on x, a bar per codec. `statistic` "median": bars
    the median, whiskers its 95 % CI; "mean" (sizes, which the tables and the answer give
    as means): bars the mean, whiskers the smallest to the largest value."""
    panels = _BarPanels.of(context, names)
    figure, axes, side_by_side = _bar_figure(len(panels.metrics), panels.bars_per_panel)
    colours = codec_colours(panels.codecs)
    for axis, metric in zip(axes, panels.metrics, strict=True):
        _bar_panel(axis, panels, metric, colours, scale, unit, statistic)
    bottom = 0.2 if side_by_side else 0.1
    figure.subplots_adjust(left=0.08, right=0.98, bottom=bottom, wspace=0.3, hspace=0.5)
    handles = [Patch(color=colours[codec]) for codec in panels.codecs]
    _legend_above(figure, handles, panels.codecs, 0.82 if side_by_side else 0.9)
    return figure


def _series_codec(name: str) -> str:
    """The codec of a series `_series_name` named."""
    return name.split(" ", 1)[0]


def _series_name(sample_set: SampleSet) -> str:
    """A codec, with its link phase when the run has more than one kind."""
    phase = sample_set.params.get("phase")
    return f"{sample_set.codec or '-'} {phase}" if phase else sample_set.codec or "-"


def _link_phases(context: RunContext, metric: str) -> dict[str, list[Sequence[float]]]:
    """Per codec and phase kind, each phase's per-message values (a sample set is one
    phase), in the order they were measured: periodic and capacity are never joined."""
    phases: dict[str, list[Sequence[float]]] = {}
    for sample_set in context.samples():
        if sample_set.suite == LINK_SUITE and sample_set.metric == metric:
            phases.setdefault(_series_name(sample_set), []).append(sample_set.values)
    return phases


def _rtt_distribution(context: RunContext) -> Figure:
    series = _link_phases(context, "rtt")
    figure = _new_figure(7.2, 4.4)
    axis = figure.subplots()
    handles = []
    colours = codec_colours(_series_codec(name) for name in series)
    styles: dict[str, str] = {}  # one codec's phase kinds: one colour, a line style each
    for name, phases in series.items():
        ordered = sorted(v * 1e6 for phase in phases for v in phase)
        fractions = [(i + 1) / len(ordered) for i in range(len(ordered))]
        codec = _series_codec(name)
        style = ("-", "--", ":", "-.")[sum(_series_codec(n) == codec for n in styles) % 4]
        styles[name] = style
        (line,) = axis.step(ordered, fractions, where="post", color=colours[codec], linestyle=style)
        handles.append(line)
    labels = [f"{name} (n={sum(map(len, p))})" for name, p in series.items()]
    axis.set_xscale("log")  # the tail (scheduling hiccups) is 10-100x the median
    _plain_log_axis(axis.xaxis)
    axis.set_xlabel("RTT, encode to decoded reply (µs, log scale)")
    axis.set_ylabel("fraction of messages")
    axis.grid(alpha=0.3)
    figure.subplots_adjust(left=0.1, right=0.97, bottom=0.13)
    _legend_above(figure, handles, labels, 0.84)
    return figure


def _over_time(metric: str, ylabel: str) -> Callable[[RunContext], Figure]:
    """Per-message values in send order, one small panel per codec (and phase kind) on
    shared axes, so many codecs stay readable; dotted lines between phases."""

    def draw(context: RunContext) -> Figure:
        series = _link_phases(context, metric)
        values = [v for phases in series.values() for p in phases for v in p]
        logarithmic = min(values) > 0  # a log axis shows the tail and the bulk; not zeros
        columns = 1 if len(series) <= 3 else 2
        rows = -(-len(series) // columns)
        figure = _new_figure(7.2 if columns == 1 else 9.6, 0.9 + 1.5 * rows)
        axes = figure.subplots(rows, columns, squeeze=False, sharex=True, sharey=True)
        panels = zip(axes.flat, series.items(), strict=False)  # a spare panel stays empty
        colours = codec_colours(_series_codec(name) for name in series)
        for axis, (name, phases) in panels:
            # One line of dots and one collection of phase boundaries per panel (an artist
            # per phase cost more to build and draw than the dots themselves).
            joined = [v * 1e6 for phase_values in phases for v in phase_values]
            axis.plot(range(len(joined)), joined, ".", ms=2, color=colours[_series_codec(name)])
            ends, start = [], 0
            for phase_values in phases:
                start += len(phase_values)
                ends.append(start - 0.5)
            axis.vlines(
                ends, 0, 1, transform=axis.get_xaxis_transform(), colors="0.5",
                linestyles=":", linewidth=0.6,
            )  # fmt: skip
            axis.set_title(f"{name} ({len(phases)} phases)", fontsize="small", loc="left")
            if logarithmic:
                axis.set_yscale("log")
                _plain_log_axis(axis.yaxis)
            axis.grid(alpha=0.3)
        for axis in list(axes.flat)[len(series) :]:
            axis.set_visible(False)
        figure.supxlabel("message number in send order (phases joined)", fontsize="small")
        figure.supylabel(ylabel + (", log scale" if logarithmic else ""), fontsize="small")
        height = figure.get_figheight()
        figure.subplots_adjust(
            left=0.14, right=0.98, top=1 - 0.45 / height, bottom=0.55 / height, hspace=0.45
        )
        return figure

    return draw


def _sample_counts(context: RunContext, names: tuple[str, ...]) -> str:
    counts = sorted({r["n"] for r in _records(context, "codec", names)})
    return f"n per bar: {counts[0]}" + (f" to {counts[-1]}." if len(counts) > 1 else ".")


def _deflate_levels(context: RunContext) -> str:
    """The zlib level the run's deflated sizes name in their params (the suite's choice)."""
    levels = sorted(
        {
            str(r["params"]["zlib_level"])
            for r in _records(context, "codec", ("size_deflate",))
            if isinstance(r.get("params"), dict) and "zlib_level" in r["params"]
        }
    )
    return f"Deflated: zlib level {' and '.join(levels)}. " if levels else ""


def plans(context: RunContext) -> list[_Plan]:
    """The plots this run's data call for, in report order."""
    found: list[_Plan] = []
    if _records(context, "codec", metrics.CODEC_TIMED):
        found.append(
            _Plan(
                "codec-times",
                "Encode, decode and decode + access time per codec and profile",
                "Bars: median time of one operation (µs, log scale); whiskers: 95 % CI of "
                "the median (none when n < 6). A sample is the mean over a calibrated loop. "
                + _sample_counts(context, metrics.CODEC_TIMED),
                lambda c: _bars(c, metrics.CODEC_TIMED, 1e6, "µs per operation", "median"),
            )
        )
    if _records(context, "codec", metrics.CODEC_SIZES):
        found.append(
            _Plan(
                "codec-sizes",
                "Encoded size and deflated size per codec and profile",
                "Bars: mean bytes over every payload of the profile, the figure the tables "
                "and the answer give; whiskers: the smallest to the largest payload. "
                + _deflate_levels(context)
                + _sample_counts(context, metrics.CODEC_SIZES),
                lambda c: _bars(c, metrics.CODEC_SIZES, 1.0, "bytes", "mean"),
            )
        )
    if _link_phases(context, "rtt"):
        found.append(
            _Plan(
                "rtt-cdf",
                "RTT distribution per codec",
                "Empirical CDF of every recorded message's RTT (warm-up excluded), per codec "
                "and phase kind (periodic and capacity phases are never pooled).",
                _rtt_distribution,
            )
        )
        found.append(
            _Plan(
                "rtt-time",
                "RTT over time",
                "Each message's RTT (start of encoding to decoded reply) in send order (µs), "
                "one panel per codec and phase kind; dotted lines between phases.",
                _over_time("rtt", "RTT (µs)"),
            )
        )
    if _link_phases(context, "send_lateness"):
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


def _fit(figure: Figure) -> None:
    """Grow the figure by whatever its labels stick out of it (a long profile name under
    a bar, a wide legend), keeping every panel's size and place relative to its labels:
    one measurement of the laid-out figure, no second draw."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    tight = figure.get_tightbbox(renderer)  # inches
    if tight is None:
        return
    width, height = figure.get_size_inches()
    # Only a side something sticks out of grows, by that much and a margin.
    left = EDGE_PAD - tight.x0 if tight.x0 < 0 else 0.0
    bottom = EDGE_PAD - tight.y0 if tight.y0 < 0 else 0.0
    right = tight.x1 + EDGE_PAD - width if tight.x1 > width else 0.0
    top = tight.y1 + EDGE_PAD - height if tight.y1 > height else 0.0
    if not (left or bottom or right or top):
        return
    new_width, new_height = width + left + right, height + bottom + top
    for axis in figure.axes:
        box = axis.get_position()
        axis.set_position(
            (
                (box.x0 * width + left) / new_width,
                (box.y0 * height + bottom) / new_height,
                box.width * width / new_width,
                box.height * height / new_height,
            )
        )
    for text in figure.texts:  # supxlabel, supylabel: in figure fractions
        x, y = text.get_position()
        text.set_position(((x * width + left) / new_width, (y * height + bottom) / new_height))
    for legend in figure.legends:  # anchored to a point or a box of the old figure
        anchor = legend.get_bbox_to_anchor().transformed(figure.dpi_scale_trans.inverted())
        legend.set_bbox_to_anchor(
            (
                (anchor.x0 + left) / new_width,
                (anchor.y0 + bottom) / new_height,
                anchor.width / new_width,
                anchor.height / new_height,
            ),
            transform=figure.transFigure,
        )
    figure.set_size_inches(new_width, new_height)


def figure(plan: _Plan, context: RunContext) -> Figure:
    """`plan`'s figure, laid out so that no label is cut by the figure's edge."""
    # Titles at a fixed height: placing them "automatically" measures every tick
    # label of the axes once more at each draw.
    with matplotlib.rc_context({"axes.titley": 1.0}):
        drawn = plan.draw(context)
        _fit(drawn)
    return drawn


def draw(context: RunContext) -> list[Plot]:
    """Render every plot the data call for as PNG."""
    rendered = []
    for plan in plans(context):
        with matplotlib.rc_context({"axes.titley": 1.0}):
            drawn = figure(plan, context)
            buffer = io.BytesIO()
            drawn.savefig(buffer, format="png", dpi=DPI)
        rendered.append(Plot(plan.name, plan.title, plan.caption, buffer.getvalue()))
    return rendered
