"""The comparison table, in the seed's shape, with verdicts that mean something.

    Metric | JSON | Protobuf | % Diff | Winner

Values are medians with the 95 % interval of the median; % Diff compares
medians; the winner is decided by evbench_agent.verdicts (Holm-corrected
Mann-Whitney test and a minimum effect), otherwise "tie".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evbench.report.units import format_value
from evbench_agent import metrics, stats
from evbench_agent.results import Run, SampleSet
from evbench_agent.verdicts import Question, Verdict, decide

DISPLAY_NAMES = {"json": "JSON", "protobuf": "Protobuf"}


@dataclass(frozen=True)
class Row:
    profile: str
    metric: str
    unit: str
    baseline: stats.Summary
    candidate: stats.Summary
    verdict: Verdict


def pooled_samples(sample_sets: Iterable[SampleSet]) -> dict[tuple, tuple[str, list[float]]]:
    """(suite, profile, codec, metric) -> (unit, every worker's values)."""
    pooled: dict[tuple, tuple[str, list[float]]] = {}
    for sample_set in sample_sets:
        key = (sample_set.suite, sample_set.profile, sample_set.codec, sample_set.metric)
        pooled.setdefault(key, (sample_set.unit, []))[1].extend(sample_set.values)
    return pooled


def compare_codecs(run: Run, baseline: str, candidate: str) -> list[Row]:
    """Every metric measured for both codecs, decided together (one Holm family)."""
    pooled = pooled_samples(run.samples())
    questions, keys = [], []
    ordered = sorted(
        {(suite, profile, metric) for suite, profile, _codec, metric in pooled},
        key=lambda k: (
            k[0],
            str(k[1]),
            list(metrics.METRICS).index(k[2]) if k[2] in metrics.METRICS else 99,
        ),
    )
    for suite, profile, metric in ordered:
        base = pooled.get((suite, profile, baseline, metric))
        cand = pooled.get((suite, profile, candidate, metric))
        if not base or not cand:
            continue
        questions.append(Question(f"{profile} {metric}", metrics.better(metric), base[1], cand[1]))
        keys.append((profile, metric, base[0]))
    verdicts = decide(questions)
    return [
        Row(profile, metric, unit, stats.summarize(q.baseline), stats.summarize(q.candidate), v)
        for (profile, metric, unit), q, v in zip(keys, questions, verdicts, strict=False)
    ]


def format_median_ci(median: float, low: float | None, high: float | None, unit: str) -> str:
    """`median [low, high]`; a bound keeps its own unit when it scales differently."""
    text = format_value(median, unit)
    if low is None or high is None or low == high:
        return text
    suffix = " " + text.split(" ", 1)[1] if " " in text else ""

    def bound(value: float) -> str:
        shown = format_value(value, unit)
        return shown[: -len(suffix)] if suffix and shown.endswith(suffix) else shown

    return f"{text} [{bound(low)}, {bound(high)}]"


def _cell(summary: stats.Summary, unit: str) -> str:
    return format_median_ci(summary.median, summary.ci95_low, summary.ci95_high, unit)


def _p_value(p: float) -> str:
    # Below this the normal approximation's tail is rounding noise, not a probability.
    return "<1e-12" if p < 1e-12 else f"{p:.2g}"


def _label(metric: str) -> str:
    known = metrics.METRICS.get(metric)
    return known.label if known else metric


def format_rows(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [
        max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)
    ]

    def line(cells: Sequence[str]) -> str:
        return " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def format_markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The same cells as a Markdown (GitHub) table; pipes inside cells are escaped."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(headers), "|" + "---|" * len(headers), *(line(r) for r in rows)])


def comparison_cells(
    rows: Sequence[Row], baseline: str, candidate: str
) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the comparison table, for text, Markdown or HTML."""
    base_name = DISPLAY_NAMES.get(baseline, baseline)
    cand_name = DISPLAY_NAMES.get(candidate, candidate)
    winners = {"baseline": base_name, "candidate": cand_name, "tie": "tie"}
    table_rows = []
    for row in rows:
        verdict = row.verdict
        interval = (
            f"{verdict.ratio_low:.3f}-{verdict.ratio_high:.3f}"
            if verdict.ratio_low is not None
            else "-"
        )
        table_rows.append(
            [
                row.profile,
                _label(row.metric),
                _cell(row.baseline, row.unit),
                _cell(row.candidate, row.unit),
                "-" if math.isnan(verdict.pct_diff) else f"{verdict.pct_diff:+.1f}%",
                winners[verdict.winner],
                _p_value(verdict.p_holm),
                interval,
                f"{row.baseline.n}/{row.candidate.n}",
            ]
        )
    headers = [
        "Profile",
        "Metric",
        base_name,
        cand_name,
        "% Diff",
        "Winner",
        "p (Holm)",
        "ratio 95% CI",
        "n",
    ]
    return headers, table_rows


COMPARISON_NOTES = (
    "Values: median [95% CI of the median]; n is samples per codec. Codec-suite times are "
    "means of one operation over a calibrated inner loop (>= 1 ms per sample), so spreads "
    "are those of loop means. Link rows: RTT and lateness per message; jitter, bandwidth, "
    "capacity, CPU and counts one value per phase.\n"
    "% Diff compares medians. Winner: Mann-Whitney p < 0.05 after Holm's correction "
    "over these rows AND the ratio's 95% CI outside 1 +/- 0.02; otherwise tie."
)


def render_comparison(rows: Sequence[Row], baseline: str, candidate: str) -> str:
    return format_rows(*comparison_cells(rows, baseline, candidate)) + "\n" + COMPARISON_NOTES


def render_codec_medians(run: Run, codec_names: Sequence[str]) -> str:
    """Every codec's median per profile and metric, beside each other."""
    pooled = pooled_samples(run.samples())
    rows = []
    for suite, profile, metric in sorted({(k[0], str(k[1]), k[3]) for k in pooled}):
        unit = None
        cells = []
        for codec in codec_names:
            entry = pooled.get((suite, profile if profile != "None" else None, codec, metric))
            if entry:
                unit = entry[0]
                cells.append(format_value(stats.summarize(entry[1]).median, unit))
            else:
                cells.append("-")
        if unit is not None:
            rows.append([profile, _label(metric), *cells])
    return format_rows(["Profile", "Metric", *codec_names], rows)
