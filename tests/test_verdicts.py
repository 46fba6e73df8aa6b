"""Verdicts: a winner only when the difference is significant and large enough."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from evbench_core.analysis import verdicts
from evbench_core.analysis.verdicts import (
    BASELINE,
    CANDIDATE,
    EQUAL,
    HIGHER_IS_BETTER,
    LOWER_IS_BETTER,
    NEGLIGIBLE,
    TOO_SMALL,
    UNDECIDED,
    Independent,
    Paired,
    decide_family,
)


def _lognormal(rng: random.Random, scale: float, n: int = 40) -> list[float]:
    return [scale * rng.lognormvariate(0.0, 0.05) for _ in range(n)]


def test_a_clearly_slower_candidate_loses_and_a_faster_one_wins():
    rng = random.Random(1)
    base = _lognormal(rng, 1.0)
    slow, fast = _lognormal(rng, 1.5), _lognormal(rng, 0.5)
    rows = [Independent("slow", LOWER_IS_BETTER, base, slow)]
    slower, faster = decide_family([*rows, Independent("fast", LOWER_IS_BETTER, base, fast)])
    assert slower.winner == "baseline" and slower.pct_diff == pytest.approx(50, abs=8)
    assert faster.winner == "candidate" and faster.p_holm < 0.05


def test_a_significant_but_tiny_difference_is_negligible():
    rng = random.Random(3)
    base = [1.0 + rng.gauss(0, 0.0005) for _ in range(200)]
    cand = [1.01 + rng.gauss(0, 0.0005) for _ in range(200)]  # 1 %: below the 2 % minimum
    (verdict,) = decide_family([Independent("tiny", LOWER_IS_BETTER, base, cand)])
    assert verdict.p_holm < 1e-6
    assert verdict.winner == NEGLIGIBLE
    assert 0.98 <= verdict.ratio_low < verdict.ratio_high <= 1.02


def test_the_same_distribution_names_no_winner_and_every_interval_holds_one():
    rng = random.Random(4)
    same = [_lognormal(rng, 1.0) for _ in range(20)]
    verdicts = decide_family(
        [Independent(f"same {i}", LOWER_IS_BETTER, same[2 * i], same[2 * i + 1]) for i in range(10)]
    )
    assert {v.winner for v in verdicts} <= {EQUAL, UNDECIDED}
    assert all(v.ratio_low <= 1 <= v.ratio_high for v in verdicts if v.p_holm >= 0.05)


def test_holm_correction_spans_the_rows():
    rng = random.Random(5)
    many = [
        Independent(f"row {i}", LOWER_IS_BETTER, _lognormal(rng, 1.0, 8), _lognormal(rng, 1.0, 8))
        for i in range(20)
    ]
    verdicts = decide_family(many)
    assert all(v.p_holm >= v.p_value for v in verdicts)


def _paired(label: str, log_ratios: list[float], better: str = LOWER_IS_BETTER) -> Paired:
    return Paired(label, better, log_ratios, 1.0, 1.0)


# Ten processes' log-ratios: a deterministic, symmetric spread of +/- 1 % around 0.
SPREAD = [0.002 * k for k in (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5)]


def test_a_candidate_ten_percent_slower_in_every_process_loses():
    (verdict,) = decide_family([_paired("encode", [math.log(1.10) + e for e in SPREAD])])
    assert verdict.winner == BASELINE
    # every process says "slower": the exact two-sided p is 2 / 2^10
    assert verdict.p_value == pytest.approx(2 / 1024)
    assert verdict.ratio == pytest.approx(1.10, rel=1e-9)  # symmetric spread: centre exact
    assert verdict.ratio_low < 1.10 < verdict.ratio_high
    assert verdict.n == 10


def test_higher_is_better_flips_the_winner():
    ratios = [math.log(1.10) + e for e in SPREAD]
    (paired,) = decide_family([_paired("capacity", ratios, HIGHER_IS_BETTER)])
    assert paired.winner == CANDIDATE
    rng = random.Random(2)
    twice = Independent("capacity", HIGHER_IS_BETTER, _lognormal(rng, 1.0), _lognormal(rng, 2.0))
    assert decide_family([twice])[0].winner == "candidate"


def test_log_ratios_centred_on_zero_and_narrow_are_equal():
    (verdict,) = decide_family([_paired("same", SPREAD)])
    assert verdict.winner == EQUAL
    assert verdict.p_value == pytest.approx(1.0)  # W+ sits exactly at its mean


def test_too_few_processes_say_so_instead_of_tie():
    # Five processes all 50 % slower: the exact test's best p is 2 / 32 > 0.05.
    (verdict,) = decide_family([_paired("encode", [math.log(1.5) + e for e in SPREAD[:5]])])
    assert verdict.winner == TOO_SMALL and verdict.too_small
    assert verdict.min_detectable is None
    assert verdict.min_p == pytest.approx(2 / 32)


def test_the_family_size_decides_what_n_is_too_small():
    # Six processes: best p 2 / 64 = 0.031, enough alone, not in a family of three (0.094).
    rows = [_paired(f"op {i}", [math.log(1.5) + e for e in SPREAD[2:8]]) for i in range(3)]
    (alone,) = decide_family(rows[:1])
    assert alone.winner == BASELINE and alone.p_value == pytest.approx(2 / 64)
    assert {v.winner for v in decide_family(rows)} == {TOO_SMALL}


def test_holm_across_the_family_turns_a_lone_raw_success_into_undecided():
    # Eight phases per codec, overlapping by a little: a winner alone, one row of twenty.
    base = [1.00, 1.02, 1.04, 1.06, 1.08, 1.10, 1.12, 1.14]
    cand = [1.091, 1.111, 1.131, 1.151, 1.171, 1.191, 1.211, 1.231]
    null = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7]
    rows = [Independent("effect", LOWER_IS_BETTER, base, cand)]
    rows += [Independent(f"null {i}", LOWER_IS_BETTER, null, null[::-1]) for i in range(19)]
    effect = decide_family(rows)[0]
    alone = decide_family(rows[:1])[0]
    assert alone.winner == BASELINE  # a winner on its own ...
    assert effect.p_value == alone.p_value and 0.0025 < effect.p_value < 0.05
    assert alone.ratio_low > 1.02  # the 95 % interval is clear of the minimum effect
    assert effect.p_holm == pytest.approx(20 * effect.p_value)  # Holm's first step, m = 20
    assert effect.winner == UNDECIDED  # ... undecided among twenty rows: Holm made it so
    # ... and the interval it prints is the one at Holm's step (level 1 - 0.05 / 20): it
    # holds 1, where the row's own 95 % interval lies clear of the band.
    assert effect.interval_level == pytest.approx(1 - 0.05 / 20)
    assert effect.ratio_low <= 1 <= effect.ratio_high


def test_the_minimum_detectable_effect_is_the_threshold_of_a_verdict():
    noise = [0.001 * k for k in (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5)]
    (probe,) = decide_family([_paired("probe", noise)])
    mde = probe.min_detectable
    assert 0.02 < mde < 0.03  # 2 % minimum effect plus half the interval's width
    just_above = math.log1p(mde) * 1.02
    just_below = math.log1p(mde) * 0.98
    (above,) = decide_family([_paired("above", [just_above + e for e in noise])])
    (below,) = decide_family([_paired("below", [just_below + e for e in noise])])
    assert above.winner == BASELINE
    assert below.winner == UNDECIDED and below.p_value == pytest.approx(2 / 1024)


def _aa_process_logs(rng: random.Random, processes: int, values: int) -> tuple[list, list]:
    """A/A: both arms identical, but each process gives each arm its own small offset
    (memory layout, cache placement): values within a process are not independent."""
    base, cand = [], []
    for _ in range(processes):
        offset_b, offset_c = rng.gauss(0, 0.1), rng.gauss(0, 0.1)
        base.append([math.exp(offset_b + rng.gauss(0, 0.005)) for _ in range(values)])
        cand.append([math.exp(offset_c + rng.gauss(0, 0.005)) for _ in range(values)])
    return base, cand


def test_replicates_not_values_keep_the_a_a_false_winner_rate_at_its_level():
    # Known answer: identical arms. Counting values (10 x 10 as n = 100) names winners
    # often (the 10 % process offsets look like a codec difference); counting processes
    # keeps false winners at the test's level (<= 5 % expected; 11 or more of 100 would
    # have probability 0.011 under Binomial(100, 0.05)).
    pooled_winners = paired_winners = 0
    for seed in range(100):
        rng = random.Random(seed)
        base, cand = _aa_process_logs(rng, processes=10, values=10)
        flat_b = [v for vs in base for v in vs]
        flat_c = [v for vs in cand for v in vs]
        # every value as if independent: what the old pooled comparison did
        (pooled,) = decide_family([Independent("aa", LOWER_IS_BETTER, flat_b, flat_c)])
        pooled_winners += pooled.significant
        ratios = [
            statistics.median(math.log(c) - math.log(b) for b, c in zip(bs, cs, strict=True))
            for bs, cs in zip(base, cand, strict=True)
        ]
        (paired,) = decide_family([_paired("aa", ratios)])
        paired_winners += paired.significant
    assert pooled_winners >= 20
    assert paired_winners <= 10


def test_unknown_direction_is_refused():
    with pytest.raises(ValueError):
        decide_family([_paired("x", SPREAD, better="sideways")])


def test_method_is_named_on_every_verdict():
    (paired,) = decide_family([_paired("x", SPREAD)])
    (independent,) = decide_family([Independent("y", LOWER_IS_BETTER, [1.0] * 3, [2.0] * 3)])
    assert paired.method == verdicts.PAIRED_METHOD
    assert independent.method == verdicts.INDEPENDENT_METHOD
