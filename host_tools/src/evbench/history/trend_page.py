"""The trend page: one self-contained HTML file that opens on what moved.

Like the run report it needs no network: the plots are PNGs embedded as data
URIs, the style is inline, there is no script. It starts with the series that
changed (worse first, the largest first: the change, when, how sure, and what
changed in the environment with it), a regressed one coloured, then the tested
series too short to judge in one line. Then a full plot per series that changed
(at most MAX_PLOTS): the nightly medians with their 95 % intervals in a
readable unit (µs, B, %), on a log axis where they span a factor of 10 or more,
against the run's start time (partial runs hollow), the change points as dashed
lines with their size, and the nights on which a version changed (image,
kernel, Python, protobuf, a codec, the agent) as dotted lines named underneath.
Every other series gets a small plot drawn without a plotting library
(`sparkline`, at most MAX_SMALL), with its nights, newest value and range; the
runs are listed once at the end, each linked to its report where that is still
on disk. The page's size is bounded by those caps (about 40 x 40 kB of full
plots, 600 x 1.5 kB of small ones). 35 nights x 36 tested series: about 4 s
here (benchmarks/README.md).
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import itertools
import math
import struct
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display on a lab PC or in CI

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from evbench.history import nightly_watch, window_tests
from evbench.history.board_change import Change
from evbench.history.run_differences import plan, version_changes
from evbench.history.store import SeriesPoint, Store
from evbench.history.trends import Key, series_name, survey, tested
from evbench.report.html import POLICY, STYLE
from evbench.report.units import display_scale
from evbench_core.analysis import metrics

DPI = 96
#: Full plots: the series with a change, worse and larger first; more are counted, not drawn.
MAX_PLOTS = 40
#: Small plots (`sparkline`) of the other series, tested first; more are counted.
MAX_SMALL = 600
SPARK_WIDTH, SPARK_HEIGHT = 360, 110
#: Runs listed (newest first) with a link to their report.
MAX_RUN_LINKS = 400
PAGE = "trends.html"
#: A series whose largest value is this many times its smallest is drawn on a log axis.
LOG_SPAN = 10.0
#: The page's own additions to the report's style: a regressed change stands out.
TREND_STYLE = "li.regressed{color:#a00;font-weight:bold}li.improved{color:#176317}"
#: A series of one board: the board's name and the series' key.
BoardSeries = tuple[str, Key]


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    plt.close(figure)
    return buffer.getvalue()


def _time(point: SeriesPoint) -> dt.datetime:
    return dt.datetime.fromisoformat(str(point.run["start_time"]).replace("Z", "+00:00"))


def _plot(
    points: list[SeriesPoint],
    found: list[Change],
    moved: list[tuple[int, str]],
    title: str,
) -> bytes:
    """One series' full plot as a PNG: its nights, its change points, its version changes."""
    medians = [float(p.record["median"]) for p in points]
    scale, unit = display_scale(medians, str(points[0].record["unit"]))
    figure, axes = plt.subplots(figsize=(9, 3.4), dpi=DPI)
    times = [_time(p) for p in points]
    _draw_nights(axes, points, times, medians, scale)
    _log_axis_if_wide(axes, medians)
    _mark_changes(axes, points, times, found)
    _mark_version_moves(axes, times, moved)
    _label_axes(axes, unit, title)
    figure.tight_layout()
    return _png(figure)


def _error_bars(points: list[SeriesPoint], medians: list[float], scale: float) -> list[list[float]]:
    """Each night's 95 % interval as its distances below and above the median, in the
    display unit (matplotlib's `yerr`); a night stored without one gets none (zero)."""
    low = [p.record["ci95_low"] if p.record["ci95_low"] is not None else m
           for p, m in zip(points, medians, strict=True)]  # fmt: skip
    high = [p.record["ci95_high"] if p.record["ci95_high"] is not None else m
            for p, m in zip(points, medians, strict=True)]  # fmt: skip
    return [[(m - lo) / scale for m, lo in zip(medians, low, strict=True)],
            [(hi - m) / scale for m, hi in zip(medians, high, strict=True)]]  # fmt: skip


