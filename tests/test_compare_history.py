"""`evbench compare` confirms a change against the board's history of nights.

The nights are copies of the committed sample run (tests/history_runs.py) with
every timing multiplied by a known factor, so each tested row's nightly median
moves by exactly that factor and the night-to-night log differences are known by
hand: log(f[i+1] / f[i]). Expected p-values come from scipy's Student t (an
independent implementation) and Holm's rule applied by hand.
"""

from __future__ import annotations

import itertools
import math

import pytest
from history_runs import night
from report_helpers import evbench
from scipy import stats as scipy_stats

from evbench.history import open_store, parse_url
from evbench.history.indexing import index_run
from evbench.history.night_spread import NightSpread, of_values
from evbench_core.analysis.stats import student_t_sf

#: Twelve nights of identical code, a few percent apart (night 12 is the baseline).
NOISE = [1.00, 1.03, 0.99, 1.02, 0.97, 1.01, 1.03, 0.98, 1.00, 1.02, 0.99, 1.01]
#: The committed run's tested rows: json and protobuf x encode, decode, decode_access.
TESTED_ROWS = 6


def _rms(factors: list[float]) -> float:
    steps = [math.log(b / a) for a, b in itertools.pairwise(factors)]
    return math.sqrt(sum(d * d for d in steps) / len(steps))


def test_student_t_tail_matches_the_closed_form_and_scipy():
    # df = 2 has a closed form: P(T > t) = (1 - t / sqrt(t^2 + 2)) / 2.
    for t in (0.0, 0.5, 1.0, 2.5, 8.0):
        assert math.isclose(student_t_sf(t, 2), (1 - t / math.sqrt(t * t + 2)) / 2, rel_tol=1e-12)
    for df in (1, 3, 4, 7, 12, 30):
        for t in (0.1, 1.0, 2.0, 3.3, 6.0, 20.0):
            assert math.isclose(student_t_sf(t, df), scipy_stats.t.sf(t, df), rel_tol=1e-9)


def test_the_spread_of_alternating_nights_worked_by_hand():
    # 8 nights alternating 100 and 110: every step is +-log(1.1), so the rms is log(1.1);
    # 7 steps are worth floor(2 * 7 / 3) = 4 degrees of freedom.
    spread = of_values([100, 110] * 4)
    assert spread.nights == 8 and spread.df == 4
    assert math.isclose(spread.rms, math.log(1.1))
    # A 1.5x change: t = log 1.5 / log 1.1 = 4.254; two-sided p from scipy.
    expected = 2 * scipy_stats.t.sf(math.log(1.5) / math.log(1.1), 4)
    assert math.isclose(spread.p_value(1.5), expected, rel_tol=1e-9)
    assert math.isclose(spread.p_value(1 / 1.5), expected, rel_tol=1e-9)  # either way
    # Seven nights are too few to tell; so is a history that never moved.
    assert of_values([100, 110, 100, 110, 100, 110, 100]).p_value(1.5) is None
    assert NightSpread(nights=20, rms=0.0).p_value(1.5) is None


def _nights(tmp_path, factors, **later):
    """Nights 1..n with these factors in a store, and night n + 1 made with `later`."""
    runs = tmp_path / "runs"  # made by night()
    directories = [night(runs, number, factor) for number, factor in enumerate(factors, 1)]
    url = parse_url(str(tmp_path / "store.sqlite"))
    with open_store(url) as store:
        for directory in directories:
            store.add(index_run(directory))
    candidate = night(runs, len(factors) + 1, **later)
    return str(tmp_path / "store.sqlite"), directories[-1], candidate


