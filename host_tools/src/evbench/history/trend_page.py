"""The trend page: one self-contained HTML file that opens on what moved.

Like the run report it needs no network: the plots are PNGs embedded as data
URIs, the style is inline, there is no script. It starts with the series that
changed (worse first, the largest first: the change, when, how sure, and what
changed in the environment with it), a regressed one coloured, then the tested
series too short to judge. Then one plot per series, the changed ones first:
the nightly medians with their 95 % intervals in a readable unit (µs, B, %), on
a log axis where they span a factor of 10 or more, against the run's start time
(partial runs hollow), the change points as dashed lines with their size, and
the nights on which a version changed (image, kernel, Python, protobuf, a
codec, the agent) as dotted lines named underneath. Below each plot, every run
links to its report where that is still on disk.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import math
from collections import defaultdict
from html import escape
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display on a lab PC or in CI

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from evbench.history import changes
from evbench.history.store import SeriesPoint, Store
from evbench.history.trends import series_name, survey, tested
from evbench.report.html import POLICY, STYLE
from evbench.report.units import display_scale
from evbench_agent.analysis import metrics

DPI = 96
#: A store with more series than this draws the first ones and says how many it left out.
MAX_PLOTS = 300
PAGE = "trends.html"
#: A series whose largest value is this many times its smallest is drawn on a log axis.
LOG_SPAN = 10.0
#: The page's own additions to the report's style: a regressed change stands out.
TREND_STYLE = "li.regressed{color:#a00;font-weight:bold}li.improved{color:#176317}"


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    plt.close(figure)
    return buffer.getvalue()


def _time(point: SeriesPoint) -> dt.datetime:
    return dt.datetime.fromisoformat(str(point.run["start_time"]).replace("Z", "+00:00"))


def _plot(
    points: list[SeriesPoint],
    found: list[changes.Change],
    moved: list[tuple[int, str]],
    title: str,
) -> bytes:
    medians = [float(p.record["median"]) for p in points]
    scale, unit = display_scale(medians, str(points[0].record["unit"]))
    figure, axes = plt.subplots(figsize=(9, 3.4), dpi=DPI)
    times = [_time(p) for p in points]
    low = [p.record["ci95_low"] if p.record["ci95_low"] is not None else m
           for p, m in zip(points, medians, strict=True)]  # fmt: skip
    high = [p.record["ci95_high"] if p.record["ci95_high"] is not None else m
            for p, m in zip(points, medians, strict=True)]  # fmt: skip
    errors = [[(m - lo) / scale for m, lo in zip(medians, low, strict=True)],
              [(hi - m) / scale for m, hi in zip(medians, high, strict=True)]]  # fmt: skip
    complete = [i for i, p in enumerate(points) if not p.run["partial"]]
    partial = [i for i, p in enumerate(points) if p.run["partial"]]
    for indices, face in ((complete, "C0"), (partial, "none")):
        if indices:
            axes.errorbar(
                [times[i] for i in indices],  # type: ignore[arg-type]  # matplotlib converts datetimes; its annotations say float
                [medians[i] / scale for i in indices],
                yerr=[[errors[0][i] for i in indices], [errors[1][i] for i in indices]],
                fmt="o",
                color="C0",
                markerfacecolor=face,
                capsize=2,
                label="partial run" if face == "none" else "median, 95% CI",
            )
    positive = [m for m in medians if m > 0]
    if positive and len(positive) == len(medians) and max(positive) >= LOG_SPAN * min(positive):
        axes.set_yscale("log")
        plain = FuncFormatter(lambda value, _position: f"{value:g}")  # 20, not 2x10^1
        axes.yaxis.set_major_formatter(plain)
        axes.yaxis.set_minor_formatter(plain)

    def between(index: int) -> dt.datetime:
        """Halfway between night `index` and the one before it: where a change lies."""
        return times[index] - (times[index] - times[index - 1]) / 2 if index else times[0]

    by_run = {p.run["run_id"]: i for i, p in enumerate(points)}
    for change in found:
        where = between(by_run[change.run_id])
        colour = "C3" if change.worse else "C2"
        axes.axvline(where, color=colour, linestyle="--", linewidth=2)  # type: ignore[arg-type]  # matplotlib converts datetimes; its annotations say float
        axes.annotate(f"{change.pct:+.1f}%", (where, 1.0), xycoords=("data", "axes fraction"),
                      color=colour, ha="left", va="top", fontsize=8)  # fmt: skip
    for index, label in moved:
        axes.axvline(between(index), color="0.5", linestyle=":")  # type: ignore[arg-type]  # matplotlib converts datetimes; its annotations say float
        axes.annotate(label, (between(index), 0.0), xycoords=("data", "axes fraction"),
                      color="0.35", rotation=90, ha="right", va="bottom", fontsize=7)  # fmt: skip
    axes.tick_params(axis="x", labelsize=7, labelrotation=30)
    axes.set_xlabel("run start (UTC)", fontsize=8)
    axes.set_ylabel(unit)
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    return _png(figure)


def _size(change: changes.Change) -> float:
    return abs(math.log(change.split.ratio)) if change.split.ratio > 0 else math.inf


def _moved_list(found: list[changes.Change], short: list[str]) -> str:
    """What moved, worse first and largest first, then the series too short to judge."""
    ordered = sorted(found, key=lambda c: (not (c.worse and not c.accepted), -_size(c)))
    items = []
    for change in ordered:
        kind = "improved" if not change.worse else "accepted" if change.accepted else "regressed"
        said = escape(change.describe()) + (" (accepted)" if change.accepted else "")
        items.append(f'<li class="{kind}">{said}</li>')
    moved = f"<ol>{''.join(items)}</ol>" if items else "<p>No tested series changed.</p>"
    too_short = (
        "<h2>Too short to judge</h2><ul>"
        + "".join(f"<li>{escape(s)}</li>" for s in short)
        + "</ul>"
        if short
        else ""
    )
    return f'<h2 id="moved">What moved</h2>{moved}{too_short}'


def _links(points: list[SeriesPoint]) -> str:
    items = []
    for point in points:
        run = point.run
        directory = run.get("directory")
        report = Path(directory) / "report.html" if directory else None
        label = escape(f"{run['start_time'][:16]} {run['run_id']}")
        if report is not None and report.is_file():
            items.append(f'<a href="{escape(report.as_uri())}">{label}</a>')
        else:
            items.append(f"{label} (report not on disk)")
    return (
        '<details><summary>runs</summary><p class="note">' + "<br>".join(items) + "</p></details>"
    )


def render(store: Store, board: str | None = None) -> tuple[str, int, list[changes.Change]]:
    """The page's HTML, the number of plots, and the change points it shows."""
    surveyed = survey(store, board)
    found = surveyed.changes
    short = {(st.series.board, st.series.key): st for st in surveyed.too_short}
    per_series: dict[tuple[str, tuple], list[changes.Change]] = defaultdict(list)
    for change in found:
        per_series[(change.board, change.series)].append(change)
    order = {
        (c.board, c.series): rank
        for rank, c in reversed(
            list(enumerate(sorted(found, key=lambda c: (not c.worse, -_size(c)))))
        )
    }
    keys = [(name, key) for name in ([board] if board else store.boards())
            for key in store.series_keys(name)]  # fmt: skip
    keys.sort(key=lambda named: order.get(named, len(order)))
    figures: list[str] = []
    left_out = 0
    for name, key in keys:
        points = store.series(name, key, include_partial=True)
        if len(points) < 2:
            continue
        if len(figures) >= MAX_PLOTS:
            left_out += 1
            continue
        moved: list[tuple[int, str]] = []
        previous: dict[str, Any] | None = None
        for index, point in enumerate(points):
            if previous is not None:
                diff = changes.version_changes(previous, point.run)
                if diff:
                    moved.append((index, ", ".join(f"{k} {b}" for k, (_a, b) in diff.items())))
            if not point.run["partial"]:
                previous = point.run
        label = metrics.METRICS.get(key[3].split("[", 1)[0])
        title = f"{name}: {series_name(key)}" + (f" ({label.label})" if label else "")
        png = _plot(points, per_series[(name, key)], moved, title)
        data = base64.b64encode(png).decode("ascii")
        notes = "".join(
            f"<li>{escape(c.describe())}{' (accepted)' if c.accepted else ''}</li>"
            for c in per_series[(name, key)]
        )
        if (name, key) in short:
            notes += f"<li>{escape(short[(name, key)].describe())}</li>"
        elif not tested(key):
            notes += "<li>context: shown beside changes, never tested</li>"
        figures.append(
            f'<figure><img alt="{escape(title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{escape(title)}: nightly median and its 95% CI (n per run in the "
            f"store); dashed: change points, dotted: version changes."
            f"{f'<ul>{notes}</ul>' if notes else ''}{_links(points)}</figcaption></figure>"
        )
    summary = (
        f"<p>{len(store.runs(board=board))} runs, {len(figures)} series plotted"
        + (f", {left_out} more not drawn" if left_out else "")
        + f", {len(found)} change points, {len(short)} tested series too short.</p>"
    )
    title = "evbench trends" + (f": {board}" if board else "")
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f"<title>{escape(title)}</title><style>{STYLE}{TREND_STYLE}</style></head>\n"
        f"<body><h1>{escape(title)}</h1>\n{summary}\n"
        f"{_moved_list(found, [st.describe() for st in surveyed.too_short])}\n"
        f'<p class="note">Method: {escape(METHOD)}</p>\n'
        f"<h2>Series</h2>{''.join(figures)}\n</body></html>\n"
    )
    return page, len(figures), found


METHOD = (
    "only tested metrics (codec timings, link RTT, jitter, ...) raise a change; the night is "
    "the replicate; each codec is also watched relative to the other codecs of the same runs "
    "(the night's machine cancels). Each night the newest 3 nightly figures are tested "
    "against the nights "
    "before them since the last change (exact Mann-Whitney, one-sided: worse), and changes "
    "the watch cannot see (either way) are placed by "
    "binary segmentation with a permutation-tested rank scan; both at p < 0.05 divided by the "
    "board's number of tested series, with the ratio's 95% interval wholly beyond 2%. A series "
    "with fewer nights than the scan needs is 'too short'. Partial runs are drawn hollow and "
    "left out of the detection; context figures are listed beside each change."
)
