"""The answer at a glance: what `evbench run` prints by default, one screen of it.

The answer's sentences wrapped to the terminal's width (report/terminal.py: 120 columns
when the output is not a terminal; never a word broken, nor a number split from its
unit), the key rows (size, encode, decode, RTT, jitter, and per profile how many of the
budgeted buses each codec fits at the run's rate, the buses named under the table) in a
table that fits 100 columns or the terminal when narrower, the C and C++ runtime pairs'
one-line verdicts when the run measured native codecs, and where the rest is: the full
table, each codec's medians and the bus budget (`--details`, `evbench report --terminal
RUN`) and the report with its plots.

The key table fits its width in this order: a label longer than LABEL_WIDTH is shortened
(keeping its trailing phase, names.shorten_label); then a long profile name is shortened
to table.MIN_PROFILE keeping its end (names.shorten_profile); then the labels down to
MIN_LABEL; then the profile names down to MIN_LABEL; a table still wider is split into
column groups that repeat Profile and Metric (table.format_rows).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from evbench.report import answer, system_view, table, terminal, verdict_line
from evbench.report.names import shorten_label
from evbench_agent.buses import budget
from evbench_core.comparison import FACT, TESTED, Comparison, Row

#: No line of the default output is wider than this (nor than the terminal).
MAX_LINE = terminal.MAX_PROSE
#: The key rows' table fits this (or the terminal, when narrower).
MAX_TABLE = 100
#: The metrics a reader decides on first, in this order (the rest are behind --details).
KEY_METRICS = ("size", "encode", "decode", "rtt", "jitter_stdev")
#: A label cell no wider than this (longer ones end in '...'), nor, to fit MAX_TABLE,
#: narrower than MIN_LABEL.
LABEL_WIDTH = 36
MIN_LABEL = 12
_INTERVAL = re.compile(r" \[[^\]]*\]$")


def wrap(text: str, width: int = MAX_LINE) -> list[str]:
    """`text` in lines of at most `width`; a '- ' item's next lines indented under it; no
    word broken, no number split from its unit (terminal.wrap)."""
    return terminal.wrap(text, width)


def _short(label: str, width: int = LABEL_WIDTH) -> str:
    return shorten_label(label, width)


def fit_labels(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int = MAX_TABLE
) -> list[list[str]]:
    """The rows with their profile (column 0) and label (column 1) cells shortened where
    the table would be wider than `width` (the module's order: a long profile name before
    the labels): the other cells (figures, a change of +185.8 %, a verdict) and a row's
    busy mark vary from run to run, so the names take what is left."""
    cells = [list(headers), *(list(row) for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    # the other columns and the separators before each of them
    others = sum(widths[2:]) + len(table.SEPARATOR) * (len(headers) - 2)
    # at least short names, even when the other cells alone would fill the width
    room = max(width - others, MIN_LABEL * 2 + len(table.SEPARATOR))
    return table.fit_keys(cells, 2, room)[1:]


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


def native_lines(pairs: Sequence[tuple[str, Comparison]], width: int = MAX_LINE) -> list[str]:
    """Per C or C++ runtime pair (runtimes.comparisons: its title, its comparison), a
    heading naming the pair and its one-line verdict per profile (verdict_line), each
    within `width`; the pair's answer and table are --details'."""
    lines: list[str] = []
    for title, comparison in pairs:
        said = verdict_line.lines(comparison, width=min(width, verdict_line.WIDTH))
        lines += ["", *wrap(f"{title}:", width)]
        lines += [wrapped for line in said or ["no row both codecs ran."] for wrapped in
                  wrap(f"  {line}", width)]  # fmt: skip
    return lines


def render(
    comparison: Comparison,
    out: Path,
    buses: Sequence[budget.Row] = (),
    rate_hz: float = 20.0,
    native: Sequence[tuple[str, Comparison]] = (),
    width: int = terminal.DEFAULT,
) -> str:
    """The answer, the key rows and the pointers to the rest, every line within `width`
    (the terminal's: terminal.width()) and MAX_LINE; `buses`: the run's bus budget rows
    (at `rate_hz`), summed up as a key row; `native`: the C and C++ runtime pairs'
    comparisons (runtimes.comparisons), each said in its one-line verdicts."""
    prose = min(terminal.prose(width), MAX_LINE)
    # the exact facts (sizes, bandwidth) are the key rows' and the full table's
    said = answer.render_answer(
        comparison, fits_of(comparison, buses), with_facts=False, width=prose
    )
    lines = wrap(said, prose)
    busy = table.busy_line(comparison)
    if busy:
        lines += ["", *wrap(busy, prose)]
    headers, cells = key_rows(comparison)
    fit_cells, fit_named = bus_fit(comparison, buses, rate_hz)
    if cells or fit_cells:
        lines += ["", *wrap("Key rows (the test's estimate; intervals and the rest in the full "
                            "table):", prose)]  # fmt: skip
        # Each profile's bus fit last among its rows (a stable sort keeps the rest's order).
        ordered = sorted(cells + fit_cells, key=lambda line: line[0])
        room = min(width, MAX_TABLE)
        fitted = fit_labels(headers, ordered, room)
        if max(len(line) for line in table.format_rows(headers, fitted).splitlines()) > room:
            fitted = ordered  # split into column groups: the names need not be cut so short
        lines += table.format_rows(headers, fitted, width=room).splitlines()
    system = system_view.lines(comparison)
    if system:
        lines += ["", "What it costs the product (context, no winner):"]
        lines += [wrapped for line in system for wrapped in wrap(f"  {line}", prose)]
    lines += native_lines(native, prose)
    if fit_named:
        ceiling = f"{budget.DEFAULT_CEILING * 100:g} %"
        said = f"Bus fit: the worst case within the {ceiling} bus-load ceiling; "
        lines += ["", *wrap(said + "; ".join(fit_named), prose)]
    rest = "Full table, medians per codec, context and bus budget"
    if native:
        rest += ", the C and C++ pairs' answers and tables"
    lines += [  # a command stays whole on its line, to copy
        "",
        *wrap(f"{rest} (or evbench run --details):", prose),
        f"  evbench report --terminal {out}",
    ]
    return "\n".join(lines)
