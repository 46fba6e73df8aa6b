"""The answer in sentences, and the terminal's comparison that opens with it.

Per profile: the verdict in one line (report/verdict_line.py), then what the candidate
buys over the baseline (the rows it wins, with the verdict's interval), what it costs,
which rows were shown within their margin, which stay undecided (with the time a plan
of this size expects would decide them), which were too small to call, and the exact
differences (facts). The numbers are the comparison's (evbench_core.comparison); the
tables' cells are report/table.py's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from evbench.report import ratios, verdict_line
from evbench.report.names import display_name
from evbench.report.table import (
    busy_line,
    comparison_cells,
    comparison_notes,
    context_cells,
    format_rows,
    metric_unit,
    signed_value,
)
from evbench.report.units import counted, format_value
from evbench_core.analysis import margins as margin_scales
from evbench_core.analysis.verdicts import (
    BASELINE,
    CANDIDATE,
    EQUAL,
    NEGLIGIBLE,
    TOO_SMALL,
    UNDECIDED,
)
from evbench_core.comparison import FACT, TESTED, Comparison, Row


def _percent(value: float) -> str:
    return f"{abs(value) * 100:.1f} %" if abs(value) < 10 else f"{abs(value) * 100:.0f} %"


def _change_words(row: Row) -> str:
    """'45x faster (CI 43x to 47x)', '21.8 % lower (CI 19.7 to 23.9 %)', or on an
    absolute margin '21.8 % lower, -111 µs (CI -122 µs to -100 µs)': from the verdict.
    On an absolute margin the words, the estimate and the interval are all the
    difference's (the verdict's ratio is made from it), signed as the table's CI is."""
    verdict = row.verdict
    assert verdict is not None and verdict.ratio is not None
    metric = row.identity.metric
    text = ratios.change_text(verdict.ratio, metric)
    interval = verdict.interval
    if interval is None:
        return text
    if verdict.scale == margin_scales.DIFFERENCE and verdict.difference is not None:
        unit = row.unit
        shown = signed_value(verdict.difference, unit, metric)
        low, high = (signed_value(bound, unit, metric) for bound in interval)
        return f"{text}, {shown} (CI {low} to {high})"
    near, far = (ratios.change_text(r, metric) for r in sorted(interval, key=_size_of_change))
    if near.split(" ", 1)[-1] == far.split(" ", 1)[-1]:  # '76x to 83x faster'
        return f"{text} (CI {near.split(' ', 1)[0]} to {far})"
    return f"{text} (CI {near} to {far})"


def _size_of_change(ratio: float) -> float:
    return abs(math.log(ratio)) if ratio > 0 else math.inf


def _interval_words(row: Row) -> str:
    """'estimate +3.9 %, CI -1.2 to +9.0 %' (or in the unit, on an absolute margin): the
    test's estimate and the verdict's interval, beside the row's margin."""
    verdict = row.verdict
    assert verdict is not None
    interval = verdict.interval
    if verdict.scale == margin_scales.DIFFERENCE and verdict.difference is not None:
        unit, metric = metric_unit(row)
        text = f"estimate {signed_value(verdict.difference, unit, metric)}"
        if interval is not None:
            near, far = (signed_value(bound, unit, metric) for bound in interval)
            text += f", CI {near} to {far}"
    else:
        text = f"estimate {verdict.pct_diff:+.1f} %"
        if interval is not None:
            low, high = (interval[0] - 1) * 100, (interval[1] - 1) * 100
            text += f", CI {low:+.1f} to {high:+.1f} %"
    if verdict.margin:
        return f"{text}; margin {verdict.margin.split(',')[0]}"
    return text


def _more_time(row: Row, stage_s: float | None) -> str:
    """', about 4 min more': the time a plan of this size expects would decide it."""
    from evbench_core import sequential

    stages = sequential.more_stages(row)
    if stages is None or not stage_s:
        return "; on the margin's edge" if stages is None and row.verdict else ""
    minutes = stages * stage_s / 60
    return f"; about {max(minutes, 1):.0f} min more to decide"


def _fact_words(row: Row, candidate: str) -> str:
    change = row.fact_difference or 0.0
    word = "larger" if change > 0 else "smaller"
    if row.unit == "bytes/s":
        word = "more" if change > 0 else "less"
    base = format_value(row.baseline.summary.mean, row.unit, row.identity.metric)
    cand = format_value(row.candidate.summary.mean, row.unit, row.identity.metric)
    if change == 0:  # a fact is exact: the same size is equal, not "smaller by 0.0 %"
        return f"{row.label} equal ({cand} for both)"
    by = "under 0.1 %" if abs(change) < 0.0005 else _percent(change)
    return f"{row.label} {word} by {by} ({cand} against {base})"


def _sentence(head: str, items: Sequence[str]) -> str:
    """'Head: a; b; c.': one kind of answer line, its rows listed."""
    return head + "; ".join(items) + "."


def _won(tested: Sequence[Row], *winners: str) -> list[Row]:
    """The tested rows whose verdict names one of `winners`, in the table's order."""
    return [r for r in tested if r.verdict is not None and r.verdict.winner in winners]


def _gains(tested: Sequence[Row], base: str, cand: str) -> list[str]:
    """What the candidate buys: the rows it wins, each with the verdict's interval."""
    gains = _won(tested, CANDIDATE)
    if gains:
        head = f"{cand} is better than {base} on {len(gains)} of {len(tested)} tested rows: "
        return [_sentence(head, [f"{r.label} {_change_words(r)}" for r in gains])]
    if tested:
        return [f"{cand} is not shown better than {base} on any tested row."]
    return []


