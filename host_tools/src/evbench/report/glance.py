"""The answer at a glance: what `evbench run` prints by default, one screen of it.

The answer's sentences wrapped to the terminal's 120 columns, the key rows (size,
encode, decode, RTT, jitter, and per profile how many of the budgeted buses each codec
fits at the run's rate, the buses named under the table) in a table that fits 100, and
where the rest is: the full table, each codec's medians and the bus budget
(`--details`, `evbench report --terminal RUN`) and the report with its plots.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from pathlib import Path

from evbench.report import system_view, table
from evbench_agent.buses import budget
from evbench_agent.comparison import FACT, TESTED, Comparison, Row

#: No line of the default output is wider than this.
MAX_LINE = 120
#: The key rows' table fits this, so it reads in a half-screen terminal too.
MAX_TABLE = 100
#: The metrics a reader decides on first, in this order (the rest are behind --details).
KEY_METRICS = ("size", "encode", "decode", "rtt", "jitter_stdev")
#: A label cell no wider than this (longer ones end in '...'), nor, to fit MAX_TABLE,
#: narrower than MIN_LABEL.
LABEL_WIDTH = 36
MIN_LABEL = 12
_INTERVAL = re.compile(r" \[[^\]]*\]$")


def wrap(text: str, width: int = MAX_LINE) -> list[str]:
    """`text` in lines of at most `width`; a '- ' item's next lines indented under it."""
    lines = []
    for line in text.splitlines():
        indent = "  " if line.startswith("- ") else ""
        lines += textwrap.wrap(
            line, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=True
        ) or [""]
    return lines


def _short(label: str, width: int = LABEL_WIDTH) -> str:
    return label if len(label) <= width else label[: width - 3] + "..."


def fit_labels(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[list[str]]:
    """The rows with their label cells (column 1) shortened further where the table
    would be wider than MAX_TABLE: the other cells (figures, a change of +185.8 %, a
    verdict) and a row's busy mark vary from run to run, so the label takes what is left."""
    columns = list(zip(headers, *rows, strict=True))
    others = sum(max(len(cell) for cell in column) for i, column in enumerate(columns) if i != 1)
    # at least a short label, even when the other cells alone would fill the width
    room = max(MAX_TABLE - others - len(table.SEPARATOR) * (len(headers) - 1), MIN_LABEL)
    fitted = []
    for row in rows:
        label = row[1]
        mark = table.BUSY_MARK if label.endswith(table.BUSY_MARK) else ""
        body = label.removesuffix(mark) if mark else label
        fitted.append([row[0], _short(body, room - len(mark)) + mark, *row[2:]])
    return fitted


def _key(row: Row) -> int | None:
    metric = row.identity.metric
    if metric not in KEY_METRICS or row.role not in (TESTED, FACT):
        return None
    return KEY_METRICS.index(metric)


def key_rows(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Profile, metric, the two codecs' figures, the change and the verdict of the key rows."""
    base, cand = (table.display_name(c) for c in (comparison.baseline, comparison.candidate))
    chosen = [row for row in comparison.rows if _key(row) is not None]
    chosen.sort(key=lambda row: (row.identity.profile or "", _key(row)))
    cells = []
    for row in chosen:
        base_cell, cand_cell = table.estimate_cells(row)
        cells.append(
            [
                row.identity.profile or "-",
                _short(row.label) + (table.BUSY_MARK if row.busy else ""),
                _INTERVAL.sub("", base_cell),  # the interval is in the full table
                _INTERVAL.sub("", cand_cell),
                table.change_cell(row),
                table.winner_cell(row, comparison.baseline, comparison.candidate),
            ]
        )
    return ["Profile", "Metric", base, cand, "Change", "Verdict"], cells


def bus_fit(
    comparison: Comparison, rows: Sequence[budget.Row], rate_hz: float
) -> tuple[list[list[str]], list[str]]:
    """Per profile, a key row of how many budgeted buses each codec fits (the budget's
    'fits': worst case within the ceiling), and a line naming them."""
    pair = (comparison.baseline, comparison.candidate)
    cells, named = [], []
    for profile in sorted({row.profile for row in rows if row.codec in pair}):
        mine = [row for row in rows if row.profile == profile and row.codec in pair]
        buses = sorted({row.bus for row in mine})
        fits = {
            codec: [r.bus for r in mine if r.codec == codec and r.verdict == "fits"]
            for codec in pair
        }
        cells.append(
            [profile, f"Bus fit at {rate_hz:g} Hz"]
            + [f"{len(fits[codec])} of {len(buses)} buses" for codec in pair]
            + ["-", table.FACT_WINNER]
        )
        said = "; ".join(
            f"{table.display_name(codec)} fits {', '.join(fits[codec]) or 'none'}" for codec in pair
        )
        named.append(f"{profile}: {said} (of {', '.join(buses)})")
    return cells, named


def fits_of(comparison: Comparison, rows: Sequence[budget.Row]) -> dict[str, dict[str, list[str]]]:
    """profile -> codec -> the budgeted buses it fits (worst case within the ceiling)."""
    pair = (comparison.baseline, comparison.candidate)
    fits: dict[str, dict[str, list[str]]] = {}
    for row in rows:
        if row.codec in pair:
            buses = fits.setdefault(row.profile, {}).setdefault(row.codec, [])
            if row.verdict == "fits":
                buses.append(row.bus)
    return fits


def render(
    comparison: Comparison,
    out: Path,
    buses: Sequence[budget.Row] = (),
    rate_hz: float = 20.0,
) -> str:
    """The answer, the key rows and the pointers to the rest, every line <= MAX_LINE;
    `buses`: the run's bus budget rows (at `rate_hz`), summed up as a key row."""
    # the exact facts (sizes, bandwidth) are the key rows' and the full table's
    lines = wrap(table.render_answer(comparison, fits_of(comparison, buses), with_facts=False))
    busy = table.busy_line(comparison)
    if busy:
        lines += ["", *wrap(busy)]
    headers, cells = key_rows(comparison)
    fit_cells, fit_named = bus_fit(comparison, buses, rate_hz)
    if cells or fit_cells:
        lines += ["", "Key rows (the test's estimate; intervals and the rest in the full table):"]
        # Each profile's bus fit last among its rows (a stable sort keeps the rest's order).
        ordered = sorted(cells + fit_cells, key=lambda line: line[0])
        lines += table.format_rows(headers, fit_labels(headers, ordered)).splitlines()
    system = system_view.lines(comparison)
    if system:
        lines += ["", "What it costs the product (context, no winner):"]
        lines += [wrapped for line in system for wrapped in wrap(f"  {line}")]
    if fit_named:
        ceiling = f"{budget.DEFAULT_CEILING * 100:g} %"
        said = f"Bus fit: the worst case within the {ceiling} bus-load ceiling; "
        lines += ["", *wrap(said + "; ".join(fit_named))]
    lines += [  # a command stays whole on its line, to copy
        "",
        "Full table, medians per codec, context and bus budget (or evbench run --details):",
        f"  evbench report --terminal {out}",
    ]
    return "\n".join(lines)
