"""The comparison of two codecs as tables and plain sentences, in the seed's shape.

    Profile | Metric | JSON | Protobuf (est.) | Change (est.) | Verdict | margin |
    p (Holm) | CI (Holm step) | n | detectable

One row is one record identity (evbench_core.analysis.identity): nothing is pooled
across identities. The numbers and verdicts come from
evbench_core.comparison, computed once per run; this module only lays them
out. Rows by role:

- tested rows carry the verdict of the replication-aware test (a codec,
  "equal", "undecided", or "n too small" when the plan could not have named
  one), the interval that verdict used, and the test's own estimate ("Change (est.)"),
  and the candidate's cell as the baseline's times the estimated ratio, so the
  cells, the change and the verdict never point different ways. Each codec's own
  medians are apart ("Medians per codec");
- facts (sizes, bandwidth from sizes and the nominal rate) carry their exact
  difference of the means, the means in the cells, and "fact" instead of a
  winner;
- context (telemetry, modelled energy, rare counts) goes to its own table:
  each codec's median with its spread, no difference, no winner.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from evbench.report import ratios
from evbench.report.names import display_name
from evbench.report.units import counted, format_value
from evbench_core import comparison as comparing
from evbench_core.analysis import contention, metrics, stats
from evbench_core.analysis import margins as margin_scales
from evbench_core.analysis.identity import Identity
from evbench_core.analysis.verdicts import (
    BASELINE,
    CANDIDATE,
    EQUAL,
    NEGLIGIBLE,
    TOO_SMALL,
    UNDECIDED,
)
from evbench_core.comparison import CONTEXT, FACT, SUITE_ORDER, TESTED, Comparison, Row, Side
from evbench_core.results import SampleSet

FACT_WINNER = "fact"
#: The bus interface's counters (telemetry.bus_stats.METRIC), left out of the context table.
BUS_COUNTER = "bus_counter"


def format_median_ci(
    median: float | None,
    low: float | None,
    high: float | None,
    unit: str,
    metric: str | None = None,
) -> str:
    """`median [low, high]`; a bound keeps its own unit when it scales differently; a
    missing median shows as "-"."""
    text = format_value(median, unit, metric)
    if low is None or high is None or low == high:
        return text
    suffix = " " + text.split(" ", 1)[1] if " " in text else ""

    def bound(value: float) -> str:
        shown = format_value(value, unit, metric)
        return shown[: -len(suffix)] if suffix and shown.endswith(suffix) else shown

    return f"{text} [{bound(low)}, {bound(high)}]"


def p_value_cell(p: float) -> str:
    # Below this the exact tests' p is far beyond any family's level: the digits mean nothing.
    return "<1e-12" if p < 1e-12 else f"{p:.2g}"


def metric_unit(row: Row) -> tuple[str, str]:
    return row.unit, row.identity.metric


def value_cell(side: Side, row: Row) -> str:
    """A codec's figure at the unit of replication: with several replicates (worker
    processes, link phases) the median of their medians and its 95 % interval; with one,
    the median of every value (an interval only for facts and context, whose values are
    not tested)."""
    unit, metric = metric_unit(row)
    if side.replicates > 1 and side.replicate_summary is not None:
        shown = side.replicate_summary
        return format_median_ci(shown.median, shown.ci95_low, shown.ci95_high, unit, metric)
    summary = side.summary
    if row.role == TESTED:  # one replicate: no interval that respects the unit of replication
        return format_median_ci(summary.median, None, None, unit, metric)
    return format_median_ci(summary.median, summary.ci95_low, summary.ci95_high, unit, metric)


def estimate_cells(row: Row) -> tuple[str, str]:
    """The two codecs' cells beside % Diff, from the figure % Diff is made of: for a
    tested row the baseline's value (value_cell) and that value times the test's
    ratio estimate (on differences, an absolute margin: 1 + the difference's estimate
    over that value); for a fact the two means; otherwise each codec's value_cell."""
    unit, metric = metric_unit(row)
    if row.role == FACT:
        base, cand = row.baseline.summary.mean, row.candidate.summary.mean
        return format_value(base, unit, metric), format_value(cand, unit, metric)
    verdict = row.verdict
    if row.role == TESTED and verdict is not None and verdict.ratio is not None:
        side = row.baseline
        shown = side.replicate_summary if side.replicates > 1 else None
        level = shown.median if shown is not None else side.summary.median
        # On differences the ratio is 1 + difference / that level already (verdicts.py,
        # _ratio_estimate): the cell is the level plus the difference, or times the
        # log-ratios' estimate where the difference outweighs the level.
        return value_cell(side, row), format_value(level * verdict.ratio, unit, metric)
    return value_cell(row.baseline, row), value_cell(row.candidate, row)


