"""Change detection across nights: the segmentation on hand-worked and on 200 synthetic
series per case; the step test with a drifting lab (drift is not a change; a codec's relative
series are tested together); a lab's first week; a quiet check. A synthetic night is the
median of 10 raw samples (3 % log-normal noise; 3 % of samples 1.2-2x slower; 4 % of nights
1.5-2.5x slower); a step multiplies every night from one of nights 3 to 27 of 30. Expectations
are worked by hand (exact rank test: the newest 3 nights beyond r others is 1 of C(r + 3, 3)
orders; Benjamini-Hochberg's k q / m) or come from numpy and SciPy (history_runs.step_p,
Theil-Sen, exact Mann-Whitney), never from the module.
"""

import math
import os
import random
import statistics

import numpy as np
import pytest
from history_runs import night, step_p, stored
from report_helpers import evbench
from scipy import stats as scipy_stats

from evbench.history import open_store, run_differences, segmentation, window_tests
from evbench.history.store import SeriesPoint
from evbench.history.trends import (
    Series,
    board_changes,
    joint_values,
    relative_series,
    survey,
)

NIGHTS = 30
SERIES = 200
OPERATIONS = ("encode", "decode", "decode_access")


def _night(rng: random.Random, level: float) -> float:
    if rng.random() < 0.04:
        level *= rng.uniform(1.5, 2.5)
    raw = [level * math.exp(rng.gauss(0, 0.03)) for _ in range(10)]
    raw = [v * rng.uniform(1.2, 2.0) if rng.random() < 0.03 else v for v in raw]
    return statistics.median(raw)


def _synthetic(rng: random.Random, step: float, place: int) -> list[float]:
    return [_night(rng, 1.0 + (step if t >= place else 0.0)) for t in range(NIGHTS)]


def _found_within_one_night(step: float, seed: int) -> tuple[int, int]:
    """(series whose step was found within one night of its place, series with any change)."""
    rng = random.Random(seed)
    found = raised = 0
    for _ in range(SERIES):
        place = rng.randint(segmentation.MIN_SEGMENT, NIGHTS - segmentation.MIN_SEGMENT)
        splits = segmentation.detect(_synthetic(rng, step, place))
        raised += bool(splits)
        found += any(abs(s.index - place) <= 1 for s in splits)
    return found, raised


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "seed", "found_at_least", "raised_at_most"),
    [(0.20, 200, 0.95, 1.0), (0.05, 50, 0.80, 1.0), (0.0, 7, 0.0, 0.05)],  # flat: rarely raised
    ids=["20%", "5%", "flat"],
)
def test_steps_are_found_within_one_night_and_flat_series_rarely_raise_one(
    step, seed, found_at_least, raised_at_most, capsys
):
    found, raised = _found_within_one_night(step, seed)
    with capsys.disabled():
        print(f"\n{step:.0%} step: found within one night in {found}/{SERIES} series "
              f"(a change raised in {raised})")  # fmt: skip
    assert found >= found_at_least * SERIES and raised <= raised_at_most * SERIES


#: Nights 1 % (FINE: 0.1 %) apart in a fixed zigzag; its middle, 1.00, is the median.
WIGGLE = [1.00, 1.01, 0.99, 1.005, 0.995]
FINE_WIGGLE = [1.00, 1.001, 0.999, 1.0005, 0.9995]


