"""Verdicts: a winner only when the difference is significant and large enough, each
outcome and its printed interval (at Holm's step for the row) on hand-worked data; margins
in the product's terms, a sequential run's looks, the one-line verdict.

Hand-worked arithmetic: ten pairs whose log-ratios are c + s k, k = -5..-1, 1..5. Their
55 Walsh averages (d_i + d_j) / 2 are symmetric about c; in units of the step s the
smallest are -5, -4.5, -4, -4, -3.5, -3.5, -3, -3, -3, ... For n = 10 the exact
signed-rank distribution (subsets of {1..10} by sum: 1 1 1 2 2 3 4 5 6 8 ... of 1024)
gives P(W+ <= 8) = 25/1024 = 0.0244 <= 0.025 < P(W+ <= 9) = 33/1024: the 95 % interval
is the 9th smallest to the 9th largest Walsh average, c -/+ 3 steps; and
P(W+ <= 5) = 10/1024 <= 0.0125 < P(W+ <= 6) = 14/1024: the 97.5 % interval is the
6th from each end, c -/+ 3.5 steps. Every pair of one sign gives p = 2/1024. For an
arithmetic sequence a + i h (i = 0..9) the averages are a + h (i + j) / 2, and the counts
of i + j = 0, 1, 2, 3, 4 are 1, 1, 2, 2, 3 (cumulative 9 at i + j = 4): the 95 % interval
is [a + 2 h, a + 7 h].
"""

import csv
import io
import math
import random
import re
import shutil
import statistics
from pathlib import Path

import pytest
from report_helpers import evbench

from evbench.report import answer, exports, table, verdict_line
from evbench_core import comparison, results, sequential
from evbench_core.analysis import margins
from evbench_core.analysis import verdicts as v
from evbench_core.errors import UserError
from evbench_core.results import SampleSet

RUN = Path(__file__).parent / "data" / "runs" / "codec-link-v1"
PERIOD_20HZ = {"phase": "periodic", "rate_hz": 20.0}
STEPS = (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5)
#: Ten processes' log-ratios: a deterministic, symmetric spread of +/- 1 % around 0.
SPREAD = [0.002 * k for k in STEPS]


def pairs(centre: float, step: float, count: int = 10) -> v.Paired:
    ratios = [centre + step * k for k in STEPS[:count]]
    return v.Paired("row", v.LOWER_IS_BETTER, ratios, 1.0, math.exp(centre))


def _paired(label: str, log_ratios: list[float], better: str = v.LOWER_IS_BETTER) -> v.Paired:
    return v.Paired(label, better, log_ratios, 1.0, 1.0)


def _lognormal(rng: random.Random, scale: float, n: int = 40) -> list[float]:
    return [scale * rng.lognormvariate(0.0, 0.05) for _ in range(n)]


def _independent(label: str, base: list[float], cand: list[float]) -> v.Independent:
    return v.Independent(label, v.LOWER_IS_BETTER, base, cand)


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
        # centred on 1, steps of 0.002: p = 1 again; exp(-/+0.006) = 0.99402 to 1.00602
        # lies inside the band and holds 1
        (0.0, 0.002, v.EQUAL, ("p_value", 1.0),
         pytest.approx(0.99402, abs=1e-5), pytest.approx(1.00602, abs=1e-5)),
    ],
    ids=["winner", "negligible", "undecided", "equal"],
)  # fmt: skip
def test_each_outcome_with_its_hand_worked_interval(centre, step, winner, p, low, high):
    (verdict,) = v.decide_family([pairs(centre, step)])
    assert verdict.winner == winner
    assert getattr(verdict, p[0]) == pytest.approx(p[1])
    assert (verdict.ratio_low, verdict.ratio_high) == (low, high)
    assert verdict.ratio == pytest.approx(math.exp(centre), rel=1e-9)  # symmetric: c exactly
    assert verdict.n == 10
    if winner == v.BASELINE:
        assert verdict.pct_diff == pytest.approx(10.0)