def _losses(tested: Sequence[Row], base: str, cand: str) -> list[str]:
    """What the candidate costs: the rows the baseline wins."""
    losses = _won(tested, BASELINE)
    if not losses:
        return []
    items = [f"{r.label} {_change_words(r)} with {cand}" for r in losses]
    return [_sentence(f"{base} is better on {len(losses)}: ", items)]


def _shown_equal(tested: Sequence[Row]) -> list[str]:
    """The rows shown within their margin: one sentence per margin (the intervals are
    in the table)."""
    by_margin: dict[str, list[Row]] = {}
    for r in _won(tested, EQUAL, NEGLIGIBLE):
        assert r.verdict is not None
        by_margin.setdefault(r.verdict.margin, []).append(r)
    return [
        _sentence(
            f"Equal within {margin}: ",
            [f"{r.label}{' (negligible)' if r.outcome == NEGLIGIBLE else ''}" for r in same],
        )
        for margin, same in by_margin.items()
    ]


def _undecided(tested: Sequence[Row], stage_s: float | None) -> list[str]:
    """The rows not yet shown beyond the margin nor within it, with the test's estimate,
    the interval and the time a plan of this size expects would decide them."""
    undecided = _won(tested, UNDECIDED)
    if not undecided:
        return []
    head = "Undecided (not yet shown beyond the margin nor within it): "
    items = [f"{r.label} ({_interval_words(r)}{_more_time(r, stage_s)})" for r in undecided]
    return [_sentence(head, items)]


def _too_small(tested: Sequence[Row]) -> list[str]:
    """The rows whose plans have too few replicates to call, with their counts."""
    small = _won(tested, TOO_SMALL)
    if not small:
        return []
    counts = sorted({counted(r.n, r.n_counts) for r in small})
    head = f"Too few replicates to call ({', '.join(counts)}): "
    return [_sentence(head, [r.label for r in small])]


def _facts(rows: Sequence[Row], cand: str) -> list[str]:
    """The exact differences (sizes): facts, not tested."""
    facts = [r for r in rows if r.role == FACT and r.fact_difference is not None]
    if not facts:
        return []
    return [_sentence(f"Facts, exact: {cand}'s ", [_fact_words(r, cand) for r in facts])]


def _profile_sentences(
    rows: Sequence[Row], base: str, cand: str, stage_s: float | None, with_facts: bool
) -> list[str]:
    """One profile's answer, each kind of line in the answer's order."""
    tested = [r for r in rows if r.role == TESTED and r.verdict is not None]
    return [
        *_gains(tested, base, cand),
        *_losses(tested, base, cand),
        *_shown_equal(tested),
        *_undecided(tested, stage_s),
        *_too_small(tested),
        *(_facts(rows, cand) if with_facts else []),
    ]


def answer_lines(comparison: Comparison, with_facts: bool = True) -> list[str]:
    """The answer, per profile, in plain sentences: what the candidate buys over the
    baseline (only rows with a verdict, with the interval), what it costs, which rows
    were shown equal, which stay undecided, which were too small to call, and the exact
    differences (facts)."""
    base, cand = (display_name(c) for c in (comparison.baseline, comparison.candidate))
    profiles: dict[str, list[Row]] = {}
    for row in comparison.rows:
        profiles.setdefault(row.identity.profile or "-", []).append(row)
    lines = []
    for profile, rows in profiles.items():
        sentences = _profile_sentences(rows, base, cand, comparison.stage_s, with_facts)
        if sentences:
            lines.append(f"{profile}: " + " ".join(sentences))
    return lines


def render_answer(
    comparison: Comparison,
    fits: verdict_line.Fits | None = None,
    with_facts: bool = True,
    width: int = verdict_line.WIDTH,
) -> str:
    """The verdict lines first (one per profile, each within `width` and
    verdict_line.WIDTH), then the answer's sentences (without the exact facts when
    `with_facts` is false: the one screen shows sizes in its key rows)."""
    base, cand = (display_name(c) for c in (comparison.baseline, comparison.candidate))
    lines = [*verdict_line.lines(comparison, fits, min(width, verdict_line.WIDTH)), ""]
    lines += [f"The answer ({cand} against {base}, on this machine):"]
    said = answer_lines(comparison, with_facts)
    lines += [f"- {line}" for line in said] or ["- no row both codecs ran."]
    return "\n".join(lines)


def render_comparison(comparison: Comparison, width: int | None = None) -> str:
    """The terminal's comparison: the answer first, then the table, then the context.
    With `width` (the terminal's, report/terminal.py), sentences are wrapped to it (at most
    terminal.MAX_PROSE; no word broken, no number split from its unit) and the tables fit
    it (format_rows: names shortened, then column groups repeating Profile and Metric)."""
    from evbench.report import terminal

    def said(text: str) -> list[str]:
        return terminal.wrap(text, terminal.prose(width)) if width else [text]

    answer = render_answer(comparison, width=width or verdict_line.WIDTH)
    parts = [*said(answer), ""]
    busy = busy_line(comparison)
    if busy:
        parts += said(busy)
    parts.append(format_rows(*comparison_cells(comparison), width=width))
    parts += [line for note in comparison_notes(comparison) for line in said(note)]
    headers, context = context_cells(comparison)
    if context:
        parts += ["", format_rows(headers, context, width=width)]
    return "\n".join(parts)


__all__ = ["answer_lines", "render_answer", "render_comparison"]
