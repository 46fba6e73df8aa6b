"""The nightly watch on hand-worked series and on stores of copied nights.

Expectations come from the exact rank test: the newest 3 nights all beyond r reference nights
is one of C(r + 3, 3) equally likely orders under no change (two-sided p 2 / C(r + 3, 3)). The
nights (tests/history_runs.py) have every timing times a known factor, each a hair (0.1 %)
apart so no two tie.
"""

import math
import os

import numpy as np
from history_runs import night, step_p, stored
from report_helpers import evbench

from evbench.history import nightly_watch, open_store, series_changes
from evbench.history.indexing import index_run
from evbench.history.trends import regressions, survey
from evbench.report.criteria import Criteria

#: The committed run's 6 tested series (json and protobuf x 3 operations) and as many
#: relative ones (each codec against both codecs of the night): a family of 12.
TESTED_SERIES, FAMILY = 6, 12
#: Ten flat nights 0.1 % apart, never rising at the end (night 9 lowest).
FLAT = [1.0 + 0.001 * k for k in (3, 7, 4, 1, 8, 5, 2, 9, 6, 0)]
#: Fourteen such nights, then three more (all the steps' nights rise 0.1 % each).
FLAT_14 = [1.0 + 0.001 * k for k in (3, 7, 4, 1, 8, 5, 10, 2, 9, 12, 6, 11, 13, 0)]
FLAT_14 += [1.0, 1.001, 1.002]
OPERATIONS = ("encode", "decode", "decode_access")


def test_the_watch_needs_the_nights_the_exact_test_allows_sees_a_step_and_restarts_after():
    # 2 / C(r + 3, 3) < 0.05 needs C > 40: C(7, 3) = 35 is not, C(8, 3) = 56 is: r = 5.
    assert nightly_watch.reference_needed(0.05) == 5
    # alpha 0.05 / 6: C > 240: C(12, 3) = 220 is not, C(13, 3) = 286 is: r = 10.
    assert nightly_watch.reference_needed(0.05 / 6) == 10
    # alpha 0.05 / 12: C > 480: C(15, 3) = 455 is not, C(16, 3) = 560 is: r = 13.
    assert nightly_watch.reference_needed(0.05 / FAMILY) == 13
    # One-sided (the check's watch: worse only), 1 / C(r + 3, 3) < 0.05 / 12: C > 240: r = 10.
    assert nightly_watch.reference_needed(0.05 / FAMILY, one_sided=True) == 10
    series = [*FLAT, 2.0, 2.001, 2.002]
    # Nights 10 and 11 share their windows with a flat night below most others: no call.
    assert nightly_watch.watch(series[:12], 0.05) == []
    (seen,) = nightly_watch.watch(series, 0.05)
    assert (seen.split.index, seen.seen) == (10, 12)
    assert math.isclose(seen.split.p, 2 / math.comb(13, 3))
    assert math.isclose(seen.split.ratio, 2.001 / 1.0045)  # medians after / before
    # One-sided, as the check asks (slower is worse): half the two-sided p; faster: none.
    (slower,) = nightly_watch.watch(series, 0.05, worse="higher")
    assert math.isclose(slower.split.p, 1 / math.comb(13, 3))
    assert nightly_watch.watch(series, 0.05, worse="lower") == []
    # It restarts after a change, and a lone wild night is none.
    series = [*FLAT, *(2 * v for v in FLAT[:8])]
    (seen,) = nightly_watch.watch(series, 0.05)  # the new level is the reference from night 10
    assert seen.split.index == 10
    wild = [*FLAT, *FLAT[:2]]
    wild[8] = 3.0  # in 3 of the windows, never with two other nights beyond the rest
    assert nightly_watch.watch(wild, 0.05) == []


#: Eleven nights +-5 % around 1.00 (robust spread 1.4826 x median |log v| = 1.4826 x
#: log(1.03) = 0.044: a 12 % step, log 1.12 = 0.113, is within 3 spreads, not gross).
SCATTERED = [1.00, 1.05, 0.96, 1.04, 0.97, 1.03, 0.95, 1.02, 0.98, 1.01, 0.99]