def test_n_too_small_when_the_plan_or_family_cannot_reach_the_level_and_holms_step_intervals():
    # Five pairs, all 50 % slower: the best two-sided p is 2/32 = 0.0625 > 0.05.
    (verdict,) = v.decide_family([pairs(math.log(1.5), 0.001, count=5)])
    assert verdict.winner == v.TOO_SMALL and verdict.too_small
    assert verdict.min_p == pytest.approx(2 / 32)
    assert verdict.ratio_low is None and verdict.ratio_high is None
    assert verdict.min_detectable is None
    # Six processes: best p 2 / 64 = 0.031, enough alone, not in a family of three (0.094).
    rows = [_paired(f"op {i}", [math.log(1.5) + e for e in SPREAD[2:8]]) for i in range(3)]
    (alone,) = v.decide_family(rows[:1])
    assert alone.winner == v.BASELINE and alone.p_value == pytest.approx(2 / 64)
    assert {verdict.winner for verdict in v.decide_family(rows)} == {v.TOO_SMALL}
    # Two rows: the effect (p = 2/1024, Holm's first step: 2 x p < 0.05, rejected) gets
    # the 97.5 % interval, c -/+ 3.5 steps; the null row (p = 1, not rejected) the
    # level of the step where Holm stopped, 1 - 0.05 / 1.
    effect, null = v.decide_family([pairs(math.log(1.10), 0.001), pairs(0.0, 0.01)])
    assert effect.interval_level == pytest.approx(0.975) and effect.winner == v.BASELINE
    assert effect.ratio_low == pytest.approx(1.10 * math.exp(-0.0035))
    assert effect.ratio_high == pytest.approx(1.10 * math.exp(0.0035))
    assert null.interval_level == pytest.approx(0.95) and null.winner == v.UNDECIDED
    # Holm's levels by hand: p = 0.001, 0.04, 0.01, 0.3 (m = 4): sorted 0.001 (x4 = 0.004,
    # rejected, level 1 - 0.05/4), 0.01 (x3 = 0.03, rejected, 1 - 0.05/3), 0.04 (x2 = 0.08:
    # Holm stops here, 1 - 0.05/2), and 0.3 keeps the level where Holm stopped, 1 - 0.05/2.
    levels = v.holm_levels([0.001, 0.04, 0.01, 0.3])
    expected = [1 - 0.05 / 4, 1 - 0.05 / 2, 1 - 0.05 / 3, 1 - 0.05 / 2]
    assert levels == pytest.approx(expected)
    # Eight phases per codec, overlapping by a little: a winner alone, one row of twenty.
    base = [1.00, 1.02, 1.04, 1.06, 1.08, 1.10, 1.12, 1.14]
    cand = [1.091, 1.111, 1.131, 1.151, 1.171, 1.191, 1.211, 1.231]
    null = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7]
    rows = [_independent("effect", base, cand)]
    rows += [_independent(f"null {i}", null, null[::-1]) for i in range(19)]
    effect = v.decide_family(rows)[0]
    alone = v.decide_family(rows[:1])[0]
    assert alone.winner == v.BASELINE  # a winner on its own ...
    assert effect.p_value == alone.p_value and 0.0025 < effect.p_value < 0.05
    assert alone.ratio_low > 1.02  # the 95 % interval is clear of the minimum effect
    assert effect.p_holm == pytest.approx(20 * effect.p_value)  # Holm's first step, m = 20
    assert effect.winner == v.UNDECIDED  # ... undecided among twenty rows: Holm made it so
    # ... and the interval it prints is the one at Holm's step (level 1 - 0.05 / 20): it
    # holds 1, where the row's own 95 % interval lies clear of the band.
    assert effect.interval_level == pytest.approx(1 - 0.05 / 20)
    assert effect.ratio_low <= 1 <= effect.ratio_high


@pytest.mark.parametrize("seed", range(40))
def test_no_interval_excludes_one_where_holm_does_not_reject(seed: int) -> None:
    """Random families, paired and independent, with effects and ties: an interval beside
    p (Holm) >= 0.05 holds 1, a named winner's leaves it out, % Diff lies inside it (the
    same sign), and Holm never lowers a p."""
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
            rows.append(_independent(f"i{index}", base, cand))
    for verdict in v.decide_family(rows):
        assert verdict.p_holm >= verdict.p_value
        if verdict.ratio_low is None:
            assert verdict.winner == v.TOO_SMALL
            continue
        assert verdict.ratio_low <= verdict.ratio <= verdict.ratio_high
        if verdict.p_holm >= 0.05:
            assert verdict.ratio_low <= 1 <= verdict.ratio_high, verdict
            assert verdict.winner in (v.EQUAL, v.UNDECIDED)
        elif verdict.significant:
            assert not verdict.ratio_low <= 1 <= verdict.ratio_high