def _draw_nights(
    axes: Axes,
    points: list[SeriesPoint],
    times: list[dt.datetime],
    medians: list[float],
    scale: float,
) -> None:
    """The nightly medians with their intervals: partial runs hollow, because the
    detection leaves them out and the eye should too."""
    errors = _error_bars(points, medians, scale)
    complete = [i for i, p in enumerate(points) if not p.run["partial"]]
    partial = [i for i, p in enumerate(points) if p.run["partial"]]
    kinds = ((complete, "C0", "median, 95% CI"), (partial, "none", "partial run"))
    for indices, face, label in kinds:
        if indices:
            axes.errorbar(
                [times[i] for i in indices],  # type: ignore[arg-type]  # matplotlib converts datetimes; its annotations say float
                [medians[i] / scale for i in indices],
                yerr=[[errors[0][i] for i in indices], [errors[1][i] for i in indices]],
                fmt="o",
                color="C0",
                markerfacecolor=face,
                capsize=2,
                label=label,
            )


def _log_axis_if_wide(axes: Axes, medians: list[float]) -> None:
    """A log axis where the (all positive) medians span LOG_SPAN or more: on a linear
    one a ten-fold step would flatten the nights on either side of it."""
    positive = [m for m in medians if m > 0]
    if positive and len(positive) == len(medians) and max(positive) >= LOG_SPAN * min(positive):
        axes.set_yscale("log")
        plain = FuncFormatter(lambda value, _position: f"{value:g}")  # 20, not 2x10^1
        axes.yaxis.set_major_formatter(plain)
        axes.yaxis.set_minor_formatter(plain)


def _between(times: list[dt.datetime], index: int) -> dt.datetime:
    """Halfway between night `index` and the one before it: where a change lies."""
    return times[index] - (times[index] - times[index - 1]) / 2 if index else times[0]


def _mark_changes(
    axes: Axes, points: list[SeriesPoint], times: list[dt.datetime], found: list[Change]
) -> None:
    """Each change point as a dashed line (red worse, green better) with its size on top."""
    by_run = {p.run["run_id"]: i for i, p in enumerate(points)}
    for change in found:
        where = _between(times, by_run[change.run_id])
        colour = "C3" if change.worse else "C2"
        axes.axvline(where, color=colour, linestyle="--", linewidth=2)  # type: ignore[arg-type]  # matplotlib converts datetimes; its annotations say float
        axes.annotate(f"{change.pct:+.1f}%", (where, 1.0), xycoords=("data", "axes fraction"),
                      color=colour, ha="left", va="top", fontsize=8)  # fmt: skip


def _mark_version_moves(axes: Axes, times: list[dt.datetime], moved: list[tuple[int, str]]) -> None:
    """Each night on which a version changed as a dotted line, named underneath: a change
    point beside one has a likely cause."""
    for index, label in moved:
        where = _between(times, index)
        axes.axvline(where, color="0.5", linestyle=":")  # type: ignore[arg-type]  # matplotlib converts datetimes; its annotations say float
        axes.annotate(label, (where, 0.0), xycoords=("data", "axes fraction"),
                      color="0.35", rotation=90, ha="right", va="bottom", fontsize=7)  # fmt: skip


def _label_axes(axes: Axes, unit: str, title: str) -> None:
    """The plot's title, axis labels, grid and legend, in small type: a page holds MAX_PLOTS."""
    axes.tick_params(axis="x", labelsize=7, labelrotation=30)
    axes.set_xlabel("run start (UTC)", fontsize=8)
    axes.set_ylabel(unit)
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="upper left")


def _size(change: Change) -> float:
    return abs(math.log(change.split.ratio)) if change.split.ratio > 0 else math.inf


def _moved_list(found: list[Change], short: str) -> str:
    """What moved, worse first and largest first, then the series too short in one line."""
    ordered = sorted(found, key=lambda c: (not (c.worse and not c.accepted), -_size(c)))
    items = []
    for change in ordered:
        kind = "improved" if not change.worse else "accepted" if change.accepted else "regressed"
        said = escape(change.describe()) + (" (accepted)" if change.accepted else "")
        items.append(f'<li class="{kind}">{said}</li>')
    moved = f"<ol>{''.join(items)}</ol>" if items else "<p>No tested series changed.</p>"
    too_short = f'<p class="note">{escape(short)}</p>' if short else ""
    return f'<h2 id="moved">What moved</h2>{moved}{too_short}'