def test_a_clean_step_is_placed_with_its_size_two_are_found_and_eight_nights_can_show_one():
    # Ten nights at 100 us, ten at 120 us.
    values = [(100e-6 if i < 10 else 120e-6) * WIGGLE[i % 5] for i in range(20)]
    (split,) = segmentation.detect(values)
    assert split.index == 10
    assert split.ratio == pytest.approx(1.2, rel=0.01)  # medians 100 and 120
    assert split.ratio_low > 1.02 and split.ratio_high < 1.3
    assert split.p < 0.05
    # two steps are both found
    levels = [1.0] * 10 + [1.3] * 10 + [0.9] * 10
    values = [level * WIGGLE[i % 5] for i, level in enumerate(levels)]
    assert [s.index for s in segmentation.detect(values)] == [10, 20]
    # Eight nights can show a change, the same each time; bad values are refused.
    # Eight allow 3 | 5, 4 | 4 and 5 | 3 (six nights cannot: test_no_change_is_raised).
    eight = [1.0, 1.01, 1.02, 1.0, 2.0, 2.01, 2.02, 2.0]  # ties, as medians of equal runs have
    (split,) = segmentation.detect(eight)
    assert split.index == 4 and 2 / 70 <= split.p < 0.05
    # the same series gives the same answer and bad values are refused
    values = _synthetic(random.Random(3), 0.1, 12)
    assert segmentation.detect(values) == segmentation.detect(list(values))
    with pytest.raises(ValueError, match="positive, finite"):
        segmentation.detect([1.0, 0.0, 1.0, 1.0, 1.0, 1.0])


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(
            [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 3.0, 1.0, 1.01, 0.99, 1.0, 1.01, 0.99, 1.0],
            id="one wild night",
        ),
        # 1 % up after night 15, 0.1 % zigzag: significant to a rank test, but inside the
        # 2 % minimum effect.
        pytest.param(
            [(1.0 if i < 15 else 1.01) * FINE_WIGGLE[i % 5] for i in range(30)],
            id="below the minimum effect",
        ),
        # Six nights allow one split (3 | 3): a perfect separation is 2 of the C(6,3) = 20
        # orderings, p = 0.1, never below 0.05.
        pytest.param([1.0, 1.01, 1.02, 2.0, 2.01, 2.02], id="six nights"),
        pytest.param([2.0] * 12, id="constant"),
    ],
)
def test_no_change_is_raised(values):
    assert segmentation.detect(values) == []


def test_version_and_plan_changes_name_what_moved():
    codecs = '{{"json": "std", "orjson": "{}", "protobuf": "{}"}}'
    before = {"kernel": "6.1", "protobuf": "5.29.0", "python": "3.11.7",
              "codec_versions": codecs.format("3.10", "5.29.0")}  # fmt: skip
    after = dict(before, protobuf="6.31.1", codec_versions=codecs.format("3.11", "6.31.1"))
    assert run_differences.version_changes(before, after) == {
        "protobuf": ("5.29.0", "6.31.1"),
        "codec orjson": ("3.10", "3.11"),
    }
    quick = {"manifest": '{"spec": {"quick": true, "payloads": 200, "seed": 1}}'}
    full = {"manifest": '{"spec": {"quick": false, "payloads": 200, "seed": 1}}'}
    assert run_differences.version_changes(quick, full) == {
        "plan": ("quick=True payloads=200 seed=1", "payloads=200 seed=1")
    }
    assert run_differences.version_changes(quick, dict(quick)) == {}


#: Ten reference nights (logs) sinking 1 % a night, +-0.2 % about the line by turns: a
#: relative series whose codecs feel the lab's growing load unequally.
SINKING = [-0.01 * t + 0.002 * (-1) ** t for t in range(10)]
#: The next 3 nights 5 % above where the line goes (-0.10, -0.11, -0.12): a step.
STEPPED = [-0.01 * t + 0.05 for t in range(10, 13)]


def _residuals(reference, window):
    """Residuals about SciPy's Theil-Sen line through the reference (its intercept is
    another estimator's than the module's, which moves both sides alike: ranks keep)."""
    slope, intercept, _low, _high = scipy_stats.theilslopes(reference, range(len(reference)))
    line = [intercept + slope * t for t in range(len(reference) + len(window))]
    return (
        [y - line[t] for t, y in enumerate(reference)],
        [y - line[len(reference) + t] for t, y in enumerate(window)],
    )