def test_a_step_is_placed_where_a_shift_is_likeliest_and_by_the_codecs_other_series():
    series = [*SCATTERED, 1.045, 1.12, 1.125]
    (seen,) = nightly_watch.watch(series, 0.05, worse="higher")
    # Night 12's window (0.99, 1.045, 1.12) against nights 0-9: U 23 of 30, reached by 31 of
    # C(13, 3) = 286 orders: p 0.108, no alarm. Night 13's (1.045, 1.12, 1.125) against 0-10:
    # only 1.05 beats one (U 32 of 33): 2 of C(14, 3) = 364 orders, one-sided p = 2/364. The
    # call's p is the larger of that and the step test's against a line through all 14 nights.
    assert seen.seen == 13
    line = step_p(np.log(series), 11)
    assert math.isclose(seen.split.p, max(2 / 364, line))
    assert line > 2 / 364  # here the line's test is the stricter
    # Placement: before log 1.00 = 0, after the window's median log 1.12 = 0.1133: midpoint
    # and half-shift 0.0567. Logs less the midpoint (clipped at the half-shift) summed from
    # the newest back: 13: 0.0611, clipped 0.0567; 12: + 0.0566 = 0.1133; 11: log 1.045 -
    # 0.0567 = -0.0127: 0.1006. The largest sum starts at 12 (not 11, the first above 1.00).
    assert seen.split.index == 12
    # A 10 % step at night 12; night 11 lay high (1.07) in this series only, not in the
    # codec's other operation.
    series = [*REFERENCE, 1.07, 1.10, 1.11]
    other = [*reversed(REFERENCE), 1.00, 1.10, 1.10]
    # Night 13's window (1.07, 1.10, 1.11) lies beyond all 11 nights before: one-sided p =
    # 1 / C(14, 3) = 1/364 (night 12's holds 0.96). Each series: before log 1.00 = 0, after
    # log 1.10 = 0.0953: midpoint and half-shift h = 0.0477, one weight (one spread).
    # Distances past the midpoint, clipped at h, nights 11-13: this series 0.0200, h, h; the
    # other -h, h, h. Summed from the newest back, alone: 13: h, 12: 2h, 11: 2h + 0.0200:
    # night 11, a night early. Both: 13: 2h, 12: 4h = 0.191, 11: 3h + 0.0200 = 0.163: 12.
    (alone,) = nightly_watch.watch(series, 0.05, worse="higher")
    assert (alone.split.index, alone.seen) == (11, 13)
    assert math.isclose(alone.split.p, 1 / 364)
    (joint,) = nightly_watch.watch(series, 0.05, worse="higher", companions=[other])
    assert (joint.split.index, joint.seen) == (12, 13)
    # Medians: nights 12-13, 1.105; nights 0-11 (1.07 among them), (1.00 + 1.01) / 2.
    assert math.isclose(joint.split.ratio, 1.105 / 1.005)
    # A companion scattering 10x as much weighs 1/100: 12: 2h + 2h / 100 = 0.0963, 11: 2h +
    # 0.0200 + h / 100 = 0.116: night 11 again.
    noisy = [math.exp(10 * math.log(v)) for v in REFERENCE] + [1.00, 1.10, 1.10]
    (outvoted,) = nightly_watch.watch(series, 0.05, worse="higher", companions=[noisy])
    assert outvoted.split.index == 11


#: Eleven nights around 1.00 (median 1.00; robust spread 1.4826 x median |log v| =
#: 1.4826 x log(1 / 0.98) = 0.0300), the last the lowest.
REFERENCE = [1.02, 0.98, 1.00, 1.03, 0.97, 1.01, 1.025, 0.975, 0.995, 1.015, 0.96]


