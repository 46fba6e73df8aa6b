"""The four outcomes of a tested row, each on data whose answer is worked by hand, and
the interval the verdict prints: the one at Holm's step for the row.

Hand-worked arithmetic (docstrings of each test): ten pairs whose log-ratios are
c + 0.001 k (or 0.01 k), k = -5..-1, 1..5. Their 55 Walsh averages (d_i + d_j) / 2
are symmetric about c; in units of the step the smallest are -5, -4.5, -4, -4,
-3.5, -3.5, -3, -3, -3, ... For n = 10 the exact signed-rank distribution
(subsets of {1..10} by sum: 1 1 1 2 2 3 4 5 6 8 ... of 1024) gives
P(W+ <= 8) = 25/1024 = 0.0244 <= 0.025 < P(W+ <= 9) = 33/1024: the 95 % interval
is the 9th smallest to the 9th largest Walsh average, c -/+ 3 steps; and
P(W+ <= 5) = 10/1024 <= 0.0125 < P(W+ <= 6) = 14/1024: the 97.5 % interval is the
6th from each end, c -/+ 3.5 steps. Every pair of one sign gives p = 2/1024.
"""

from __future__ import annotations

import math
import random

import pytest

from evbench_core.analysis import verdicts as v

STEPS = (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5)


def pairs(centre: float, step: float, count: int = 10) -> v.Paired:
    ratios = [centre + step * k for k in STEPS[:count]]
    return v.Paired("row", v.LOWER_IS_BETTER, ratios, 1.0, math.exp(centre))


@pytest.mark.parametrize(
    ("centre", "step", "winner", "p", "low", "high"),
    [
        # 10 % slower: the candidate is slower, the baseline wins
        (math.log(1.10), 0.001, v.BASELINE, ("p_value", 2 / 1024),
         pytest.approx(1.10 * math.exp(-0.003)), pytest.approx(1.10 * math.exp(0.003))),
        # 1 % slower in every pair: significant (p = 2/1024), but the interval
        # 1.01 x exp(-/+0.003) = 1.00698 to 1.01303 lies inside 0.98 to 1.02: different,
        # by less than the margin
        (math.log(1.01), 0.001, v.NEGLIGIBLE, ("p_holm", 2 / 1024),
         pytest.approx(1.00698, abs=1e-5), pytest.approx(1.01303, abs=1e-5)),
        # centred on 1, steps of 0.01: W+ = 27.5 (its mean), p = 1; the interval
        # exp(-/+0.03) = 0.97045 to 1.03045 reaches past both edges of the band
        (0.0, 0.01, v.UNDECIDED, ("p_value", 1.0),
         pytest.approx(0.97045, abs=1e-5), pytest.approx(1.03045, abs=1e-5)),
    ],
    ids=["winner", "negligible", "undecided"],
)  # fmt: skip
def test_each_outcome_with_its_hand_worked_interval(centre, step, winner, p, low, high):
    (verdict,) = v.decide_family([pairs(centre, step)])
    assert verdict.winner == winner
    assert getattr(verdict, p[0]) == pytest.approx(p[1])
    assert (verdict.ratio_low, verdict.ratio_high) == (low, high)
    if winner == v.BASELINE:
        assert verdict.pct_diff == pytest.approx(10.0)


def test_n_too_small_when_the_plan_cannot_reach_the_level():
    # Five pairs, all 50 % slower: the best two-sided p is 2/32 = 0.0625 > 0.05.
    (verdict,) = v.decide_family([pairs(math.log(1.5), 0.001, count=5)])
    assert verdict.winner == v.TOO_SMALL
    assert verdict.ratio_low is None and verdict.ratio_high is None
    assert verdict.min_detectable is None


def test_the_interval_is_taken_at_holms_step_for_the_row():
    # Two rows: the effect (p = 2/1024, Holm's first step: 2 x p < 0.05, rejected) gets
    # the 97.5 % interval, c -/+ 3.5 steps; the null row (p = 1, not rejected) the
    # level of the step where Holm stopped, 1 - 0.05 / 1.
    effect, null = v.decide_family([pairs(math.log(1.10), 0.001), pairs(0.0, 0.01)])
    assert effect.interval_level == pytest.approx(0.975)
    assert effect.ratio_low == pytest.approx(1.10 * math.exp(-0.0035))
    assert effect.ratio_high == pytest.approx(1.10 * math.exp(0.0035))
    assert effect.winner == v.BASELINE
    assert null.interval_level == pytest.approx(0.95)
    assert null.winner == v.UNDECIDED


def test_holm_levels_by_hand():
    # p = 0.001, 0.04, 0.01, 0.3 (m = 4): sorted 0.001 (x4 = 0.004, rejected, level
    # 1 - 0.05/4), 0.01 (x3 = 0.03, rejected, 1 - 0.05/3), 0.04 (x2 = 0.08: Holm stops
    # here, 1 - 0.05/2), and 0.3 keeps the level where Holm stopped, 1 - 0.05/2.
    levels = v.holm_levels([0.001, 0.04, 0.01, 0.3])
    expected = [1 - 0.05 / 4, 1 - 0.05 / 2, 1 - 0.05 / 3, 1 - 0.05 / 2]
    assert levels == pytest.approx(expected)


@pytest.mark.parametrize("seed", range(40))
def test_no_interval_excludes_one_where_holm_does_not_reject(seed: int) -> None:
    """Random families of paired and independent rows, some with effects, some
    with ties among the values: whenever a row's adjusted p is >= 0.05 its printed
    interval holds 1; whenever Holm rejects it, a named winner's interval leaves 1
    out; % Diff lies inside the interval (so they never differ in sign)."""
    rng = random.Random(seed)
    rows: list[v.Paired | v.Independent] = []
    for index in range(rng.randint(1, 12)):
        effect = rng.choice([0.0, 0.0, 0.03, -0.08, 0.2])
        n = rng.randint(4, 25)
        if rng.random() < 0.5:
            logs = [effect + rng.gauss(0, 0.05) for _ in range(n)]
            if rng.random() < 0.3:
                logs = [round(d, 2) for d in logs]  # tied magnitudes: the normal approximation
            rows.append(v.Paired(f"p{index}", v.LOWER_IS_BETTER, logs, 1.0, 1.0))
        else:
            base = [math.exp(rng.gauss(0, 0.05)) for _ in range(n)]
            cand = [math.exp(effect + rng.gauss(0, 0.05)) for _ in range(rng.randint(4, 25))]
            rows.append(v.Independent(f"i{index}", v.LOWER_IS_BETTER, base, cand))
    for verdict in v.decide_family(rows):
        if verdict.ratio_low is None:
            assert verdict.winner == v.TOO_SMALL
            continue
        assert verdict.ratio_low <= verdict.ratio <= verdict.ratio_high
        if verdict.p_holm >= 0.05:
            assert verdict.ratio_low <= 1 <= verdict.ratio_high, verdict
            assert verdict.winner in (v.EQUAL, v.UNDECIDED)
        elif verdict.significant:
            assert not verdict.ratio_low <= 1 <= verdict.ratio_high