def test_a_step_off_a_drift_ranks_beyond_the_reference_not_a_drift_or_a_partners_wild_night():
    # Raw, the step's nights (-0.05 to -0.07) lie below the first 5 reference nights (0 to
    # -0.04): no worse, as ranks go.
    raw = scipy_stats.mannwhitneyu(STEPPED, SINKING, alternative="greater", method="exact")
    assert raw.pvalue > 0.05
    # About the line (slope -0.01) each stepped night lies 0.05 above it, each reference
    # night 0.002 off: all 3 beyond all 10, one of C(13, 3) = 286 orders.
    reference, window = _residuals(SINKING, STEPPED)
    assert min(window) > max(reference)
    exact = scipy_stats.mannwhitneyu(window, reference, alternative="greater", method="exact")
    assert exact.pvalue == pytest.approx(1 / 286)
    assert window_tests.detrended_rank_p(SINKING, STEPPED, "higher") == pytest.approx(1 / 286)
    # Slower is worse: the same nights asked "faster?" are no change.
    assert window_tests.detrended_rank_p(SINKING, STEPPED, "lower") == 1.0
    # A drift alone (the line carried on, +-0.2 %): the window's residuals rank among the
    # reference's; SciPy's exact test on them is the expectation.
    window = [-0.01 * t + 0.002 * (-1) ** t for t in range(10, 13)]
    reference, residuals = _residuals(SINKING, window)
    expected = scipy_stats.mannwhitneyu(residuals, reference, alternative="greater",
                                        method="exact").pvalue  # fmt: skip
    assert expected > 0.2
    assert window_tests.detrended_rank_p(SINKING, window, "higher") >= expected - 1e-12
    # A partner codec's disturbed night (1.6x) puts this codec 0.3 lower in logs: 100 robust
    # spreads (1.4826 x 0.002 = 0.003) below the window's median. Put at that median, the
    # window again lies beyond all 10 nights: 1 / 286, as without it.
    wild = [STEPPED[0], STEPPED[1] - 0.3, STEPPED[2]]
    reference, window = _residuals(SINKING, wild)
    raw = scipy_stats.mannwhitneyu(window, reference, alternative="greater", method="exact")
    assert raw.pvalue > 1 / 286 * 5  # left as it is, the night costs the call
    assert window_tests.detrended_rank_p(SINKING, wild, "higher") == pytest.approx(1 / 286)
    # Two wild nights of three are not tamed: the window is what it is.
    two = [STEPPED[0], STEPPED[1] - 0.3, STEPPED[2] - 0.3]
    assert window_tests.detrended_rank_p(SINKING, two, "higher") == 1.0  # median below the line
    # Reference 0 and +-0.001 by turns (Theil-Sen's slope 0); the window 0.002, 0.003 and
    # one night on a reference value, 0.001.
    reference = [0.0, 0.001, -0.001, 0.0, 0.001, -0.001, 0.0, 0.001, -0.001, 0.0]
    window = [0.002, 0.003, 0.001]
    # The 2 high nights beat all 10 (20 pairs); 0.001 beats the 4 zeros and 3 negatives (7)
    # and ties the 3 at 0.001 (1.5): U = 28.5, held as U >= 28, a rank sum of the 3 of at
    # least 28 + 6 = 34 (U + 3 x 4 / 2). Of the 286 orders: {11,12,13} 36, {10,12,13} 35,
    # {10,11,13} 34, {9,12,13} 34: 4.
    assert window_tests.detrended_rank_p(reference, window, "higher") == pytest.approx(4 / 286)


def _series(codec: str, operation: str, values: list[float]) -> Series:
    return Series("lab", ("codec", "seed", codec, operation), [
        SeriesPoint({"run_id": f"n{t}", "start_time": f"{t:04d}"},
                    {"median": v, "unit": "s", "record_params": "{}"})
        for t, v in enumerate(values)])  # fmt: skip