def test_a_second_step_is_seen_against_the_nights_moved_to_its_level_at_alpha():
    # A 30 % step at night 10 (a machine's, say), then json 200x slower from night 13.
    series = [*FLAT, 1.3, 1.301, 1.302, 260.0, 260.2, 260.4]
    first, second = nightly_watch.watch(series, 0.05, worse="higher")
    # Night 12's window lies beyond all 10 nights before it: one-sided p 1 / C(13, 3).
    assert (first.split.index, first.seen) == (10, 12)
    assert math.isclose(first.split.p, 1 / math.comb(13, 3))
    # 3 nights from night 10 precede night 15's window: too few at 0.05 one-sided (1 / C(6,
    # 3) = 0.05). Nights 0-9 moved to the new level (x 1.301 / 1.0045, the medians of nights
    # 10-12 and 0-9) stand in: the window lies beyond all 13, p 1 / C(16, 3) = 1 / 560.
    assert (second.split.index, second.seen) == (13, 15)
    assert math.isclose(second.split.p, 1 / 560)
    # Its size against that level: the 13 nights' median is night 11's 1.301 (six moved
    # nights from 1.2952 to 1.3004 and 1.300 lie below it).
    assert math.isclose(second.split.before_median, 1.301)
    assert math.isclose(second.split.ratio, 260.2 / 1.301)
    # Without the step, nights at the new level raise nothing.
    level = [*FLAT, 1.3, 1.301, 1.302, 1.3005, 1.2995, 1.3015]
    assert [s.split.index for s in nightly_watch.watch(level, 0.05, worse="higher")] == [10]
    # 5 % noise in logs, a 30 % step at night 12, 600 seeded series, alpha 0.05 / 12. Moved
    # nights are tested against in the windows beginning at nights 15 to 21: 7 tests a
    # series, so at most 7 x 0.05 / 12 = 2.9 % may alarm there (the moved level rests on 3
    # to 9 nights: the t test beside the ranks counts its error).
    rng = np.random.default_rng(7)
    alpha, runs = 0.05 / FAMILY, 600
    extra = 0
    for _ in range(runs):
        series = np.exp(rng.normal(0, 0.05, 30)) * 100
        series[12:] *= 1.3
        found = nightly_watch.watch(list(series), alpha, worse="higher")
        extra += any(15 <= seen.seen - 2 <= 21 for seen in found[1:])
    assert extra <= 7 * alpha * runs, extra


def _survey(tmp_path, nights):
    """The survey of a new store in `tmp_path` holding these nights."""
    with open_store(stored(tmp_path / "store.sqlite", nights)) as store:
        return survey(store)


def test_only_tested_metrics_raise_changes_context_beside_and_payloads_split_series(tmp_path):
    # Machine CPU doubles at night 7 and nothing else moves: no change.
    quiet = [night(tmp_path, i, FLAT_14[i], machine_cpu=50.0 if i < 7 else 100.0)
             for i in range(14)]  # fmt: skip
    found = _survey(tmp_path, quiet)
    assert found.changes == []
    assert all(s.series.key[0] == "codec" for s in found.statuses)  # telemetry not watched
    assert len(found.statuses) == TESTED_SERIES
    # nights whose payloads differ are never one series
    nights = [
        night(tmp_path / "payloads", i, (2.0 if i >= 10 else 1.0) * FLAT_14[i],
              codec_params={"payload_digest": "b" * 8 if i >= 10 else "a" * 8})
        for i in range(13)
    ]  # fmt: skip
    found = _survey(tmp_path / "payloads", nights)
    assert found.changes == []  # 10 nights of one payload set, 3 of another: no step
    lengths = sorted(s.nights for s in found.statuses)
    assert lengths == [3] * TESTED_SERIES + [10] * TESTED_SERIES
    assert all("payload_digest=" in s.series.name for s in found.statuses)


def test_a_step_is_found_at_its_first_night_with_the_context_beside_it_and_fails_once(tmp_path):
    # 14 nights, then 3 with every timing 1.5x and machine CPU 50 % -> 100 %.
    nights = [night(tmp_path, i, (1.5 if i >= 14 else 1.0) * FLAT_14[i],
                    machine_cpu=100.0 if i >= 14 else 50.0) for i in range(17)]  # fmt: skip
    found = _survey(tmp_path, nights)
    # Every codec 1.5x: the relative series (codec against codecs) do not move.
    assert len(found.changes) == TESTED_SERIES
    for change in found.changes:
        # 14 reference nights, 3 after, one-sided: p = 1 / C(17, 3) = 1 / 680 < 0.05 / 12.
        assert math.isclose(change.split.p, 1 / 680)
        assert change.run_id.startswith("20260014T")  # night 14, the step's first
        assert change.first_seen_run.startswith("20260016T")
        assert 49 < change.pct < 51
        assert any("50 -> 100" in text for text in change.context), change.context
    # The check fails on the night it first shows the step only.
    env = dict(os.environ, EVBENCH_HISTORY=str(tmp_path / "store.sqlite"))
    new = evbench("history", "check", "--since", "2026-11-17", env=env)  # night 16's day
    assert new.returncode == 3, new.stdout + new.stderr
    # After: nights 14-16 at 1.5 x (1.000, 1.001, 1.002), median 1.5015; before: the median
    # of 1.000 .. 1.013, 1.0065; 1.5015 / 1.0065 = 1.4918.
    assert "codec/seed/json/decode +49.2%" in new.stderr and "from run 20260014T" in new.stderr
    assert "cpu_util" not in new.stderr  # context is beside the change, never one itself
    assert "50 -> 100 percent" in new.stdout
    later = evbench("history", "check", "--since", "2026-11-18", env=env)
    assert later.returncode == 0, later.stdout + later.stderr


