"""How a change is said, the same in the terminal, the report, compare and comparison.csv.

A ratio candidate / baseline of 2 or more (or 1/2 or less) reads as a factor, as
pyperf and hyperfine say it ("48x faster", "3.6x smaller"); a smaller change reads
in percent ("22 % lower"). The words follow the metric: times are faster or slower
(codec operations) or lower or higher (link timing), sizes smaller or larger.
"""

from __future__ import annotations

#: From this factor on, a change is said as "Nx".
FACTOR_FROM = 2.0
#: Metrics whose lower values are "faster".
FASTER = frozenset({"encode", "decode", "decode_access"})
SIZES = frozenset({"size", "size_deflate", "bandwidth_payload", "bandwidth_wire"})


def words(metric: str) -> tuple[str, str]:
    """The words for a lower and a higher value of `metric`."""
    if metric in FASTER:
        return "faster", "slower"
    if metric in SIZES:
        return "smaller", "larger"
    return "lower", "higher"


def factor(ratio: float) -> float:
    """The change as a factor of at least 1: 48 for a ratio of 1/48 or of 48."""
    return 1 / ratio if ratio < 1 else ratio


def change_text(ratio: float, metric: str) -> str:
    """'48x faster', '3.6x smaller', '22 % lower': the candidate's change against the
    baseline, from the ratio candidate / baseline."""
    lower, higher = words(metric)
    word = lower if ratio < 1 else higher
    if ratio <= 0:
        return f"100 % {lower}"
    times = factor(ratio)
    if times >= FACTOR_FROM:
        return f"{times:.0f}x {word}" if times >= 10 else f"{times:.1f}x {word}"
    percent = abs(ratio - 1) * 100
    shown = f"{percent:.1f}" if percent < 10 else f"{percent:.0f}"
    return f"{shown} % {word}"


__all__ = ["FACTOR_FROM", "change_text", "factor", "words"]