def test_a_codecs_joint_series_is_the_mean_of_its_relatives_which_outlive_a_dropped_codec(tmp_path):
    # A takes 2, 4 and 8 us on its three operations, B 1 us on each: A / B is 2, 4 and 8,
    # their geometric mean (2 x 4 x 8)^(1/3) = 4 each night; on night 1 A's decode takes
    # 4 x 1.331 = 5.324: (2 x 5.324 x 8)^(1/3) = 4 x 1.331^(1/3) = 4.4.
    a = {"encode": [2e-6, 2e-6], "decode": [4e-6, 5.324e-6], "decode_access": [8e-6, 8e-6]}
    watched = [_series("A", op, a[op]) for op in OPERATIONS]
    watched += [_series("B", op, [1e-6] * 2) for op in OPERATIONS]
    relatives = relative_series(watched)
    of_a = [r for r in relatives if r.key[2] == "A"]
    assert len(of_a) == 3
    for series in of_a:
        assert joint_values(series, relatives) == pytest.approx([4.0, 4.4])
    # A codec with one relative series has nothing to join.
    lone = relative_series([_series("A", "encode", [2e-6] * 2), _series("B", "encode", [1e-6] * 2)])
    assert joint_values(lone[0], lone) is None
    assert math.isclose(4.0 * 1.331 ** (1 / 3), 4.4)
    # 35 nights under a load of 15 % night to night (each codec's operations 1.5 % more,
    # their own); cbor, measured as protobuf is, runs nights 0-19 only; json is 10 % slower
    # from night 27 on. Against the codecs present in every night, json relative to
    # protobuf goes on over all 35 nights, and its step is placed at night 27.
    rng = np.random.default_rng(5)
    load = np.exp(rng.normal(0, 0.15, 35))
    runs = []
    for t in range(35):
        own = {(c, op): math.exp(rng.normal(0, 0.015))
               for c in ("json", "protobuf", "cbor") for op in OPERATIONS}  # fmt: skip
        runs.append(night(tmp_path, t, float(load[t]), operation_factors=own,
                          codec_factors={"json": 1.10 if t >= 27 else 1.0},
                          copied_codecs={"cbor": "protobuf"} if t < 20 else None))  # fmt: skip
    with open_store(stored(tmp_path / "h.sqlite", runs)) as store:
        changes = survey(store).changes
    found = {(c.series[2], c.series[3], c.run_id) for c in changes
             if c.worse and "relative to protobuf in" in c.qualifier}  # fmt: skip
    assert {("json", op, "20260027T020000Z-00001b") for op in OPERATIONS} <= found, [
        c.describe() for c in changes
    ]


#: An absolute series of a lab whose load grows from 5 to 17, in % of its first night:
#: nights 9-20 are the step test's reference, 21-23 its window.
DRIFTING = [0.0, -0.4, -3.7, -4.1, -3.6, -2.1, -1.9, 5.6, 6.1, 5.4, 8.9, 9.3, 9.5, 14.6,
            10.2, 8.6, 11.7, 12.2, 16.1, 12.9, 14.5, 18.2, 19.3, 18.4]  # fmt: skip


def _tamed(reference):
    """The reference with each night over 5 robust spreads (1.4826 MAD) off its Theil-Sen
    line (SciPy's slope; the level the median residual) put back on the line."""
    reference = np.asarray(reference, dtype=float)
    slope = scipy_stats.theilslopes(reference).slope
    residual = reference - slope * np.arange(len(reference))
    centre = np.median(residual)
    wild = np.abs(residual - centre) > 5 * 1.4826 * np.median(np.abs(residual - centre))
    return np.where(wild, slope * np.arange(len(reference)) + centre, reference), wild.sum()


def test_a_drifting_labs_nights_are_not_wild_and_an_absolute_series_is_held_to_its_walk():
    logs = [v / 100 for v in DRIFTING]
    # One reference night (13, +14.6 %) lies beyond 5 robust spreads of the Theil-Sen line;
    # p with it tamed is 0.026, far above a board of 18 series' 0.05 / 18.
    tamed, count = _tamed(logs[9:21])
    assert count == 1
    expected = step_p([*tamed, *logs[21:]], 12)
    assert 0.02 < expected < 0.03
    assert window_tests.step_test(logs, 0, 21, 23, "higher")[0] == pytest.approx(expected, rel=1e-9)
    # A wild night (night 15 at +40 %) is put back on that line too.
    wild = list(logs)
    wild[15] = 0.40
    tamed, count = _tamed(wild[9:21])
    assert count == 2
    expected = step_p([*tamed, *wild[21:]], 12)
    assert window_tests.step_test(wild, 0, 21, 23, "higher")[0] == pytest.approx(expected, rel=1e-9)
    # A walk: 12 reference nights, each 2 % up or down from the last, then 3 nights on.
    moves = [1, 1, -1, 1, 1, 1, -1, -1, 1, 1, 1, 1, 1, 1]
    logs = list(np.cumsum([0.0, *[0.02 * m for m in moves]]))
    # The walk's variance: the 11 night-to-night differences' about their mean (ddof 1), 10 df.
    v = np.var(np.diff(logs[:12]), ddof=1)
    held = step_p(logs, 12, v, 10)
    line = step_p(logs, 12)
    assert line < 0.01 < 0.05 < held  # a line alone calls the walk's run a step
    # A relative series (no walk: the load cancels) keeps the line's test.
    assert window_tests.step_test(logs, 0, 12, 14, "higher")[0] == pytest.approx(line, rel=1e-9)
    absolute = window_tests.step_test(logs, 0, 12, 14, "higher", wanders=True)[0]
    assert absolute == pytest.approx(held, rel=1e-9)
    # A 30 % step is called all the same (p < 0.001).
    stepped = [*logs[:12], *(v + 0.3 for v in logs[12:])]
    called = step_p(stepped, 12, v, 10)
    assert called < 0.001
    walked = window_tests.step_test(stepped, 0, 12, 14, "higher", wanders=True)[0]
    assert walked == pytest.approx(called, rel=1e-9)


