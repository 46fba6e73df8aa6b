"""Change detection across nights: hand-worked series, and 200 synthetic series per case.

The synthetic nights model what a nightly benchmark sees: each night is the
median of 10 raw samples with 3 % noise (log-normal, sigma 0.03); a raw
sample is now and then an outlier (3 %: 1.2 to 2 times slower) and a night
is now and then disturbed as a whole (4 %: 1.5 to 2.5 times slower, a job
running beside it). A step multiplies every night from its place on. The
place is drawn uniformly from night 3 to night 27 of 30 (the method needs 3
nights on each side). Expectations come from how the series were built.
"""

from __future__ import annotations

import math
import random
import statistics

import pytest

from evbench.history import run_differences, segmentation

NIGHTS = 30
SERIES = 200


def _night(rng: random.Random, level: float) -> float:
    if rng.random() < 0.04:
        level *= rng.uniform(1.5, 2.5)
    raw = [level * math.exp(rng.gauss(0, 0.03)) for _ in range(10)]
    raw = [v * rng.uniform(1.2, 2.0) if rng.random() < 0.03 else v for v in raw]
    return statistics.median(raw)


def _series(rng: random.Random, step: float, place: int) -> list[float]:
    return [_night(rng, 1.0 + (step if night >= place else 0.0)) for night in range(NIGHTS)]


def _found_within_one_night(step: float, seed: int) -> tuple[int, int]:
    """(series whose step was found within one night of its place, series with any change)."""
    rng = random.Random(seed)
    found = raised = 0
    for _ in range(SERIES):
        place = rng.randint(segmentation.MIN_SEGMENT, NIGHTS - segmentation.MIN_SEGMENT)
        splits = segmentation.detect(_series(rng, step, place))
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


def test_a_clean_step_is_placed_exactly_with_its_size():
    # Ten nights at 100 us, ten at 120 us.
    values = [(100e-6 if i < 10 else 120e-6) * WIGGLE[i % 5] for i in range(20)]
    (split,) = segmentation.detect(values)
    assert split.index == 10
    assert split.ratio == pytest.approx(1.2, rel=0.01)  # medians 100 and 120
    assert split.ratio_low > 1.02 and split.ratio_high < 1.3
    assert split.p < 0.05


def test_two_steps_are_both_found():
    levels = [1.0] * 10 + [1.3] * 10 + [0.9] * 10
    values = [level * WIGGLE[i % 5] for i, level in enumerate(levels)]
    assert [s.index for s in segmentation.detect(values)] == [10, 20]


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


def test_eight_nights_can_show_a_change():
    # Eight allow 3 | 5, 4 | 4 and 5 | 3 (six nights cannot: test_no_change_is_raised).
    eight = [1.0, 1.01, 1.02, 1.0, 2.0, 2.01, 2.02, 2.0]  # ties, as medians of equal runs have
    (split,) = segmentation.detect(eight)
    assert split.index == 4 and 2 / 70 <= split.p < 0.05


def test_the_same_series_gives_the_same_answer():
    rng = random.Random(3)
    values = _series(rng, 0.1, 12)
    assert segmentation.detect(values) == segmentation.detect(list(values))


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="positive, finite"):
        segmentation.detect([1.0, 0.0, 1.0, 1.0, 1.0, 1.0])


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