def test_clear_differences_win_a_tiny_one_is_negligible_the_same_ties_and_mde_is_the_edge():
    rng = random.Random(1)
    base, slow, fast = _lognormal(rng, 1.0), _lognormal(rng, 1.5), _lognormal(rng, 0.5)
    rows = [_independent("slow", base, slow), _independent("fast", base, fast)]
    slower, faster = v.decide_family(rows)
    assert slower.winner == "baseline" and slower.pct_diff == pytest.approx(50, abs=8)
    assert faster.winner == "candidate" and faster.p_holm < 0.05
    # higher is better flips it
    ratios = [math.log(1.10) + e for e in SPREAD]
    (paired,) = v.decide_family([_paired("capacity", ratios, v.HIGHER_IS_BETTER)])
    assert paired.winner == v.CANDIDATE
    rng = random.Random(2)
    base, doubled = _lognormal(rng, 1.0), _lognormal(rng, 2.0)
    twice = v.Independent("capacity", v.HIGHER_IS_BETTER, base, doubled)
    assert v.decide_family([twice])[0].winner == "candidate"
    rng = random.Random(3)
    base = [1.0 + rng.gauss(0, 0.0005) for _ in range(200)]
    cand = [1.01 + rng.gauss(0, 0.0005) for _ in range(200)]  # 1 %: below the 2 % minimum
    (verdict,) = v.decide_family([_independent("tiny", base, cand)])
    assert verdict.p_holm < 1e-6 and verdict.winner == v.NEGLIGIBLE
    assert 0.98 <= verdict.ratio_low < verdict.ratio_high <= 1.02
    rng = random.Random(4)
    same = [_lognormal(rng, 1.0) for _ in range(20)]
    rows = [_independent(f"same {i}", same[2 * i], same[2 * i + 1]) for i in range(10)]
    found = v.decide_family(rows)
    assert {verdict.winner for verdict in found} <= {v.EQUAL, v.UNDECIDED}
    assert all(f.ratio_low <= 1 <= f.ratio_high for f in found if f.p_holm >= 0.05)
    with pytest.raises(ValueError):  # an unknown direction
        v.decide_family([_paired("x", SPREAD, better="sideways")])
    (paired,) = v.decide_family([_paired("x", SPREAD)])
    (independent,) = v.decide_family([_independent("y", [1.0] * 3, [2.0] * 3)])
    assert (paired.method, independent.method) == (v.PAIRED_METHOD, v.INDEPENDENT_METHOD)
    # the minimum detectable effect is the threshold of a verdict
    noise = [0.001 * k for k in STEPS]
    (probe,) = v.decide_family([_paired("probe", noise)])
    mde = probe.min_detectable
    assert 0.02 < mde < 0.03  # 2 % minimum effect plus half the interval's width
    (above,) = v.decide_family([_paired("above", [math.log1p(mde) * 1.02 + e for e in noise])])
    (below,) = v.decide_family([_paired("below", [math.log1p(mde) * 0.98 + e for e in noise])])
    assert above.winner == v.BASELINE
    assert below.winner == v.UNDECIDED and below.p_value == pytest.approx(2 / 1024)


def test_replicates_not_values_keep_the_a_a_false_winner_rate_at_its_level():
    # Identical arms. Counting values (10 x 10 as n = 100) names winners often (the 10 %
    # process offsets look like a codec difference); counting processes keeps false winners
    # at the level (11 or more of 100 have probability 0.011 under Binomial(100, 0.05)).
    pooled_winners = paired_winners = 0
    for seed in range(100):
        rng = random.Random(seed)
        base, cand = [], []  # A/A, but each process gives each arm its own small offset
        for _ in range(10):  # (memory layout, cache placement): its values are not independent
            offset_b, offset_c = rng.gauss(0, 0.1), rng.gauss(0, 0.1)
            base.append([math.exp(offset_b + rng.gauss(0, 0.005)) for _ in range(10)])
            cand.append([math.exp(offset_c + rng.gauss(0, 0.005)) for _ in range(10)])
        flat_b = [value for values in base for value in values]
        flat_c = [value for values in cand for value in values]
        (pooled,) = v.decide_family([_independent("aa", flat_b, flat_c)])  # every value alone
        pooled_winners += pooled.significant
        ratios = [
            statistics.median(math.log(c) - math.log(b) for b, c in zip(bs, cs, strict=True))
            for bs, cs in zip(base, cand, strict=True)
        ]
        (paired,) = v.decide_family([_paired("aa", ratios)])
        paired_winners += paired.significant
    assert pooled_winners >= 20
    assert paired_winners <= 10