def test_a_150x_step_is_too_short_or_found_and_a_provisional_placement_shown_again(tmp_path):
    nights = [night(tmp_path, i, (150.0 if i >= 3 else 1.0) * FLAT_14[i]) for i in range(9)]
    found = _survey(tmp_path, nights)
    placed = {c.series for c in found.changes if c.run_id.startswith("20260003T")}
    # Watched from night 7, but the step lies in the first 4 nights the watch starts on,
    # and 9 nights are too short for the segmentation (46 at 0.05 / 12).
    short = {s.series.key for s in found.statuses if s.scan_short and s.nights == 9}
    assert placed | short == {s.series.key for s in found.statuses}
    env = dict(os.environ, EVBENCH_HISTORY=str(tmp_path / "store.sqlite"))
    check = evbench("history", "check", env=env)
    assert ("too short: 6 tested series have 9 nights" in check.stdout
            and check.stdout.count("\n") == 1) or check.returncode == 3, check.stdout  # fmt: skip
    # Every json operation follows SLOW_START; protobuf stays put. json's three relative
    # series alarm on night 13 (p 1/364 < 0.05 / 12), placed alike at night 11, then 12.
    # Its absolute series do not: they carry the lab's load and are held to the walk their
    # reference could be (nights 3 to 6 % apart, docs/history.md).
    factors = [{("json", op): SLOW_START[i] for op in OPERATIONS} for i in range(16)]
    nights = [night(tmp_path / "provisional", i, operation_factors=factors[i]) for i in range(16)]
    url = stored(tmp_path / "provisional" / "store.sqlite", nights[:14])
    env = dict(os.environ, EVBENCH_HISTORY=str(url.path))
    alarm = evbench("history", "check", "--since", "2026-11-14", env=env)  # night 13's day
    assert alarm.returncode == 3, alarm.stdout + alarm.stderr
    assert "codec/seed/json/decode" in alarm.stderr and "from run 20260011T" in alarm.stderr
    assert alarm.stdout.count("placement provisional: 3 nights from it so far") == 3
    # Accepted where the alarm placed it; the acceptance follows it when it moves.
    accepted = evbench("history", "accept", "--board", "bench-1", "--run",
                       "20260011T020000Z-00000b", "--reason", "known", env=env)  # fmt: skip
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    for number in (14, 15):
        with open_store(url) as store:
            store.add(index_run(nights[number]))
        later = evbench("history", "check", "--since", f"2026-11-{number + 1:02d}", env=env)
        # Shown again, placed at night 12 now, never failed again.
        assert later.returncode == 0, later.stdout + later.stderr
        lines = [line for line in later.stdout.splitlines() if "first placed at run" in line]
        assert len(lines) == 3, later.stdout
        assert all("relative to protobuf" in line for line in lines)
        assert all("(run 20260012T" in line and "first placed at run 20260011T" in line
                   and "first seen at run 20260013T" in line for line in lines)  # fmt: skip
        # Night 14: nights 12-14 from it, one more to come; night 15 settles it.
        provisional = ["placement provisional: 3 nights from it so far" in x for x in lines]
        assert provisional == [number == 14] * 3
        assert all("[accepted: known]" in line for line in lines)
        everything = evbench("history", "check", env=env)
        assert everything.returncode == 0, everything.stdout + everything.stderr


#: What each night's machine does to every codec alike: swings of up to 30 %.
NIGHT_LOAD = [1.0, 1.3, 0.9, 1.25, 1.05, 0.85, 1.2, 0.95, 1.3, 0.8, 1.1, 1.25, 0.9, 1.15]
NIGHT_LOAD += [0.85, 1.2, 1.0]


