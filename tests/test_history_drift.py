"""Drift is not a change (issue 43): the step test's handling of a wandering lab.

Expectations: least squares by numpy, Student's t tail (history_runs.step_p) and Theil
and Sen's slope by SciPy, the walk's variance from the differences' variogram by hand;
never from `window_tests` itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from history_runs import step_p
from scipy import stats as scipy_stats

from evbench.history import window_tests

#: An absolute series of a lab whose load grows from 5 to 17 (issue 43's shape), in %
#: of its first night: nights 9-20 are the step test's reference, 21-23 its window.
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


def test_a_drifting_labs_ordinary_nights_are_not_taken_for_wild():
    logs = [v / 100 for v in DRIFTING]
    # One reference night (13, +14.6 %) lies beyond 5 robust spreads of the nights'
    # Theil-Sen line; p with it tamed is 0.026, far above a board of 18 series' 0.05 / 18.
    # A running median of 5 took 6 of these 12 nights for wild and smoothed the scatter
    # away: p 1.2e-5, a false alarm.
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


def test_an_absolute_series_is_held_to_the_walk_its_nights_show():
    # A walk: 12 reference nights, each 2 % from the last (up or down), then 3 nights on.
    moves = [1, 1, -1, 1, 1, 1, -1, -1, 1, 1, 1, 1, 1, 1]
    logs = list(np.cumsum([0.0, *[0.02 * m for m in moves]]))
    # Every night-to-night move taken for the walk's: the variance of the 11 differences
    # about their mean (ddof 1), 10 df.
    v = np.var(np.diff(logs[:12]), ddof=1)
    held = step_p(logs, 12, v, 10)
    line = step_p(logs, 12)
    assert line < 0.01 < 0.05 < held  # a line alone calls the walk's run a step
    assert window_tests.step_test(logs, 0, 12, 14, "higher")[0] == pytest.approx(line, rel=1e-9)
    absolute = window_tests.step_test(logs, 0, 12, 14, "higher", wanders=True)[0]
    assert absolute == pytest.approx(held, rel=1e-9)
    # A 30 % step is called all the same (p < 0.001), and a relative series (no walk:
    # the load cancels) keeps the line's test.
    stepped = [*logs[:12], *(v + 0.3 for v in logs[12:])]
    called = step_p(stepped, 12, v, 10)
    assert called < 0.001
    assert window_tests.step_test(stepped, 0, 12, 14, "higher", wanders=True)[0] == pytest.approx(
        called, rel=1e-9
    )