def test_margins_parse_and_resolve_in_the_products_terms():
    jitter = dict.fromkeys(("jitter_stdev", "jitter_rfc3550", "rtt_delta_abs"), "50us")
    assert margins.parse(["jitter=50us", "encode=2%"]) == {**jitter, "encode": "2%"}
    # 0.1 % of a 50 ms period is 50 µs; of a core at 20 Hz x 4 streams 0.001 / 80 s
    assert margins.resolve("rtt", PERIOD_20HZ).half_width == pytest.approx(50e-6)
    cpu = margins.resolve("cpu_per_msg_client", PERIOD_20HZ, streams=4)
    assert cpu.scale == margins.DIFFERENCE and cpu.half_width == pytest.approx(12.5e-6)
    # no period (the capacity phase): a relative margin
    assert margins.resolve("rtt_transport", {"phase": "capacity"}).scale == margins.RATIO
    chosen = margins.parse(["jitter=0.2ms"])
    assert margins.resolve("jitter_stdev", PERIOD_20HZ, chosen).half_width == pytest.approx(2e-4)
    for bad in ("jitter", "jitter=fast", "nothing=5%", "rtt=5%core", "rtt=0us"):
        with pytest.raises(UserError):
            margins.parse([bad])


CODEC_TIME = "N%, Nus, Nms or Ns"


@pytest.mark.parametrize(
    ("item", "outcome"),
    [
        ("capacity=3%", {"capacity_msgs": "3%"}),
        ("codec=20us", dict.fromkeys(("encode", "decode", "decode_access"), "20us")),
        ("rtt=0.1%period", {"rtt": "0.1%period"}),
        ("cpu_per_msg_client=0.2%core", {"cpu_per_msg_client": "0.2%core"}),
        # capacity counts messages a second at no period: a time or a period is no unit of it
        ("capacity=50us", "capacity_msgs rows take only N%"),
        ("capacity_msgs=2ms", "capacity_msgs rows take only N%"),
        ("capacity=0.1%period", "capacity_msgs rows take only N%"),
        # a codec operation is timed at no period (it was swapped for a 5 % band)
        ("codec=1%period", f"encode rows take {CODEC_TIME}"),
        ("decode_access=1%period", f"decode_access rows take {CODEC_TIME}"),
        ("encode=0.1%core", f"encode rows take {CODEC_TIME}"),
    ],
)
def test_a_margin_is_kept_in_a_unit_its_rows_take_and_refused_in_another(item, outcome):
    if isinstance(outcome, dict):
        assert margins.parse([item]) == outcome
        return
    with pytest.raises(UserError, match=re.escape(f"--margin {item}: {outcome}")):
        margins.parse([item])


@pytest.mark.parametrize(
    ("first_us", "step_us", "interval_us", "word"),
    [
        (100, 1, (102, 107), v.BASELINE),  # beyond +50 µs and significant: the baseline wins
        (10, 1, (12, 17), v.NEGLIGIBLE),  # significant, but inside the 50 µs margin
        (-4.5, 1, (-2.5, 2.5), v.EQUAL),  # inside the margin and holds zero
        (30, 5, (40, 65), v.UNDECIDED),  # significant, straddles the margin's edge
    ],
)
def test_every_word_on_hand_worked_differences(first_us, step_us, interval_us, word):
    band = margins.Band(margins.DIFFERENCE, 50e-6, "50 µs")
    values = [first_us * 1e-6 + i * (step_us * 1e-6) for i in range(10)]
    row = v.Paired("RTT", v.LOWER_IS_BETTER, [0.0] * 10, 400e-6, 400e-6, values)
    (verdict,) = v.decide_family([row], bands=[band])
    assert verdict.winner == word
    assert verdict.diff_low == pytest.approx(interval_us[0] * 1e-6)
    assert verdict.diff_high == pytest.approx(interval_us[1] * 1e-6)
    if word != v.EQUAL:
        assert verdict.p_holm == pytest.approx(2 / 1024)