def test_a_ten_percent_step_is_seen_through_the_load_placed_with_the_other_operations(tmp_path):
    # json 10 % slower from night 14; protobuf a hair apart each night (no ties).
    nights = [
        night(tmp_path, i, NIGHT_LOAD[i], codec_factors={
            "json": 1.1 if i >= 14 else 1.0, "protobuf": 1 / FLAT_14[i]})
        for i in range(17)
    ]  # fmt: skip
    found = _survey(tmp_path, nights)
    # The absolute series swing 30 % a night: no change of level there. Relative to protobuf
    # the load cancels: json / protobuf is FLAT_14[i] before (1.000 .. 1.013), 1.1 x after,
    # in each operation and their geometric mean. Night 15's window holds night 13 (1.000)
    # 0.09 below its median, beyond 10 robust spreads (under 0.005): a partner's wild night
    # for all the test knows, put at the median; the 3 then lie beyond all 13 nights: p =
    # 1 / C(16, 3) = 1 / 560 (the step test's is far smaller). protobuf relative to json is
    # better (not asked): json's change only, 1.1 x 1.001 / 1.0065 (medians) = +9.4 %.
    assert len(found.changes) == 3, [c.describe() for c in found.changes]
    for change in found.changes:
        assert math.isclose(change.split.p, 1 / 560)
        assert change.first_seen_run.startswith("20260015T")
        assert change.run_id.startswith("20260014T")
        assert change.series[2] == "json" and "relative to protobuf" in change.series_name
        assert change.worse and round(change.pct, 1) == 9.4
    failing = regressions(found.changes, Criteria())
    assert sorted(c.series[3] for c in failing) == ["decode", "decode_access", "encode"]
    # json 1.5x slower from night 15 in all three operations, each wiggling as FLAT_14;
    # night 14 lay high (1.45x) in json decode only. protobuf stays put.
    factors = [{("json", op): FLAT_14[i] * (1.5 if i >= 15 else 1.0) for op in OPERATIONS}
               for i in range(17)]  # fmt: skip
    factors[14][("json", "decode")] = 1.45
    found = _survey(
        tmp_path / "operations",
        [night(tmp_path / "operations", i, operation_factors=factors[i]) for i in range(17)],
    )
    # json decode absolute: night 16's window (1.45, 1.5015, 1.503) beyond all 14 nights: p
    # = 1 / C(17, 3) = 1 / 680. The other absolute windows hold night 14 at 1.000: no alarm.
    # json's relative series are tested together (their geometric mean), where night 14 lies
    # log 1.45 / 3 = 0.124 above the old level: 1 / 680 for each of the three.
    assert sorted(c.series_name for c in found.changes) == [
        "codec/seed/json/decode",
        *(f"codec/seed/json/{op} {{relative to protobuf in the same runs}}"
          for op in ("decode", "decode_access", "encode")),
    ]  # fmt: skip
    # Placement (logs): before log 1.0065, after log 1.5015 in every json series: midpoint
    # 0.2065, h = 0.2, one weight. Night 14: decode's log 1.45 - 0.2065 = 0.165, the others'
    # -h; nights 15, 16: h (clipped). Decode alone: night 14: 2h + 0.165 > 15: 2h. With its
    # 4 companions and its twin: 15: 6 x 2h = 2.4 > 14: 2 x (2h + 0.165) + 4 x h = 1.93.
    for change in found.changes:
        assert math.isclose(change.split.p, 1 / 680)
        assert change.run_id.startswith("20260015T"), change.describe()
        assert change.first_seen_run.startswith("20260016T")


#: A 10 % step at night 12 whose first night lay low (1.07), after a night that lay high
#: (1.05), then the new level (1.14 to 1.15).
SLOW_START = [*REFERENCE, 1.05, 1.07, 1.14, 1.145, 1.15]