def _run_links(runs: list[dict[str, Any]]) -> str:
    """Every run once, newest first, with its sample plan, linked to its report where that
    is still on disk (a stored manifest that cannot say its plan: FormatError)."""
    items = []
    for run in sorted(runs, key=lambda r: str(r["start_time"]), reverse=True)[:MAX_RUN_LINKS]:
        directory = run.get("directory")
        report = Path(directory) / "report.html" if directory else None
        # the night's sample plan beside it (quick or full, other processes or values)
        planned = plan(run) if "manifest" in run else "?"
        label = escape(f"{run['start_time'][:16]} {run['run_id']} (plan: {planned})")
        if report is not None and report.is_file():
            items.append(f'<a href="{escape(report.as_uri())}">{label}</a>')
        else:
            items.append(f"{label} (report not on disk)")
    more = len(runs) - len(items)
    tail = f"<br>{more} older runs not listed" if more > 0 else ""
    return f'<h2>Runs</h2><p class="note">{"<br>".join(items)}{tail}</p>'


def _png_bytes(pixels: np.ndarray) -> bytes:
    """A greyscale PNG of `pixels` (uint8 rows), written directly: no plotting library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    height, width = pixels.shape
    rows = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))  # fmt: skip


def sparkline(values: Sequence[float], marks: Sequence[int] = ()) -> bytes:
    """A small plot of nightly values as a PNG (SPARK_WIDTH x SPARK_HEIGHT): the nights
    joined by a line, each a dot, on a log axis where they span LOG_SPAN or more, the
    nights in `marks` (change points) as grey columns. Drawn with numpy, in about a
    millisecond: a page of hundreds of series stays fast and small."""
    pixels = np.full((SPARK_HEIGHT, SPARK_WIDTH), 255, dtype=np.uint8)
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return _png_bytes(pixels)
    positive = min(finite) > 0 and max(finite) >= LOG_SPAN * min(finite)
    ys = np.array([math.log(v) if positive else v for v in finite], dtype=float)
    low, high = float(ys.min()), float(ys.max())
    margin = 6
    span = high - low or 1.0
    rows = np.round(margin + (high - ys) / span * (SPARK_HEIGHT - 2 * margin - 1)).astype(int)
    if high == low:
        rows[:] = SPARK_HEIGHT // 2
    step = (SPARK_WIDTH - 2 * margin - 1) / (len(ys) - 1)
    columns = np.round(margin + np.arange(len(ys)) * step).astype(int)
    for index in marks:
        if 0 < index < len(columns):
            pixels[:, (columns[index - 1] + columns[index]) // 2] = 170
    for (x0, y0), (x1, y1) in itertools.pairwise(zip(columns, rows, strict=True)):
        count = max(abs(x1 - x0), abs(y1 - y0)) + 1
        pixels[np.linspace(y0, y1, count).round().astype(int),
               np.linspace(x0, x1, count).round().astype(int)] = 90  # fmt: skip
    for x, y in zip(columns, rows, strict=True):
        pixels[max(0, y - 1) : y + 2, max(0, x - 1) : x + 2] = 0
    return _png_bytes(pixels)


def _figure(title: str, png: bytes, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="{escape(title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{caption}</figcaption></figure>")  # fmt: skip


def _version_moves(points: list[SeriesPoint]) -> list[tuple[int, str]]:
    """(index, what) of the nights at which a version or the environment changed."""
    moved: list[tuple[int, str]] = []
    previous: dict[str, Any] | None = None
    for index, point in enumerate(points):
        if previous is not None:
            diff = version_changes(previous, point.run)
            if diff:
                moved.append((index, ", ".join(f"{k} {b}" for k, (_a, b) in diff.items())))
        if not point.run["partial"]:
            previous = point.run
    return moved


def _quiet(_message: str) -> None:
    pass


def _plot_order(
    store: Store, boards: list[str], found: list[Change]
) -> tuple[list[BoardSeries], list[BoardSeries]]:
    """The series with a change, ordered by their first change listed (worse first, then
    larger), and every other series, tested ones first: the page's two parts in order."""
    order = {
        (c.board, c.series): rank
        for rank, c in reversed(
            list(enumerate(sorted(found, key=lambda c: (not c.worse, -_size(c)))))
        )
    }
    keys = [(name, key) for name in boards for key in store.series_keys(name)]
    changed = sorted((k for k in keys if k in order), key=lambda k: order[k])
    rest = sorted((k for k in keys if k not in order), key=lambda k: (not tested(k[1]), k))
    return changed, rest