def test_tied_differences_holding_zero_are_equal_and_a_row_points_the_differences_way():
    # Differences in µs: 5 5 10 10 5 10 0 5 0 -5. The test drops the two zeros: |d| 5 (x5,
    # ranks 1-5, 3 each) and 10 (x3, ranks 6-8, 7 each); W+ = 4 x 3 + 3 x 7 = 33, mean
    # 8 x 9 / 4 = 18, ties: var = 8 x 9 x 17 / 24 - (120 + 24) / 48 = 48, so
    # z = (15 - 0.5) / sqrt(48) = 2.093 and p = 0.0364 < 0.05: rejected. The interval keeps
    # the zeros: of the 55 Walsh averages the smallest are -5 (1), -2.5 (2), 0 (7) and the
    # largest 10 (6), 7.5 (12); the 9th from each end (n = 10, 95 %) is 0 and 7.5 µs.
    # Inside 50 µs and holding 0: equal, not negligible (which claims a difference).
    values = [d * 1e-6 for d in (5, 5, 10, 10, 5, 10, 0, 5, 0, -5)]
    row = v.Paired("jitter", v.LOWER_IS_BETTER, [0.0] * 10, 400e-6, 400e-6, values)
    band = margins.Band(margins.DIFFERENCE, 50e-6, "50 µs")
    (verdict,) = v.decide_family([row], bands=[band])
    z = (15 - 0.5) / math.sqrt(48)
    assert verdict.p_holm == pytest.approx(2 * (1 - statistics.NormalDist().cdf(z)))
    assert verdict.interval == pytest.approx((0.0, 7.5e-6))
    assert verdict.winner == v.EQUAL
    # RTT at 20 Hz (margin 50 µs: decided on differences). 11 phase pairs at 10 ms, Protobuf
    # 250 µs faster; 5 at 50 µs, Protobuf twice as slow (+50 µs). Of the 136 Walsh averages of
    # the differences 66 are -250, 55 are (-250 + 50) / 2 = -100 and 15 are +50 µs: the
    # estimate (the 68th and 69th) is -100 µs, and the 95 % interval (n = 16: the 30th from
    # each end, P(W+ <= 29) = 0.022) is -250 to -100 µs, beyond -50 µs: Protobuf wins. The
    # log-ratios' estimate would say the other way: (log 0.975 + log 2) / 2 = +0.334, 40 %
    # higher. The baseline's level is 10 ms (median of 16), so the change is -100 µs / 10 ms
    # = -1.0 % and Protobuf's cell 10 ms - 100 µs = 9.9 ms.
    found, row, cells = _decided("rtt", [(10e-3, 9.75e-3)] * 11 + [(50e-6, 100e-6)] * 5)
    verdict = row.verdict
    assert verdict.scale == margins.DIFFERENCE and verdict.winner == v.CANDIDATE
    assert verdict.difference == pytest.approx(-100e-6)
    assert verdict.interval == pytest.approx((-250e-6, -100e-6))
    assert verdict.diff_low <= verdict.difference <= verdict.diff_high
    assert verdict.pct_diff == pytest.approx(-1.0) and verdict.ratio == pytest.approx(0.99)
    assert (cells["Protobuf (est.)"], cells["Change (est.)"]) == ("9.9 ms", "-1.0%")
    assert cells["CI (Holm step)"] == "-250 µs to -100 µs"
    said = answer.render_answer(found)
    assert said.startswith("seed: Protobuf - RTT 1.0 % lower\n")
    assert f"{row.label} 1.0 % lower, -100 µs (CI -250 µs to -100 µs)." in said


def _link_sets(metric: str, levels: list[tuple[float, float]]) -> list[SampleSet]:
    """One link metric at 20 Hz, a (json, protobuf) pair of values per phase."""
    return [
        SampleSet("link", "seed", codec, metric, "s", PERIOD_20HZ, [value], phase)
        for phase, pair in enumerate(levels)
        for codec, value in zip(("json", "protobuf"), pair, strict=True)
    ]