def winner_cell(row: Row, baseline: str, candidate: str) -> str:
    if row.role == FACT:
        return FACT_WINNER
    if row.verdict is None:
        return "-"
    return {
        BASELINE: display_name(baseline),
        CANDIDATE: display_name(candidate),
        EQUAL: EQUAL,
        NEGLIGIBLE: NEGLIGIBLE,
        UNDECIDED: UNDECIDED,
        TOO_SMALL: TOO_SMALL,
    }.get(row.verdict.winner, row.verdict.winner)


def difference(row: Row) -> float | None:
    """The row's change of the candidate against the baseline, as a fraction."""
    if row.role == FACT:
        return row.fact_difference
    if row.verdict is not None and not math.isnan(row.verdict.pct_diff):
        return row.verdict.pct_diff / 100
    return None


def n_cell(row: Row) -> str:
    if row.role == TESTED:
        return counted(row.n, {"phases per codec": "phases/codec"}.get(row.n_counts, row.n_counts))
    return f"{row.baseline.summary.n}/{row.candidate.summary.n} values"


def detectable_cell(row: Row) -> str:
    if row.role != TESTED:
        return "-"
    if row.min_detectable is None:
        return "none reachable" if row.too_small else "-"
    if row.verdict is not None and row.verdict.scale == margin_scales.DIFFERENCE:
        return format_value(row.min_detectable, row.unit, row.identity.metric)
    return f"{row.min_detectable * 100:.1f}%"


COMPARISON_HEADERS = (
    "Change (est.)",
    "Verdict",
    "margin",
    "p (Holm)",
    "CI (Holm step)",
    "n",
    "detectable",
)


def signed_value(value: float, unit: str, metric: str) -> str:
    shown = format_value(abs(value), unit, metric)
    return ("-" if value < 0 else "+") + shown


def interval_cell(row: Row) -> str:
    """The verdict's own interval, at Holm's step for the row: of the ratio, or of the
    difference in the metric's unit where the margin is absolute."""
    verdict = row.verdict
    if verdict is None or verdict.interval is None:
        return "-"
    low, high = verdict.interval
    if verdict.scale == margin_scales.DIFFERENCE:
        unit, metric = metric_unit(row)
        return f"{signed_value(low, unit, metric)} to {signed_value(high, unit, metric)}"
    return f"{low:.3f}-{high:.3f}"


def margin_cell(row: Row) -> str:
    """The row's margin, short: '5 %', '50 µs'."""
    if row.verdict is None or row.role != TESTED:
        return "-"
    return row.verdict.margin.split(",")[0] or "-"


def change_cell(row: Row) -> str:
    """The change as a factor from 2x on ('45x faster'), else in percent ('-21.8%')."""
    change = difference(row)
    if change is None:
        return "-"
    if change > -1 and ratios.factor(1 + change) >= ratios.FACTOR_FROM:
        return ratios.change_text(1 + change, row.identity.metric)
    return f"{change * 100:+.1f}%"