CODECS = [f"codec{c:02d}" for c in range(12)]
#: codec00's nights: +-1 % about its level, 10 % slower from night 4 (index 4) on.
CODEC00_WIGGLE = [0.0, 1, -1, 1, -1, 0, 0]


def _value(codec: int, t: int) -> float:
    if codec == 0:
        return 1e-5 * (1 + 0.01 * CODEC00_WIGGLE[t]) * (1.1 if t >= 4 else 1.0)
    # The other codecs get a hair faster each night: never worse, never tied.
    return 1e-5 * (1 + 0.1 * codec) * (1 + 0.001 * (6 - t))


def test_36_series_get_a_tested_answer_on_night_7():
    series = [
        _series(codec, op, [_value(c, t) for t in range(7)])
        for c, codec in enumerate(CODECS)
        for op in OPERATIONS
    ]
    found, _family = board_changes(series)
    # 72 series (36 absolute, 36 relative to the other 11 codecs), each tested on night 7
    # (the newest 3 against the 4 before). codec00 relative: over the geometric mean of
    # the others, whose hair a night is a line in logs to within 1e-6 (the trend takes it).
    absolute = step_p(np.log([_value(0, t) for t in range(7)]), 4)
    others = [math.exp(np.mean([math.log(_value(c, t)) for c in range(1, 12)])) for t in range(7)]
    relative = step_p(np.log([_value(0, t) / others[t] for t in range(7)]), 4)
    # Bonferroni (0.05 / 72 = 0.00069) calls none; Benjamini-Hochberg calls the 6 smallest p
    # when the 6th is below 6 x 0.05 / 72 = 0.0042 (every other series has p 1).
    for p in (absolute, relative):
        assert 0.05 / 72 < p < 6 * 0.05 / 72
    assert sorted(s.name for s, _seen in found) == sorted(
        [f"codec/seed/codec00/{op}" for op in OPERATIONS]
        + [f"codec/seed/codec00/{op} {{relative to {', '.join(CODECS[1:])} in the same runs}}"
           for op in OPERATIONS]
    )  # fmt: skip
    for s, seen in found:
        assert (seen.seen, seen.split.index) == (6, 4)
        assert seen.split.p == pytest.approx(relative if s.relative_to else absolute, rel=1e-6)
    # Six nights: nothing is tested yet (the step test needs 4 nights before the newest 3).
    short = [Series(s.board, s.key, s.points[:6]) for s in series]
    assert board_changes(short)[0] == []


def test_check_quiet_prints_nothing_when_nothing_moved(tmp_path):
    # Nine nights of identical code, each a hair (0.1 %) apart, never rising at the end.
    factors = [1.0 + 0.001 * k for k in (3, 7, 4, 1, 8, 5, 2, 6, 0)]
    url = stored(tmp_path / "h.sqlite", [night(tmp_path, i, f) for i, f in enumerate(factors)])
    env = dict(os.environ, EVBENCH_HISTORY=str(url.path))
    quiet = evbench("history", "check", "--quiet", env=env)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    # Without --quiet: the too-short series in one line, the summary on standard error.
    loud = evbench("history", "check", env=env)
    assert loud.returncode == 0
    assert loud.stdout.splitlines() == [loud.stdout.strip()]
    assert loud.stdout.startswith("too short: 6 tested series have 9 nights")
    assert loud.stderr.strip().endswith(
        "; 6 tested series: 6 watched (6 too short yet to place an older change), "
        "0 too short to watch (context metrics are never tested)"
    ), loud.stderr