def _decided(metric: str, levels: list[tuple[float, float]]):
    """The comparison of one link row, its verdict and its table cells by header."""
    found = comparison.compare(_link_sets(metric, levels), "json", "protobuf")
    (row,) = [r for r in found.rows if r.verdict]
    headers, (cells,) = table.comparison_cells(found)
    return found, row, dict(zip(headers, cells, strict=True))


def test_a_difference_larger_than_the_baselines_level_gives_a_ratio_not_a_negative_one():
    """Jitter at 20 Hz (margin 50 µs: decided on differences). 5 quiet phase pairs at 20 µs
    and 3 loaded at 20 ms; Protobuf's at a tenth of JSON's in each. The differences: -18 µs
    (x5) and -18 ms (x3); of their 36 Walsh averages 6 are -18 ms, 15 are -9.009 ms and 15
    are -18 µs, so the estimate (the 18th and 19th) is -9.009 ms, while the baseline's median
    (of 8) is 20 µs: 1 + d / b = -449, no ratio. Every pair's ratio is 0.1: its estimate,
    10x lower (from 2x on a factor), Protobuf's cell 20 µs x 0.1 = 2 µs."""
    _found, row, cells = _decided("jitter_stdev", [(b, b / 10) for b in [20e-6] * 5 + [20e-3] * 3])
    assert row.verdict.scale == margins.DIFFERENCE
    assert row.verdict.difference == pytest.approx(-9.009e-3)
    assert row.verdict.ratio == pytest.approx(0.1)
    assert (cells["Protobuf (est.)"], cells["Change (est.)"]) == ("2 µs", "10.0x lower")


def _link_rtt(stage: int, duets: int, offset: int, slower: float) -> list[SampleSet]:
    """`duets` phase pairs of one stage: JSON's replies at 400 µs, Protobuf's `slower` later."""
    sets = []
    for phase in range(offset, offset + duets):
        params = {**PERIOD_20HZ, "stage": stage}
        wobble = 1e-6 * (phase % 7)
        for codec, level in (("json", 400e-6), ("protobuf", 400e-6 + slower + wobble)):
            sets.append(SampleSet("link", "seed", codec, "rtt", "s", params, [level] * 3, phase))
    return sets


def test_a_sequential_run_decides_at_the_look_that_can_spends_its_alpha_and_keeps_it():
    # alpha(t) = 0.025 + 0.025 ln(1 + (e - 1) t): 0.025 + 0.025 x 0.62013 at t = 1/2
    first = sequential.next_alpha([], 300, 600, final=False)
    assert first == pytest.approx(0.025 + 0.025 * math.log(1 + (math.e - 1) / 2))
    last = sequential.next_alpha([first], 500, 600, final=True)
    assert first + last == pytest.approx(0.05)
    # 5 pairs: the best exact p, 2 / 32, cannot reach the first look's alpha (n too small);
    # 10 more pairs, 200 µs slower each: decided at look 2, the baseline (JSON) wins
    stage_one = _link_rtt(1, 5, 0, 200e-6)
    stage_two = _link_rtt(2, 10, 0, 200e-6)  # the same phase numbers: new replicates
    looked = comparison.compare_looks(stage_one, "json", "protobuf", [first])
    (row,) = [r for r in looked.rows if r.verdict]
    assert row.outcome == v.TOO_SMALL and row.n == 5
    assert sequential.open_rows(looked) == [row]
    both = comparison.compare_looks(stage_one + stage_two, "json", "protobuf", [first, last])
    (row,) = [r for r in both.rows if r.verdict]
    assert row.outcome == v.BASELINE and row.n == 15 and row.verdict.look == 2
    assert both.looks == 2 and both.alpha == pytest.approx(0.05)
    assert sequential.open_rows(both) == []
    # a later look the other way must not undo a decided row
    decided = _link_rtt(1, 10, 0, 200e-6)
    later = _link_rtt(2, 40, 0, -200e-6)
    both = comparison.compare_looks(decided + later, "json", "protobuf", [0.04, 0.01])
    (row,) = [r for r in both.rows if r.verdict]
    assert row.outcome == v.BASELINE and row.verdict.look == 1 and row.n == 10


