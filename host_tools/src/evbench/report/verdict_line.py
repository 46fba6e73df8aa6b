"""The verdict in one line per profile, first in every output:

    seed: Protobuf - 3.6x smaller, 45x faster to encode, RTT 22 % lower; jitter equal
    (within 50 µs); fits can-500k, JSON does not

At most WIDTH columns: the leading codec (the one that wins more tested rows), then
what it wins, what the other wins, what was shown equal (with its margin), how many
rows are still open (undecided, and n too small), and the bus fit. When no codec wins
a tested row the line opens on "no winner" and names the codec of each fact:

    seed: no winner; Protobuf 3.6x smaller; 3 n too small

The line keeps them by PRIORITY, the open counts first; what does not fit the line is
in the answer and the table below it. Every
figure is the comparison's own (the test's ratio estimate for a tested row, the exact
ratio for a fact), said as ratios.change_text says it everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evbench.report import ratios
from evbench.report.names import display_name
from evbench_core.analysis.verdicts import (
    BASELINE,
    CANDIDATE,
    EQUAL,
    NEGLIGIBLE,
    TOO_SMALL,
    UNDECIDED,
)
from evbench_core.comparison import FACT, TESTED, Comparison, Row

WIDTH = 100
#: What the line opens on when neither codec wins a tested row.
NO_WINNER = "no winner"
#: The rows the line speaks of, in order of importance: (metric, link phase or None).
KEY_ROWS = (
    ("size", None),
    ("encode", None),
    ("decode", None),
    ("rtt", "periodic"),
    ("jitter_stdev", "periodic"),
    ("cpu_per_msg_client", "periodic"),
    ("capacity_msgs", "capacity"),
)
#: How the line names each key row's metric; operations follow their change words.
NAMES = {
    "size": "",
    "encode": "to encode",
    "decode": "to decode",
    "rtt": "RTT",
    "jitter_stdev": "jitter",
    "cpu_per_msg_client": "client CPU",
    "capacity_msgs": "capacity",
}
#: Which buses each codec fits, per profile: profile -> codec -> bus names.
Fits = Mapping[str, Mapping[str, Sequence[str]]]


def _key(row: Row) -> int | None:
    phase = row.identity.params_dict.get("phase")
    for index, (metric, wanted) in enumerate(KEY_ROWS):
        if row.identity.metric == metric and (wanted is None or phase == wanted):
            return index
    return None


def _phrase(metric: str, ratio: float) -> str:
    """'45x faster to encode', 'RTT 22 % lower', '3.6x smaller'."""
    change = ratios.change_text(ratio, metric)
    name = NAMES.get(metric, metric)
    if metric in ratios.FASTER:
        return f"{change} {name}"
    return f"{name} {change}".strip()


def _ratio(row: Row) -> float | None:
    if row.role == FACT:
        return None if row.fact_difference is None else 1 + row.fact_difference
    return row.verdict.ratio if row.verdict is not None else None


def _within(row: Row) -> str:
    assert row.verdict is not None
    margin = row.verdict.margin.split(",")[0] or f"{row.verdict.margin_width * 100:g} %"
    return f"within {margin}"


#: Which items the line keeps first when it cannot hold them all (KEY_ROWS indices):
#: how many rows are undecided or n too small (first: a line that names a leader must
#: not hide that rows are still open), then size, encode, RTT, the bus fit (a hard limit
#: of the product), jitter, then the rest. The seed's line once dropped "1 undecided" for its
#: bus fit at 100 columns.
PRIORITY = ("open", 0, 1, 3, "fits", 4, 2, 5, 6)
#: The groups of the line, in order, and what stands before a group's first item.
GAINS, LOSSES, EQUAL_ROWS, OPEN, FIT = range(5)


#: One item of the line: (priority key, group, order in the group, text).
Item = tuple[object, int, int, str]


def _row_item(row: Row, lead_is_candidate: bool, lead: str, base: str, cand: str) -> Item | None:
    """A key row's item, said for the leading codec: a fact's exact ratio, a tested row
    one codec wins (the lead's gain or the other's), or one shown equal; None for a row
    the line does not speak of or says nothing about (undecided, too small, no change)."""
    index, ratio = _key(row), _ratio(row)
    if index is None or ratio is None or ratio <= 0:
        return None
    metric = row.identity.metric
    lead_ratio = ratio if lead_is_candidate else 1 / ratio
    if row.role == FACT:
        return (index, GAINS, index, _phrase(metric, lead_ratio)) if ratio != 1 else None
    assert row.verdict is not None
    winner = row.verdict.winner
    if winner in (CANDIDATE, BASELINE):
        mine = (cand if winner == CANDIDATE else base) == lead
        text = _phrase(metric, lead_ratio if mine else 1 / lead_ratio)
        return (index, GAINS if mine else LOSSES, index, text)
    if winner in (EQUAL, NEGLIGIBLE):
        said = NAMES.get(metric, metric).removeprefix("to ") or metric
        return (index, EQUAL_ROWS, index, f"{said} equal ({_within(row)})")
    return None


def _fit_item(fits: Mapping[str, Sequence[str]], lead: str, other: str) -> Item | None:
    """The bus fit: the buses only the lead fits, else those both fit; None: neither."""
    lead_fits = list(fits.get(lead, ()))
    other_fits = set(fits.get(other, ()))
    only = [bus for bus in lead_fits if bus not in other_fits]
    if only:
        return ("fits", FIT, 0, f"fits {', '.join(only)}, {display_name(other)} does not")
    if lead_fits:
        return ("fits", FIT, 0, f"both fit {', '.join(lead_fits)}")
    return None


def _parts(
    comparison: Comparison, rows: Sequence[Row], fits: Mapping[str, Sequence[str]]
) -> tuple[str, str, list[Item]]:
    """The leading codec's name (the one that wins more tested rows; "no winner" when
    neither wins one), the other's, and the line's items: with no winner each fact names
    its codec, and the open rows are counted by the table's words for them."""
    base, cand = comparison.baseline, comparison.candidate
    tested = [r for r in rows if r.role == TESTED and r.verdict is not None]
    winners = [r.verdict.winner for r in tested if r.verdict is not None]
    won = {cand: winners.count(CANDIDATE), base: winners.count(BASELINE)}
    lead = cand if won[cand] >= won[base] else base
    other = base if lead == cand else cand
    found = (_row_item(row, lead == cand, lead, base, cand) for row in rows)
    items = [item for item in found if item is not None]
    if not won[lead]:  # no "Lead - " to say whose change a fact (GAINS) is: each says it
        named = f"{display_name(lead)} "
        items = [(*i[:3], named + i[3]) if i[1] == GAINS else i for i in items]
    # undecided (more data may decide) and n too small (no data at this plan could) are
    # different news: counted apart, as the table says them
    for order, word in enumerate((UNDECIDED, TOO_SMALL)):
        if count := winners.count(word):
            items.append(("open", OPEN, order, f"{count} {word}"))
    fit = _fit_item(fits, lead, other) if fits else None
    if fit is not None:
        items.append(fit)
    lead_text = display_name(lead) if won[lead] else NO_WINNER
    return lead_text, display_name(other), items


