"""A lab's first week: 36 series tested by night 7, and a quiet check where nothing moved.

Expectations: the step test's p from least squares by numpy and Student's t by SciPy
(not from the module), and the Benjamini-Hochberg thresholds k q / m by hand.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from history_runs import night, step_p
from report_helpers import evbench

from evbench.history import open_store, parse_url
from evbench.history.indexing import index_run
from evbench.history.store import SeriesPoint
from evbench.history.trends import Series, board_changes

CODECS = [f"codec{c:02d}" for c in range(12)]
OPERATIONS = ("encode", "decode", "decode_access")
#: codec00's nights: +-1 % about its level, 10 % slower from night 4 (index 4) on.
WIGGLE = [0.0, 1, -1, 1, -1, 0, 0]


def _value(codec: int, night: int) -> float:
    if codec == 0:
        return 1e-5 * (1 + 0.01 * WIGGLE[night]) * (1.1 if night >= 4 else 1.0)
    # The other codecs get a hair faster each night: never worse, never tied.
    return 1e-5 * (1 + 0.1 * codec) * (1 + 0.001 * (6 - night))


def test_36_series_get_a_tested_answer_on_night_7():
    series = [
        Series("lab", ("codec", "seed", codec, op), [
            SeriesPoint({"run_id": f"n{t}", "start_time": f"2026-12-0{t + 1}"},
                        {"median": _value(c, t), "unit": "s", "record_params": "{}"})
            for t in range(7)])
        for c, codec in enumerate(CODECS) for op in OPERATIONS
    ]  # fmt: skip
    found, _family = board_changes(series)
    # 72 series (36 absolute, 36 relative to the other 11 codecs), each tested on night 7
    # (index 6: the newest 3 nights against the 4 before). codec00 absolute: p from its
    # own nights; relative: codec00 over the geometric mean of the others, whose hair a
    # night is a straight line in logs to within 1e-6 (the trend takes it).
    absolute = step_p(np.log([_value(0, t) for t in range(7)]), 4)
    others = [math.exp(np.mean([math.log(_value(c, t)) for c in range(1, 12)])) for t in range(7)]
    relative = step_p(np.log([_value(0, t) / others[t] for t in range(7)]), 4)
    # Bonferroni (0.05 / 72 = 0.00069 each) would call none of them; Benjamini-Hochberg
    # calls the 6 smallest p when the 6th is below 6 x 0.05 / 72 = 0.0042 (every other
    # series moved the better way or not at all: p 1).
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
    url = parse_url(str(tmp_path / "h.sqlite"))
    with open_store(url) as store:
        for i, factor in enumerate(factors):
            store.add(index_run(night(tmp_path, i, factor)))
    env = dict(os.environ, EVBENCH_HISTORY=str(url.path))
    quiet = evbench("history", "check", "--quiet", env=env)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    # Without --quiet: the too-short series in one line (9 nights: watched, too short for
    # the segmentation), and the summary on standard error.
    loud = evbench("history", "check", env=env)
    assert loud.returncode == 0
    assert loud.stdout.splitlines() == [loud.stdout.strip()]
    assert loud.stdout.startswith("too short: 6 tested series have 9 nights")