def _full_plots(
    store: Store,
    changed: list[BoardSeries],
    found: list[Change],
    progress: Callable[[str], None],
) -> list[str]:
    """A full plot of each series with a change, at most MAX_PLOTS, with its changes:
    matplotlib is the page's slow part, so each plot is reported as it is drawn."""
    per_series: dict[BoardSeries, list[Change]] = defaultdict(list)
    for change in found:
        per_series[(change.board, change.series)].append(change)
    figures: list[str] = []
    for number, (name, key) in enumerate(changed[:MAX_PLOTS], 1):
        progress(f"trend page: plot {number} of {min(len(changed), MAX_PLOTS)}: "
                 f"{name} {series_name(key)}")  # fmt: skip
        figures.append(_full_figure(store, name, key, per_series[(name, key)]))
    return figures


def _full_figure(store: Store, name: str, key: Key, changes: list[Change]) -> str:
    """One changed series' plot (partial runs included, hollow), its change points listed
    underneath in words."""
    points = store.series(name, key, include_partial=True)
    label = metrics.METRICS.get(key[3].split("[", 1)[0])
    title = f"{name}: {series_name(key)}" + (f" ({label.label})" if label else "")
    png = _plot(points, changes, _version_moves(points), title)
    notes = "".join(
        f"<li>{escape(c.describe())}{' (accepted)' if c.accepted else ''}</li>" for c in changes
    )
    caption = (f"{escape(title)}: nightly median and its 95% CI (n per run in the store); "
               f"dashed: change points, dotted: version changes.<ul>{notes}</ul>")  # fmt: skip
    return _figure(title, png, caption)


def _small_plots(
    store: Store,
    rest: list[BoardSeries],
    short: set[BoardSeries],
    progress: Callable[[str], None],
) -> list[str]:
    """A small plot of each other series, at most MAX_SMALL; one of fewer than 2 nights
    has nothing to draw and is left out."""
    small: list[str] = []
    for name, key in rest[:MAX_SMALL]:
        figure = _small_figure(store, name, key, (name, key) in short)
        if figure is not None:
            small.append(figure)
    if rest:  # counted once drawn: a series of one night has none (sparklines are quick)
        progress(f"trend page: {len(small)} small plots of {len(rest)} other series")
    return small


def _small_figure(store: Store, name: str, key: Key, too_short: bool) -> str | None:
    """One unchanged series' sparkline, captioned with its nights, newest value, range and
    why it has no change (too short, watched, or never tested); None below 2 nights."""
    points = [p for p in store.series(name, key) if p.record["median"] is not None]
    if len(points) < 2:
        return None
    values = [float(p.record["median"]) for p in points]
    scale, unit = display_scale(values, str(points[0].record["unit"]))
    what = ("too short to judge" if too_short else "watched, no change"
            if tested(key) else "context: never tested")  # fmt: skip
    title = f"{name}: {series_name(key)}"
    caption = (f"{escape(title)}: {len(values)} nights, newest {values[-1] / scale:.4g} "
               f"{escape(unit)} (range {min(values) / scale:.4g} to "
               f"{max(values) / scale:.4g}); {what}")  # fmt: skip
    return _figure(title, sparkline(values), caption)