def test_the_one_line_verdict_says_what_comparison_csv_says_opens_report_and_compare(tmp_path):
    found = comparison.compare_run(results.load_run(RUN), "json", "protobuf")  # codec-link-v1
    (line,) = verdict_line.lines(found)
    assert len(line) <= verdict_line.WIDTH and line.startswith("seed: Protobuf - ")
    rows = list(csv.DictReader(io.StringIO(exports.comparison_csv(found))))
    by_metric = {(r["metric"], r["phase"]): r for r in rows}
    size = float(by_metric[("size", "")]["estimate"])
    encode = float(by_metric[("encode", "")]["estimate"])
    said = dict(re.findall(r"([\d.]+)x (smaller|faster to encode)", line)[i][::-1] for i in (0, 1))
    # the factors the line prints are the estimates' inverses, rounded as printed
    assert float(said["smaller"]) == pytest.approx(1 / size, abs=0.05)
    assert float(said["faster to encode"]) == pytest.approx(1 / encode, rel=0.01, abs=0.5)
    assert by_metric[("encode", "")]["change"] == f"{1 / encode:.0f}x faster"
    # every link row has too few phase pairs: counted in the table's words, not "undecided"
    small = sum(r["verdict"] == "n too small" for r in rows)
    assert small and not any(r["verdict"] == "undecided" for r in rows)
    assert line.endswith(f"; {small} n too small")
    # A line naming a leader says how many rows are still open before anything else.
    count = re.search(r"; (\d+) n too small$", line)
    assert count and int(count[1]) >= 1, line
    fit = "; fits can-500k, JSON does not"
    fits = {"seed": {"protobuf": ["can-500k"], "json": []}}
    (roomy,) = verdict_line.lines(found, fits, width=len(line) + len(fit))
    assert roomy == line + fit
    # room for size, encode and the fit, or for size, encode and the count: the count
    decode = re.search(r", [\d.]+x faster to decode", line)
    assert decode, line
    kept = line.replace(decode[0], "")
    (tight,) = verdict_line.lines(found, fits, width=len(kept) - len(count[0]) + len(fit))
    assert tight == kept
    # narrower still: the other words go too, and the count stays
    narrow = f"seed: Protobuf - 3.6x smaller; {count[1]} n too small"
    assert verdict_line.lines(found, fits, width=len(narrow)) == [narrow]
    # report.md's answer and `evbench compare` say the line first
    run = tmp_path / "run"
    shutil.copytree(RUN, run)  # the report is written into it
    done = evbench("report", str(run))
    assert done.returncode == 0, done.stderr
    report = (run / "report.md").read_text(encoding="utf-8").splitlines()
    heading = next(i for i, said in enumerate(report) if said.startswith("## The answer"))
    first = next(said for said in report[heading + 1 :] if said.strip())
    assert first.replace("\\", "") == line  # report.md escapes Markdown's characters
    done = evbench("compare", "--no-history", str(run), str(run))
    assert done.returncode == 0, done.stderr
    first, second, blank = done.stdout.splitlines()[:3]
    name = first.split(": seed: ")[0]  # each run's name, within the line's 100 columns
    (line,) = verdict_line.lines(found, width=verdict_line.WIDTH - len(name) - 2)
    assert first == f"{name}: {line}" and second.endswith(f": {line}") and blank == ""
    # With no winner, the line names whose fact it is and counts n too small apart.
    # core-v1: 2 worker processes, so no timed row can reach p < 0.05 (best 2 / 2^2 = 0.5):
    # 3 rows n too small, none undecided; sizes 277.1 B against 995.5 B: 3.59x smaller.
    run = comparison.compare_run(results.load_run(RUN.parent / "core-v1"), "json", "protobuf")
    assert verdict_line.lines(run) == ["seed: no winner; Protobuf 3.6x smaller; 3 n too small"]
    # a family of two link rows: RTT on 10 pairs, differences 30 + 5 i µs (Holm's first
    # step, 97.5 %: 37.5 to 67.5 µs, across the 50 µs edge: undecided) and jitter on 5
    # pairs (best p 2 / 32, times 2 rows, is not below 0.05: n too small)
    protobuf = [(400e-6, (430 + 5 * phase) * 1e-6) for phase in range(10)]
    sets = _link_sets("rtt", protobuf) + _link_sets("jitter_stdev", protobuf[:5])
    found = comparison.compare(sets, "json", "protobuf")
    assert verdict_line.lines(found) == ["seed: no winner; 1 undecided, 1 n too small"]