def test_a_real_step_is_confirmed_against_the_history_and_fails(tmp_path):
    # protobuf 25 % slower in the candidate, json unchanged (same factor as the baseline).
    slower = {"factor": NOISE[-1], "codec_factors": {"protobuf": 1.25}}
    store, baseline, candidate = _nights(tmp_path, NOISE, **slower)
    done = evbench("compare", "--baseline", str(baseline), str(candidate), "--history", store)
    assert done.returncode == 3, done.stdout + done.stderr
    # The history is nights 1..11 (the baseline is one of the compared runs): 10 steps,
    # floor(20 / 3) = 6 degrees of freedom; the three protobuf rows and three json rows
    # (p 1) are tested together, so Holm multiplies the protobuf rows' p by 6.
    p = 2 * scipy_stats.t.sf(math.log(1.25) / _rms(NOISE[:11]), 6)
    said = f"confirmed against 11 nights of this board's history (p (Holm) {6 * p:.2g})"
    assert done.stderr.count(said) == 3, done.stderr
    for operation in ("encode", "decode", "decode_access"):
        assert f"codec/seed/protobuf/{operation} changed +25.0%" in done.stderr
    assert "json/encode" not in done.stderr
    # The sample run has 2 processes a run: alone, the runs could name nothing.
    assert "not called" not in done.stdout
    assert done.stdout.count("| REGRESSION ") == 3


def test_a_move_within_the_nightly_spread_is_not_confirmed(tmp_path):
    # Every codec 3 % slower than the baseline night: the history says nights move that
    # much (the sample run's 2 processes a run could name nothing alone).
    store, baseline, candidate = _nights(tmp_path, NOISE, factor=1.04)
    alone = evbench("compare", "--baseline", str(baseline), str(candidate), "--no-history")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert "history: not used (--no-history)" in alone.stdout
    assert "nights)" not in alone.stdout
    done = evbench("compare", "--baseline", str(baseline), str(candidate), "--history", store)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("(not confirmed: 11 nights)") == TESTED_ROWS
    p = 2 * scipy_stats.t.sf(math.log(1.04 / NOISE[-1]) / _rms(NOISE[:11]), 6)
    assert p > 0.05  # the hand-worked reason it is not confirmed, even before Holm


def test_a_short_history_confirms_nothing_and_another_boards_is_not_used(tmp_path):
    slower = {"factor": NOISE[3], "codec_factors": {"protobuf": 1.25}}
    store, baseline, candidate = _nights(tmp_path, NOISE[:4], **slower)
    done = evbench("compare", "--baseline", str(baseline), str(candidate), "--history", store)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("(not confirmed: 3 nights)") == 3
    other = night(tmp_path / "runs", 20, board="name:bench-2")
    done = evbench("compare", "--baseline", str(baseline), str(other), "--history", store)
    assert "history: not used: the runs are of different boards" in done.stdout


@pytest.mark.parametrize(("p", "p_holm"), [(0.004, 0.012), (0.02, 0.06), (0.01, 0.01)])
def test_the_night_tests_interval_holds_1_exactly_when_its_p_does(p, p_holm):
    from unittest import mock

    from evbench.report.compare import Change, _night_interval, _p_cell

    ratio = 1.08
    # 13 nights: 12 differences, floor(2 x 12 / 3) = 8 degrees of freedom. The spread s
    # makes |log r| / s the test's t; the interval is at the row's Holm step, level
    # 1 - 0.05 / k with k = p (Holm) / p.
    s = math.log(ratio) / scipy_stats.t.ppf(1 - p / 2, 8)
    reach = scipy_stats.t.ppf(1 - 0.05 / (2 * (p_holm / p)), 8) * s
    with mock.patch.object(Change, "difference", property(lambda _self: ratio - 1)):
        change = Change(None, p_nights=p_holm)  # type: ignore[arg-type]
        low, high = _night_interval(change, 13, p, p_holm)  # type: ignore[misc]
        assert low == pytest.approx(ratio * math.exp(-reach), rel=1e-6)
        assert high == pytest.approx(ratio * math.exp(reach), rel=1e-6)
        assert (low > 1) == (p_holm < 0.05)
        assert _p_cell(change).endswith(" (nights)")