def _summary(
    *, runs: int, plotted: int, small: int, left_out: int, changes: int, too_short: int
) -> str:
    """The page's first line: what it counted and drew, and how many it left out."""
    return (
        f"<p>{runs} runs, {plotted} series with a change plotted, "
        f"{small} others drawn small"
        + (f", {left_out} more not drawn" if left_out else "")
        + f", {changes} change points, {too_short} tested series too short.</p>"
    )


def _document(
    title: str,
    summary: str,
    moved: str,
    figures: list[str],
    small: list[str],
    runs: list[dict[str, Any]],
) -> str:
    """The page itself: head (the report's policy and style), what moved, the full plots,
    the method, the small plots, the runs."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f"<title>{escape(title)}</title><style>{STYLE}{TREND_STYLE}</style></head>\n"
        f"<body><h1>{escape(title)}</h1>\n{summary}\n"
        f"{moved}\n"
        f"<h2>Series that changed</h2>{''.join(figures) or '<p>None.</p>'}\n"
        f'<p class="note">Method: {escape(METHOD)}</p>\n'
        f"<h2>Every other series</h2>{''.join(small) or '<p>None.</p>'}\n"
        f"{_run_links(runs)}\n</body></html>\n"
    )


def render(
    store: Store, board: str | None = None, progress: Callable[[str], None] = _quiet
) -> tuple[str, int, list[Change]]:
    """The page's HTML, the number of plots, and the change points it shows.

    It opens on what moved (the changes, worse first, and the too-short series in one
    line). A series with a change gets a full plot (at most MAX_PLOTS); every other
    series a small one (`sparkline`, at most MAX_SMALL), tested series first; the runs
    are listed once at the end. `progress` is told what is being done (stderr)."""
    started = time.monotonic()
    boards = [board] if board else store.boards()
    progress(f"trend page: surveying {len(boards)} board(s) for changes")
    surveyed = survey(store, board)
    found = surveyed.changes
    short = {(st.series.board, st.series.key) for st in surveyed.too_short}
    progress(f"trend page: {len(found)} change points, {len(surveyed.statuses)} tested series "
             f"({time.monotonic() - started:.1f} s)")  # fmt: skip
    changed, rest = _plot_order(store, boards, found)
    figures = _full_plots(store, changed, found, progress)
    small = _small_plots(store, rest, short, progress)
    left_out = max(0, len(changed) - MAX_PLOTS) + max(0, len(rest) - MAX_SMALL)
    runs = store.runs(board=board)
    summary = _summary(runs=len(runs), plotted=len(figures), small=len(small),
                       left_out=left_out, changes=len(found), too_short=len(short))  # fmt: skip
    title = "evbench trends" + (f": {board}" if board else "")
    moved = _moved_list(found, _too_short_text(surveyed.too_short))
    page = _document(title, summary, moved, figures, small, runs)
    progress(f"trend page: done in {time.monotonic() - started:.1f} s")
    return page, len(figures) + len(small), found


def _too_short_text(short: list[Any]) -> str:
    """The tested series too short to judge, in one line."""
    if not short:
        return ""
    have = sorted({s.nights for s in short})
    nights = f"{have[0]}" if len(have) == 1 else f"{have[0]} to {have[-1]}"
    tested_from = window_tests.MIN_REFERENCE + nightly_watch.WINDOW
    return (f"too short: {len(short)} tested series have {nights} nights: the watch tests a "
            f"series from its night {tested_from} on.")  # fmt: skip


METHOD = (
    "only tested metrics (codec timings, link RTT, jitter, ...) raise a change; the night is "
    "the replicate; each codec is also watched relative to the other codecs of the same runs "
    "(the night's load cancels). Each night the newest 3 nightly figures are tested against "
    "the nights before them since the last change: exact Mann-Whitney (one-sided: worse) and "
    "a step test beside a local line through the newest 12 nights (an absolute series also "
    "against the random walk its nights show: a lab's load wanders), both at a false "
    "discovery rate of 5 % over the board's series (Benjamini-Hochberg); older changes "
    "(either way) by binary segmentation with a permutation-tested rank scan at 0.05 divided "
    "by the board's number of tested series. A change needs the ratio's 95% interval wholly "
    "beyond 2%. Partial runs are drawn hollow and left out of the detection; context figures "
    "are listed beside each change."
)