def comparison_cells(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the tested rows and the facts, for text, Markdown or HTML."""
    base, cand = comparison.baseline, comparison.candidate
    rows = []
    for row in comparison.rows:
        if row.role == CONTEXT:
            continue
        verdict = row.verdict
        rows.append(
            [
                row.identity.profile or "-",
                row.label + (BUSY_MARK if row.busy else ""),
                *estimate_cells(row),
                change_cell(row),
                winner_cell(row, base, cand),
                margin_cell(row),
                p_value_cell(verdict.p_holm) if verdict is not None else "-",
                interval_cell(row),
                n_cell(row),
                detectable_cell(row),
            ]
        )
    headers = [
        "Profile",
        "Metric",
        display_name(base),
        f"{display_name(cand)} (est.)",
        *COMPARISON_HEADERS,
    ]
    return headers, rows


def context_cells(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Telemetry, modelled energy and rare counts: each codec with its spread, no winner."""
    rows = []
    for row in comparison.by_role(CONTEXT):
        if row.identity.metric == BUS_COUNTER:
            continue  # one row per counter: the bus errors section lists them per phase
        cells = [row.identity.profile or "-", row.label]
        for side in (row.baseline, row.candidate):
            summary = side.summary
            unit, metric = metric_unit(row)
            spread = f"{format_value(summary.min, unit, metric)} to "
            spread += format_value(summary.max, unit, metric)
            cells += [value_cell(side, row), spread]
        cells.append(f"{row.baseline.summary.n}/{row.candidate.summary.n}")
        rows.append(cells)
    base, cand = (display_name(c) for c in (comparison.baseline, comparison.candidate))
    headers = ["Profile", "Context (not tested)", base, f"{base} range", cand, f"{cand} range"]
    return [*headers, "n values"], rows


#: After the label of a row some of whose replicates ran on a busy machine.
BUSY_MARK = " *"


def busy_line(comparison: Comparison) -> str | None:
    """'The machine was busy: rows marked * may be unreliable (...)', or None."""
    busy, measured = comparison.busy
    if not busy:
        return None
    return (
        "The machine was busy: rows marked * may be unreliable "
        f"({busy} of {measured} replicates measured beyond the bound: "
        f"{contention.bound_words()}; the context table gives the figures)."
    )


def comparison_notes(comparison: Comparison) -> list[str]:
    base, cand = (display_name(c) for c in (comparison.baseline, comparison.candidate))
    return [
        "One row per measurement: rows whose settings differ (phase, mode, rate, operation, "
        "...) are never pooled. "
        f"{base}: with several replicates (worker processes in the codec suite, phases in "
        "the link suite) the median of their medians [its 95% CI; none below 6 "
        "replicates]; with one, the median of every value. "
        f"{cand} (est.) and Change (est.): the test's estimate of the ratio "
        f"{cand}/{base} (Hodges-Lehmann, from the paired replicates), as {base}'s value "
        "times it and as a change; on a row with an absolute margin (in the unit), of the "
        f"difference {cand} - {base}, as {base}'s value plus it and as a share of "
        f"{base}'s value; each codec's own medians are listed apart.",
        "Verdict: from the replicates, paired (codec suite: exact Wilcoxon signed-rank on "
        "each worker process's median log-ratio, the codecs paired within a process; link "
        "suite: the same test on each pair of phases, a duet or interleaved capacity "
        "blocks), against each row's margin, fixed before the data (docs/method.md, "
        "'Margins'): a relative one on the ratio, an absolute one (a share of the period or "
        "of a core at the rate) on the difference in the row's unit. The CI is the one the "
        "verdict uses: it inverts the test at Holm's step for the row within its suite and "
        f"profile (level 1 - {comparison.alpha:g}/(m - j)), so it holds no difference "
        f"whenever p (Holm) >= {comparison.alpha:g}. A codec wins when p (Holm) < "
        f"{comparison.alpha:g} and the whole CI lies beyond the margin; 'equal': the whole "
        "CI lies inside the margin (two one-sided tests); 'negligible': inside the margin "
        "but leaving out no difference (p (Holm) < "
        f"{comparison.alpha:g}): equal for the product; 'undecided': the CI straddles an "
        "edge of the margin. 'n too small': the plan's replicates (column n) could not reach "
        "the family's level whatever the data (no CI). detectable: the smallest change this "
        "row's plan and spread could have named."
        + (
            f" Run until decided: {comparison.looks} looks, each at the alpha it spent "
            f"({comparison.alpha:.3g} in all); a row keeps the first look's verdict that "
            "decided it."
            if comparison.looks > 1
            else ""
        ),
        "fact: exact or nominal figures (sizes; bandwidth from sizes and the rate): the "
        "means and the difference of the means, not tested. Context rows (telemetry, "
        "modelled energy, counts) are listed apart, per codec with their spread, with no "
        "winner.",
    ]


# --- text and Markdown tables ---------------------------------------------------------------


#: Between two columns of a plain table (format_rows).
SEPARATOR = " | "


def _plain(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [
        max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)
    ]

    def line(cells: Sequence[str]) -> str:
        return SEPARATOR.join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return [line(headers), rule, *(line(r) for r in rows)]


#: A cell of a plain table shortened to fit the width keeps at least this many characters.
MIN_CELL = 12
#: A profile's name shortened to fit keeps at least this many (before a label is cut).
MIN_PROFILE = 20


def _widths(cells: Sequence[Sequence[str]]) -> list[int]:
    return [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]


def _text_width(widths: Sequence[int], columns: Sequence[int]) -> int:
    return sum(widths[i] for i in columns) + len(SEPARATOR) * (len(columns) - 1)


def _shorten_cell(cell: str, profile: bool, room: int) -> str:
    """A profile's name keeping its end, a label its trailing phase and busy mark
    (names.py)."""
    from evbench.report.names import shorten_label, shorten_profile

    if profile:
        return shorten_profile(cell, room)
    mark = BUSY_MARK if cell.endswith(BUSY_MARK) else ""
    return shorten_label(cell.removesuffix(mark) if mark else cell, room - len(mark)) + mark


def fit_keys(cells: list[list[str]], keys: int, budget: int) -> list[list[str]]:
    """The rows (headers first) with the `keys` leading columns shortened until they take
    at most `budget` columns, in this order: the profile's name (the column headed
    'Profile', else column 0) down to MIN_PROFILE, keeping its end; then the other key
    columns (labels: metric, codec, suite), widest first, down to MIN_CELL, keeping a
    label's trailing phase; then the profile's name down to MIN_CELL. A header is never
    cut."""
    named = [i for i in range(keys) if cells[0][i] == "Profile"]
    profile = named[0] if named else 0
    labels = sorted((i for i in range(keys) if i != profile), key=lambda i: -_widths(cells)[i])
    steps = [(profile, MIN_PROFILE), *((column, MIN_CELL) for column in labels)]
    for column, least in [*steps, (profile, MIN_CELL)]:
        widths = _widths(cells)
        excess = _text_width(widths, range(keys)) - budget
        floor = max(least, len(cells[0][column]))
        if excess <= 0:
            break
        if widths[column] <= floor:
            continue
        room = max(floor, widths[column] - excess)
        for row in cells[1:]:
            row[column] = _shorten_cell(row[column], column == profile, room)
    return cells


def _cut_wide(
    cells: list[list[str]], keys: int, width: int, legend: dict[str, int]
) -> list[list[str]]:
    """A group still wider than `width` (one column too wide beside the keys): its widest
    other column's long cells cut to '…[N]', N their entry in `legend`."""
    widths = _widths(cells)
    excess = _text_width(widths, range(len(widths))) - width
    if excess <= 0 or len(widths) <= keys:
        return cells
    column = max(range(keys, len(widths)), key=lambda i: widths[i])
    room = max(widths[column] - excess, MIN_CELL)
    for row in cells[1:]:
        cell = row[column]
        if len(cell) > room:
            mark = f"…[{legend.setdefault(cell, len(legend) + 1)}]"
            row[column] = cell[: room - len(mark)].rstrip() + mark
    return cells


def format_rows(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int | None = None,
    keys: int = 2,
) -> str:
    """A plain table. With `width`, every line fits it where it can: the `keys` leading
    columns (what names a row: profile, metric) are shortened first (fit_keys), then a
    table still too wide is split into tables that each repeat those columns beside a group
    of the others (as format_markdown splits Markdown), and a cell still too wide ends in
    '…[N]', listed whole under the tables."""
    plain = _plain(headers, rows)
    if width is None or not rows or max(len(line) for line in plain) <= width:
        return "\n".join(plain)
    cells = [[str(c) for c in line] for line in (headers, *rows)]
    keys = max(1, min(keys, len(cells[0]) - 1))
    # the columns naming a row take at most 3/5 of the width, and leave room for any other
    budget = min(width - max(_widths(cells)[keys:]) - len(SEPARATOR), width * 3 // 5)
    cells = fit_keys(cells, keys, budget)
    widths = _widths(cells)
    groups = _column_groups(cells, keys, width, lambda cols: _text_width(widths, cols)) or [[]]
    legend: dict[str, int] = {}
    text: list[str] = []
    for index, group in enumerate(groups):
        columns = [*range(keys), *group]
        picked = _cut_wide([[line[i] for i in columns] for line in cells], keys, width, legend)
        if index:
            text += ["", f"The same rows, continued: {', '.join(picked[0][keys:])}."]
        text += _plain(picked[0], picked[1:])
    if legend:
        text += ["", "Shortened cells:"]
        text += [f"[{number}] {cell}" for cell, number in legend.items()]
    return "\n".join(text)


#: No line of a Markdown table is wider than this (issue 31): what a terminal shows.
MARKDOWN_WIDTH = 120


def _markdown_line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _column_groups(
    cells: list[list[str]],
    keys: int,
    width: int,
    wide: Callable[[list[int]], int] | None = None,
) -> list[list[int]]:
    """The columns after the `keys` leading ones, in groups that fit `width` beside them
    (a column too wide even alone gets a group of its own); `wide(columns)`: how wide those
    columns lay out (by default as Markdown lines)."""

    def markdown(columns: list[int]) -> int:
        return max(len(_markdown_line([row[i] for i in columns])) for row in cells)

    measure = wide or markdown
    groups: list[list[int]] = []
    for column in range(keys, len(cells[0])):
        trial = [*groups[-1], column] if groups else [column]
        if groups and measure([*range(keys), *trial]) <= width:
            groups[-1] = trial
        else:
            groups.append([column])
    return groups


def _fit_row(row: list[str], width: int, legend: dict[str, int]) -> list[str]:
    """A line still too wide: its widest cells cut to '…[N]', N their legend entry."""
    row = list(row)
    while len(_markdown_line(row)) > width:
        widest = max(range(len(row)), key=lambda i: len(row[i]))
        cell = legend_text = row[widest]
        if "…[" in cell:  # cut already: take the whole text back from the legend
            legend_text = next(text for text, n in legend.items() if cell.endswith(f"…[{n}]"))
        number = legend.setdefault(legend_text, len(legend) + 1)
        mark = f"…[{number}]"
        keep = len(cell) - (len(_markdown_line(row)) - width) - len(mark)
        if keep < 8:  # cannot get shorter and stay readable
            keep = 8
        shortened = legend_text[:keep].rstrip().rstrip("\\") + mark
        if len(shortened) >= len(cell):
            break
        row[widest] = shortened
    return row


def format_markdown(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    keys: int = 1,
    width: int = MARKDOWN_WIDTH,
) -> str:
    """The same cells as a Markdown (GitHub) table; pipes inside cells are escaped.

    Every line fits `width`: a table that would not is split into tables that
    each repeat its `keys` leading columns (what names a row) beside a group of the
    others; a line still too wide has its widest cells shortened to '…[N]', listed
    whole under the tables (as the terminal's key rows shorten labels)."""
    cells = [[str(c).replace("|", "\\|") for c in line] for line in (headers, *rows)]
    keys = max(1, min(keys, len(cells[0]) - 1)) if len(cells[0]) > 1 else len(cells[0])
    groups = _column_groups(cells, keys, width) or [[]]
    legend: dict[str, int] = {}
    text: list[str] = []
    for index, group in enumerate(groups):
        columns = [*range(keys), *group]
        picked = [_fit_row([line[i] for i in columns], width, legend) for line in cells]
        if index:
            text += ["", f"The same rows, continued: {', '.join(picked[0][keys:])}.", ""]
        text += [_markdown_line(picked[0]), "|" + "---|" * len(columns)]
        text += [_markdown_line(line) for line in picked[1:]]
    if legend:
        text += ["", "Shortened cells:", ""]
        text += [f"- [{number}] {cell}" for cell, number in legend.items()]
    return "\n".join(text)


def _identity_order(key: Identity) -> tuple:
    """Suites as they ran (codec, link, telemetry), then profile, then metrics.py's order."""
    names = list(metrics.METRICS)
    suite = SUITE_ORDER.index(key.suite) if key.suite in SUITE_ORDER else len(SUITE_ORDER)
    metric = names.index(key.metric) if key.metric in names else len(names)
    return (suite, key.suite, key.profile, metric, key.metric, key.params)


def render_codec_medians(
    sample_sets: Sequence[SampleSet], codec_names: Sequence[str], width: int | None = None
) -> str:
    """Every codec's median per measurement (record identity), beside each other."""
    grouped = comparing.group(sample_sets)
    keys = sorted(grouped, key=_identity_order)
    labels = comparing.labels(keys)
    rows = []
    for key in keys:
        cells = []
        for codec in codec_names:
            values = [v for vs in grouped[key].get(codec, {}).values() for v in vs]
            shown = stats.summarize(values).median if values else None
            cells.append(format_value(shown, key.unit, key.metric))
        rows.append([key.profile or "-", labels[key], *cells])
    return format_rows(["Profile", "Metric", *codec_names], rows, width=width)


__all__ = [
    "FACT_WINNER",
    "comparison_cells",
    "context_cells",
    "format_markdown",
    "format_rows",
    "render_codec_medians",
]