def _render(profile: str, lead: str, other: str, items: Sequence[Item]) -> str:
    line = f"{profile}: {lead}"
    group = None
    for _rank, kind, _order, text in sorted(items, key=lambda item: (item[1], item[2])):
        if kind == group:
            line += ", " + text
        elif kind == GAINS and lead != NO_WINNER:
            line += " - " + text
        elif kind == LOSSES:
            line += f"; {other} " + text
        else:
            line += "; " + text
        group = kind
    return line


def profile_line(
    comparison: Comparison,
    profile: str,
    fits: Mapping[str, Sequence[str]] | None = None,
    width: int = WIDTH,
) -> str:
    """The one-line verdict of `profile`, at most `width` columns: the items in order of
    PRIORITY while the line holds them (the rest is in the answer below it)."""
    rows = [r for r in comparison.rows if (r.identity.profile or "-") == profile]
    lead, other, items = _parts(comparison, rows, fits or {})
    rank = {key: place for place, key in enumerate(PRIORITY)}
    chosen: list[Item] = []
    for item in sorted(items, key=lambda item: rank.get(item[0], len(rank))):
        if len(_render(profile, lead, other, [*chosen, item])) <= width:
            chosen.append(item)
    return _render(profile, lead, other, chosen)


def lines(comparison: Comparison, fits: Fits | None = None, width: int = WIDTH) -> list[str]:
    """One verdict line per profile of the comparison, in its order."""
    profiles = list(dict.fromkeys(r.identity.profile or "-" for r in comparison.rows))
    return [profile_line(comparison, p, (fits or {}).get(p), width) for p in profiles]


__all__ = ["KEY_ROWS", "PRIORITY", "WIDTH", "lines", "profile_line"]