def test_a_change_is_placed_again_until_three_follow_its_alarm_and_never_lends_its_nights():
    # Night 13's window (1.05, 1.07, 1.14) lies beyond all 11 nights before: p 1/364. Level
    # log 1.07 = 0.0677, midpoint and h 0.0338; distances: night 11 0.0150, 12 and 13 h.
    # From the newest back: 13: h, 12: 2h = 0.0677, 11: 0.0826: night 11, a night early.
    (alarm,) = nightly_watch.watch(SLOW_START[:14], 0.05, worse="higher")
    assert (alarm.split.index, alarm.seen, alarm.first_index, alarm.through) == (11, 13, 11, 13)
    assert alarm.provisional
    # Night 14: level from nights 11-14, (1.07 + 1.14) / 2 = 1.105, log 0.0999, midpoint and
    # h 0.0499; distances: 11: -0.0011, 12: 0.0177, 13, 14: h. Candidates 11-13 (the alarm's
    # window): 13: 2h = 0.0999, 12: 0.1176, 11: 0.1164: night 12, the step's first.
    (later,) = nightly_watch.watch(SLOW_START[:15], 0.05, worse="higher")
    assert (later.split.index, later.seen, later.first_index, later.through) == (12, 13, 11, 14)
    assert later.provisional
    # Night 15, the third from the alarm night: median of 1.05 .. 1.15 is 1.14 (log 0.1310,
    # h 0.0655): night 11 -0.0167, night 12 +0.0021: night 12 again, and final. Its size:
    # nights 12-15's median (1.14 + 1.145) / 2 over nights 0-11's (1.00 + 1.01) / 2.
    (final,) = nightly_watch.watch(SLOW_START, 0.05, worse="higher")
    assert (final.split.index, final.first_index, final.through) == (12, 11, 15)
    assert not final.provisional
    assert math.isclose(final.split.ratio, 1.1425 / 1.005)
    # Nights after the third are left alone: the placement is settled.
    (settled,) = nightly_watch.watch([*SLOW_START, 1.05], 0.05, worse="higher")
    assert (settled.split.index, settled.through) == (12, 15)
    # Night 16: the segmentation needs 3 nights after a change, and must also find it in
    # nights 0-13 (no change there); the watch's window (14, 15, 16) holds two old nights.
    assert series_changes.changes_of(STEP_AFTER_HIGH[:17], 0.05, worse="higher") == []
    # Night 17: the window (1.046, 1.3, 1.301) against nights 0-14: ranks 14, 17, 18 of 18
    # (only 1.058, 1.061 above 1.046), sum 49. Of C(18, 3) = 816 windows 4 reach it
    # ({16,17,18}, {15,17,18}, {15,16,18}, {14,17,18}): p 4/816. The levels' midpoint,
    # sqrt(0.993 * 1.3) = 1.136 (0.993 the reference's median): nights 16 and 17 above it.
    (step,) = series_changes.changes_of(STEP_AFTER_HIGH[:18], 0.05, worse="higher")
    assert (step.split.index, step.seen) == (16, 17)
    assert math.isclose(step.split.p, 4 / 816)
    # Its size: nights 16-17's median over nights 0-15's, (0.993 + 1.002) / 2.
    assert math.isclose(step.split.ratio, 1.3005 / 0.9975)
    # Night 18 places it again at night 16; the segmentation, still short of 3 nights after
    # the step in what it scans, shows nothing else.
    changes = series_changes.changes_of(STEP_AFTER_HIGH, 0.05, "higher")
    assert [(s.split.index, s.seen) for s in changes] == [(16, 17)]
    # An improvement: only the segmentation sees it. It can place the step at night 10 once
    # 3 nights follow (night 12), but must find it before the newest 3 too: night 15.
    series = [*FLAT, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7]
    assert series_changes.changes_of(series[:15], 0.05, worse="higher") == []
    (step,) = series_changes.changes_of(series, 0.05, worse="higher")
    assert (step.split.index, step.seen) == (10, 15)
    assert math.isclose(step.split.ratio, 0.7 / 1.0045)  # nights 10-15 over 0-9's median


#: Sixteen nights of noise around 1.0 (no change), the last two high (1.042, 1.046), then
#: a step to 1.3 at night 16 (its nights 0.1 % apart: no ties).
HIGH_BEFORE = [0.991, 0.993, 1.038, 1.006, 1.011, 0.981, 1.002, 0.974,
               1.058, 1.061, 0.967, 0.986, 0.984, 0.982, 1.042, 1.046]  # fmt: skip
STEP_AFTER_HIGH = [*HIGH_BEFORE, 1.3, 1.301, 1.302]
