"""How often the nightly watch alarms on identical code, and how soon it sees a 10 % step.

    python benchmarks/watch_calibration.py collect --out cal --nights 40 --slowed 20
    python benchmarks/watch_calibration.py analyse --out cal [--otava .venv-otava/bin/python]
    python benchmarks/watch_calibration.py simulate --sequences 8 [--otava PYTHON]

`simulate` needs no runs: lab nights in time order (never shuffled) of three codecs
(json, protobuf and json-aa, json's copy) x three operations under four load shapes
(quiet; a load growing from 5 to 17 as measured in issue 43; a drift of 1-3 % a night;
a random walk of 2 % a night), each codec with its own sensitivity to the load (0.8 to
1.2, so the relative series cancel most of it, not all), 1.5 % noise per figure and
3 % of nights wild on one codec: the check's false alarms per lab night, and a 10 %
step in json-aa detected within 3 nights and placed at its first night.

`collect` makes the night pool from real runs on this machine (the local board):
each night is a codec run of the seed profile (`--plan quick`, the default, or
`--plan default`: the plan a lab runs unattended) with `--aa json` (json against
its identical copy json-aa), some nights under a bounded CPU hog on one core (a
busy loop pinned to CPU 0 for the night's run only), the others quiet. Every
`--slowed`-th night of the pool is run with `--aa-slowdown 0.1` instead: json-aa
10 % slower, under the same mix of load. Nights alternate in collection order so
the machine's drift hits both pools alike; nights.jsonl records each night's load
average, hog and slowdown.

`analyse` turns the pool into lab night series and reports, with Clopper-Pearson
95 % bounds:

- false alarms on identical code: `evbench history check` (as a lab night runs it,
  `--since` that night) per series-night and per lab night (any series), and
  `evbench compare --baseline` of consecutive nights (exit 3 per pair), without
  and with the history store's night-to-night spread (the identical nights
  before the pair, 8 at least); with the history also how often an identical
  night followed by a slowed one is confirmed worse;
- a 10 % step in json-aa: series of normal nights followed by slowed nights
  (the step at a random night); detection within 3 nights of the step's start
  and whether the change was placed at that night: where the first alarm placed
  it, where the check run on the step's third night (or on the alarm's night,
  if later) holds it, and where it settles (the watch places a change again
  until 3 nights from its alarm night are in);
- agreement with Apache Otava's E-Divisive change points on the same series
  (Otava runs in its own venv, `--otava PYTHON`).

The machine is shared: the load average of every night is printed beside the figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

EVBENCH = [sys.executable, "-m", "evbench"]
RUN = ["run", "--board", "local", "--suite", "codec", "--profile", "seed", "--aa", "json",
       "--no-history", "--quiet", "--board-name", "watch-calibration"]  # fmt: skip
#: The nightly plan: `quick` (about 4 s a night here) or the default plan a lab runs
#: unattended (about 10 s): more values a night, so less night-to-night spread.
PLANS = {"quick": ["--quick"], "default": []}
NIGHT_TIMEOUT = 600
HOG = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def _hog(seconds: float) -> subprocess.Popen:
    """A busy loop on CPU 0 for at most `seconds` (bounded even if we die)."""
    return subprocess.Popen(
        [sys.executable, "-c", HOG.format(seconds=seconds)],
        preexec_fn=lambda: os.sched_setaffinity(0, {0}),
    )


def collect(out: Path, nights: int, slowed: int, hog_share: float, seed: int,
            plan_name: str = "quick") -> None:  # fmt: skip
    """Run `nights` identical-code nights and `slowed` nights with json-aa 10 % slower."""
    out.mkdir(parents=True, exist_ok=True)
    log = out / "nights.jsonl"
    done = sum(1 for _ in log.open()) if log.exists() else 0
    rng = random.Random(seed)
    plan = ["normal"] * nights + ["slowed"] * slowed
    rng.shuffle(plan)  # the pools mixed in time: the machine's drift hits both alike
    hogs = [rng.random() < hog_share for _ in plan]
    for number in range(done, len(plan)):
        kind, hog = plan[number], hogs[number]
        directory = out / "runs" / f"night-{number:03d}"
        argv = [*EVBENCH, *RUN, *PLANS[plan_name], "--out", str(directory)]
        if kind == "slowed":
            argv += ["--aa-slowdown", "0.1"]
        load_before = os.getloadavg()[0]
        busy = _hog(NIGHT_TIMEOUT) if hog else None
        started = time.monotonic()
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=NIGHT_TIMEOUT)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        entry = {"night": number, "kind": kind, "hog": hog, "plan": plan_name,
                 "dir": str(directory),
                 "exit": result.returncode, "seconds": round(time.monotonic() - started, 1),
                 "load_before": load_before, "load_after": os.getloadavg()[0]}  # fmt: skip
        with log.open("a") as stream:
            stream.write(json.dumps(entry) + "\n")
        print(json.dumps(entry), flush=True)


# --- the pool read back ----------------------------------------------------------------

TESTED_OPERATIONS = ("encode", "decode", "decode_access")
CODECS = ("json", "json-aa")
SERIES = [(codec, operation) for codec in CODECS for operation in TESTED_OPERATIONS]
STEPPED = "json-aa"


def _night_figures(directory: Path) -> dict[tuple[str, str], float]:
    """One figure per tested series: the median of the night's pooled values, as the
    history store pools a run's workers (store.series)."""
    from evbench_core import results
    from evbench_core.analysis import stats

    pooled: dict[tuple[str, str], list[float]] = {}
    for sample_set in results.read_samples(directory):
        if sample_set.suite == "codec" and sample_set.metric in TESTED_OPERATIONS:
            pooled.setdefault((sample_set.codec, sample_set.metric), []).extend(sample_set.values)
    return {key: stats.summarize(values).median for key, values in pooled.items()}


def _pool(out: Path) -> list[dict]:
    nights = [json.loads(line) for line in (out / "nights.jsonl").read_text().splitlines()]
    kept = []
    for entry in nights:
        if entry["exit"] != 0:
            continue
        entry["figures"] = _night_figures(Path(entry["dir"]))
        kept.append(entry)
    return kept


def _bounds(k: int, n: int) -> str:
    sys.path.insert(0, str(Path(__file__).parent))
    from verdict_calibration import clopper_pearson

    if n == 0:
        return "0/0"
    low, high = clopper_pearson(k, n)
    return f"{k}/{n} = {k / n:.1%} [95% CI {low:.1%}, {high:.1%}]"


# --- history check --------------------------------------------------------------------


def _board(sequence: list[dict]) -> list:
    """The board's tested series as the history store gives them to the check."""
    from evbench.history.store import SeriesPoint
    from evbench.history.trends import Series

    watched = []
    for codec, operation in SERIES:
        points = [
            SeriesPoint(
                {"run_id": f"night-{i:03d}", "start_time": f"{i:04d}"},
                {"median": night["figures"][(codec, operation)], "unit": "s",
                 "record_params": "{}"},
            )
            for i, night in enumerate(sequence)
        ]  # fmt: skip
        watched.append(Series("calibration", ("codec", "seed", codec, operation), points))
    return watched


def _held(sequence: list[dict]) -> dict[int, list[tuple]]:
    """Per night t: every (series, change) the check run that night holds, placed as it
    places them that night. The check's own code (trends.board_changes: absolute and
    relative series, alpha / m)."""
    from evbench.history import trends

    return {
        last: trends.board_changes(_board(sequence[: last + 1]))[0]
        for last in range(5, len(sequence))
    }


def _alarms(held: dict[int, list[tuple]], threshold: float = 5.0) -> dict[int, list[tuple]]:
    """Per night t: the (series, change) failing `evbench history check --since NIGHT_t`
    run that night would show: first shown at t, worse beyond the threshold."""
    found: dict[int, list[tuple]] = {}
    for last, detected in held.items():
        for series, seen in detected:
            worse = (seen.split.ratio - 1) * 100
            if seen.seen == last and worse > threshold:
                found.setdefault(last, []).append((series, seen))
    return found


def history_false_alarms(pool: list[dict], sequences: int, length: int, rng) -> dict:
    """Identical-code lab nights in random orders: alarms per series-night and per night."""
    normal = [n for n in pool if n["kind"] == "normal"]
    night_alarms = series_alarms = nights = series_nights = 0
    for _ in range(sequences):
        sequence = rng.sample(normal, min(length, len(normal)))
        alarms = _alarms(_held(sequence))
        nights += len(sequence)
        series_nights += len(sequence) * len(SERIES) * 2  # absolute and relative
        night_alarms += len(alarms)
        series_alarms += sum(len({s.name for s, _seen in found}) for found in alarms.values())
    return {"lab nights": (night_alarms, nights), "series-nights": (series_alarms, series_nights)}


def detection(pool: list[dict], injections: int, rng, after: int = 6) -> dict:
    """A 10 % step in json-aa at a random night: when the check first alarms on it, where
    it places it then, and where the check run on the step's third night (or on the
    alarm's, if later) holds it: the watch places a change again as nights arrive, and
    `history check --since` that night shows a change placed again."""
    from evbench.history import nightly_watch

    normal = [n for n in pool if n["kind"] == "normal"]
    slowed = [n for n in pool if n["kind"] == "slowed"]
    need = nightly_watch.reference_needed(0.05 / (2 * len(SERIES)))
    within3 = placed = placed_then = placed_settled = detected = false_json = early = 0
    delays: list[int] = []
    offsets: list[int] = []
    offsets_then: list[int | None] = []
    series_for_otava = []
    for _ in range(injections):
        start = rng.randint(need, min(len(normal), 30))
        sequence = rng.sample(normal, start) + rng.sample(slowed, min(after, len(slowed)))
        held = _held(sequence)
        alarms = _alarms(held)
        # Alarms before the step are false alarms; the first on json-aa from it on detects it.
        hits = sorted(
            ((last, seen, series) for last, found in alarms.items() for series, seen in found
             if series.key[2] == STEPPED and last >= start), key=lambda hit: hit[0],
        )  # fmt: skip
        early += any(last < start for last in alarms)
        false_json += any(
            s.key[2] != STEPPED and s.relative_to == () for found in alarms.values()
            for s, _seen in found
        )  # fmt: skip
        if hits:
            last, seen, series = hits[0]
            detected += 1
            delays.append(last - start)
            within3 += last - start <= 2
            placed += seen.split.index == start
            offsets.append(seen.split.index - start)
            # The same change (series and alarm night) as the check holds it on the step's
            # third night, or on the alarm's night if later.
            then = max(last, start + 2)
            same = [c.split.index for s, c in held.get(then, [])
                    if s.name == series.name and c.seen == last]  # fmt: skip
            placed_then += bool(same) and same[0] == start
            offsets_then.append(same[0] - start if same else None)
            # And once settled: 3 nights from the alarm night (nightly_watch.watch).
            final = min(last + nightly_watch.WINDOW - 1, len(sequence) - 1)
            same = [c.split.index for s, c in held.get(final, [])
                    if s.name == series.name and c.seen == last]  # fmt: skip
            placed_settled += bool(same) and same[0] == start
        # The series the check saw the step in: json-aa relative to json, decode.
        relative = [n["figures"][(STEPPED, "decode")] / n["figures"][("json", "decode")]
                    for n in sequence]  # fmt: skip
        series_for_otava.append((start, relative))
    return {
        "detected (any night)": (detected, injections),
        "detected within 3 nights": (within3, injections),
        "placed at the step's first night, at the first alarm": (placed, injections),
        "placed at the first alarm, of those detected": (placed, detected),
        "placed at the step's first night, as held on its third night (or the alarm's)": (
            placed_then,
            injections,
        ),
        "placed at the step's first night, settled (3 nights from the alarm night)": (
            placed_settled,
            injections,
        ),
        "delays": delays,
        "offsets": offsets,
        "offsets_then": offsets_then,
        "sequences with a false alarm before the step": (early, injections),
        "sequences with an alarm on json's own (absolute) series": (false_json, injections),
        "otava_series": series_for_otava,
    }


# --- compare ----------------------------------------------------------------------------


def _history_of(nights: list[dict]):
    """The compare's night test (evbench.report.compare.NightTest) over these nights'
    figures, as BoardHistory draws it from a store: one median per night and series."""
    from evbench.history import night_spread

    def test(codec: str, identity, ratio: float) -> tuple[int, float | None]:
        values = [n["figures"][(codec, identity.metric)] for n in nights
                  if (codec, identity.metric) in n["figures"]]  # fmt: skip
        found = night_spread.of_values(values)
        return found.nights, found.p_value(ratio)

    return test


def compare_false_alarms(pool: list[dict]) -> dict:
    """`evbench compare --baseline` of consecutive identical-code nights, and of an
    identical night followed by a slowed one, without and with the history of the
    identical nights before the pair (the board's store as a lab's would hold it, 8
    nights at least)."""
    from evbench.report import compare, criteria
    from evbench.report.context import load_context

    need = 8
    tally = {name: [0, 0] for name in (
        "identical pairs: exit 3, two runs alone",
        "identical pairs: exit 3, with the history",
        "identical pairs: a row confirmed worse (history)",
        "old rule (worse verdict beyond 5 %)",
        "identical then slowed: exit 3, with the history",
        "identical then slowed: a json-aa row confirmed worse (history)",
    )}  # fmt: skip
    normal = [n for n in pool if n["kind"] == "normal"]
    # Identical pairs: consecutive identical nights; a step: an identical night and the
    # slowed night right after it in collection order.
    pairs = [*itertools.pairwise(normal),
             *((a, b) for a, b in itertools.pairwise(pool) if (a["kind"], b["kind"])
               == ("normal", "slowed"))]  # fmt: skip
    for first, second in pairs:
        contexts = [load_context(Path(first["dir"])), load_context(Path(second["dir"]))]
        earlier = normal[: normal.index(first)]
        history = _history_of(earlier) if len(earlier) >= need else None
        with_history = (
            compare.compare(contexts, criteria.Criteria(), baseline=True, nights=history)
            if history
            else None
        )
        confirmed = [] if with_history is None else [
            (row.codec, c) for row in with_history.rows for c in row.changes
            if c.status.startswith("confirmed") and c.worse
        ]  # fmt: skip
        if second["kind"] == "normal":
            alone = compare.compare(contexts, criteria.Criteria(), baseline=True)
            _count(tally["identical pairs: exit 3, two runs alone"], bool(alone.regressions))
            _count(tally["old rule (worse verdict beyond 5 %)"], any(
                c.status == compare.TWO_NIGHTS and c.worse and c.difference * 100 > 5
                for row in alone.rows for c in row.changes
            ))  # fmt: skip
            if with_history is not None:
                _count(tally["identical pairs: exit 3, with the history"],
                       bool(with_history.regressions))  # fmt: skip
                _count(tally["identical pairs: a row confirmed worse (history)"], bool(confirmed))
        elif with_history is not None:
            _count(tally["identical then slowed: exit 3, with the history"],
                   bool(with_history.regressions))  # fmt: skip
            _count(tally["identical then slowed: a json-aa row confirmed worse (history)"],
                   any(codec == STEPPED for codec, _c in confirmed))  # fmt: skip
    return {name: (k, n) for name, (k, n) in tally.items()}


def _count(cell: list[int], event: bool) -> None:
    cell[0] += event
    cell[1] += 1


# --- Apache Otava ------------------------------------------------------------------------

OTAVA = """
import json, sys
from otava.analysis import compute_change_points
out = []
for start, values in json.load(sys.stdin):
    points, _weak = compute_change_points(values, window_len=50, max_pvalue=0.001)
    out.append([int(p.index) for p in points])
json.dump(out, sys.stdout)
"""


def otava_agreement(python: str, series: list[tuple[int, list[float]]]) -> dict:
    """Otava's E-Divisive change points (its defaults: window 50, p 0.001) on the
    stepped series at the step's third night and at their end, against evbench's."""
    from evbench.history import series_changes

    alpha = 0.05 / (2 * len(SERIES))  # the check's level: absolute and relative series
    cases = []
    for start, values in series:
        cases += [(start, values[: start + 3]), (start, values)]
    done = subprocess.run(
        [python, "-c", OTAVA], input=json.dumps(cases), capture_output=True, text=True,
        timeout=600, check=True,
    )  # fmt: skip
    points = json.loads(done.stdout)
    tally = {"both at the step": 0, "evbench only": 0, "otava only": 0, "neither": 0}
    otava_hits = evbench_hits = 0
    for (start, values), found in zip(cases, points, strict=True):
        ours = any(
            abs(s.split.index - start) <= 1 for s in series_changes.changes_of(values, alpha)
        )
        theirs = any(abs(index - start) <= 1 for index in found)
        otava_hits += theirs
        evbench_hits += ours
        key = ("both at the step" if ours and theirs else "evbench only" if ours
               else "otava only" if theirs else "neither")  # fmt: skip
        tally[key] += 1
    return {"cases": len(cases), **tally, "otava found": otava_hits, "evbench found": evbench_hits}


# --- simulated lab nights in time order, under a drifting load -------------------------

#: The shapes of a lab's load over the nights (issue 43): quiet (load 2-3), drifting
#: upward night by night (load 5 to 17, as measured), a drift of 1-3 % a night, and a
#: level that wanders (a random walk of 2 % a night).
SHAPES = ("quiet", "load 5 to 17", "drift 1-3 %/night", "random walk 2 %/night")
SIM_CODECS = ("json", "protobuf", "json-aa")


def _simulated(rng: random.Random, shape: str, nights: int, step_at: int | None) -> list[dict]:
    """Nights of three codecs (json, protobuf, json-aa: json's identical copy) x three
    operations. Each night's load multiplies every codec, each with its own sensitivity
    (0.8 to 1.2: the relative series cancel most, not all, of it); each figure has its
    own 1.5 % noise and 3 % of nights are disturbed (1.3 to 2x on one codec). json-aa
    10 % slower from night `step_at`."""
    import math as m

    sensitivity = {codec: rng.uniform(0.8, 1.2) for codec in SIM_CODECS}
    base = {"json": 10e-6, "protobuf": 3e-6, "json-aa": 10e-6}
    log_load, out = 0.0, []
    per_night = rng.uniform(0.01, 0.03)
    for night in range(nights):
        if shape == "quiet":
            log_load = m.log(1 + 0.02 * rng.uniform(2, 3))
        elif shape == "load 5 to 17":
            load = 5 + 12 * night / max(1, nights - 1) + rng.gauss(0, 1)
            log_load = m.log(1 + 0.04 * load)
        elif shape == "drift 1-3 %/night":
            log_load += per_night + rng.gauss(0, 0.01)
        else:
            log_load += rng.gauss(0, 0.02)
        figures = {}
        for codec in SIM_CODECS:
            wild = rng.uniform(1.3, 2.0) if rng.random() < 0.03 else 1.0
            slowed = 1.1 if step_at is not None and night >= step_at and codec == STEPPED else 1
            for operation in TESTED_OPERATIONS:
                noise = m.exp(rng.gauss(0, 0.015) + sensitivity[codec] * log_load)
                figures[(codec, operation)] = base[codec] * noise * wild * slowed
        out.append({"figures": figures})
    return out


def _sim_board(sequence: list[dict]) -> list:
    from evbench.history.store import SeriesPoint
    from evbench.history.trends import Series

    return [
        Series("simulated", ("codec", "seed", codec, operation), [
            SeriesPoint({"run_id": f"n{i:03d}", "start_time": f"{i:04d}"},
                        {"median": night["figures"][(codec, operation)], "unit": "s",
                         "record_params": "{}"})
            for i, night in enumerate(sequence)])
        for codec in SIM_CODECS for operation in TESTED_OPERATIONS
    ]  # fmt: skip


def _sim_alarms(sequence: list[dict], first: int = 6) -> dict[int, list[tuple]]:
    """Per night t (time order): what `history check --since NIGHT_t` fails on that night,
    replayed from one watch over every night (`_replayed`)."""
    return _alarms(_replayed(_sim_board(sequence), first))


def _replayed(board: list, first: int) -> dict[int, list[tuple]]:
    """Per night t: every (series, change) the check run on night t holds, as
    `trends.board_changes` over the nights up to t gives them, without running it once a
    night. The watch is causal (each night's tests and the family's Benjamini-Hochberg
    read only the nights so far), so one watch over every night has each change's alarm
    night and its placement on each night since (`Seen.placements`); the segmentation's
    changes are `series_changes.segmentation` of each prefix, with every prefix scanned once.
    `--check-replay` compares this with board_changes on every prefix."""
    from dataclasses import replace

    from evbench.history import nightly_watch, segmentation, series_changes, trends

    watches, family = trends.board_watch(board)
    held: dict[int, list[tuple]] = {}
    nights = len(board[0].points)
    for w in watches:
        wanders = not w.series.relative_to
        scans = series_changes.prefix_scans(w.values, family, wanders)
        for last in range(first, nights):
            shown = []
            for seen in w.seen:
                if seen.seen <= last:
                    placed = seen.placements[min(last - seen.seen, len(seen.placements) - 1)]
                    shown.append(replace(seen, split=placed))
            kept = list(shown)
            prefix = w.values[: last + 1]
            for split in series_changes.segmentation(prefix, family, scans):
                if any(
                    abs(s.split.index - split.index) <= segmentation.REFINE_NIGHTS for s in shown
                ):
                    continue
                shown_at = series_changes.first_seen(prefix, split.index, family, scans)
                kept.append(nightly_watch.Seen(split, shown_at))
            held.setdefault(last, []).extend((w.series, s) for s in kept)
    return held


def check_replay(sequences: int, nights: int, seed: int) -> None:
    """`_replayed` against `trends.board_changes` run on every prefix, alarm for alarm."""
    from evbench.history import trends

    rng = random.Random(seed)
    for shape in SHAPES:
        for _ in range(sequences):
            step_at = rng.randint(8, nights - 6)
            sequence = _simulated(rng, shape, nights, step_at)
            slow = _alarms({last: trends.board_changes(_sim_board(sequence[: last + 1]))[0]
                            for last in range(6, nights)})  # fmt: skip
            fast = _sim_alarms(sequence)

            def said(alarms: dict[int, list[tuple]]) -> set:
                return {(last, s.name, seen.split.index, round(seen.split.ratio, 9))
                        for last, found in alarms.items() for s, seen in found}  # fmt: skip

            same = said(slow) == said(fast)
            print(f"{shape}: step at {step_at}: {len(said(slow))} alarms, replay "
                  f"{'the same' if same else 'DIFFERS: ' + str(said(slow) ^ said(fast))}",
                  flush=True)  # fmt: skip


def simulate(sequences: int, nights: int, seed: int, otava: str | None) -> None:
    """False alarms per lab night in time order (identical code), and a 10 % step's
    detection, for each load shape; Otava's E-Divisive on the same series if given."""
    rng = random.Random(seed)
    for shape in SHAPES:
        alarmed = tested = 0
        for _ in range(sequences):
            alarms = _sim_alarms(_simulated(rng, shape, nights, None))
            alarmed += len(alarms)
            tested += nights - 6
        detected = within3 = placed = early = 0
        otava_cases = []
        for _ in range(sequences):
            step_at = rng.randint(8, nights - 6)
            sequence = _simulated(rng, shape, step_at + 6, step_at)
            alarms = _sim_alarms(sequence)
            hits = sorted(((last, seen) for last, found in alarms.items() for s, seen in found
                           if s.key[2] == STEPPED and last >= step_at),
                          key=lambda hit: hit[0])  # fmt: skip
            early += any(last < step_at for last in alarms)
            if hits:
                last, seen = hits[0]
                detected += 1
                within3 += last - step_at <= 2
                placed += last - step_at <= 2 and seen.split.index == step_at
            relative = [n["figures"][(STEPPED, "decode")] / n["figures"][("json", "decode")]
                        for n in sequence]  # fmt: skip
            otava_cases.append((step_at, relative))
        print(f"{shape}: {sequences} sequences of {nights} nights in time order")
        print(f"  identical code, lab nights alarming: {_bounds(alarmed, tested)}")
        print(f"  10 % step in json-aa: detected within 3 nights {_bounds(within3, sequences)}; "
              f"and placed at its first night {_bounds(placed, sequences)}; at all "
              f"{_bounds(detected, sequences)}; a false alarm before it in "
              f"{_bounds(early, sequences)}")  # fmt: skip
        counts = {"shape": shape, "alarmed": alarmed, "tested": tested, "within3": within3,
                  "placed": placed, "detected": detected, "early": early,
                  "sequences": sequences}  # fmt: skip
        if otava:
            flat = [
                [
                    n["figures"][("json-aa", "decode")] / n["figures"][("json", "decode")]
                    for n in _simulated(rng, shape, nights, None)
                ]
                for _ in range(sequences)
            ]
            absolute = [
                [n["figures"][("json", "decode")] for n in _simulated(rng, shape, nights, None)]
                for _ in range(sequences)
            ]
            said, found = _otava_sim(otava, flat, absolute, otava_cases)
            print("  Otava:", said)
            counts.update(found)
        print("  counts:", json.dumps(counts), flush=True)


OTAVA_SIM = """
import json, sys
from otava.analysis import compute_change_points
out = []
for values in json.load(sys.stdin):
    points, _weak = compute_change_points(values, window_len=50, max_pvalue=0.001)
    out.append([int(p.index) for p in points])
json.dump(out, sys.stdout)
"""


def _otava_sim(python: str, flat: list[list[float]], absolute: list[list[float]],
               stepped: list[tuple[int, list[float]]]) -> tuple[str, dict]:  # fmt: skip
    """Otava (E-Divisive, window 50, p 0.001) on identical-code series (relative and
    absolute, whole), and on the stepped relative series cut 3 nights after the step."""
    cases = [*flat, *absolute, *(values[: start + 3] for start, values in stepped)]
    done = subprocess.run([python, "-c", OTAVA_SIM], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    points = json.loads(done.stdout)
    n = len(flat)
    flat_any = sum(bool(p) for p in points[:n])
    absolute_any = sum(bool(p) for p in points[n : 2 * n])
    found = sum(any(abs(i - start) <= 1 for i in p)
                for (start, _v), p in zip(stepped, points[2 * n :], strict=True))  # fmt: skip
    exact = sum(start in p for (start, _v), p in zip(stepped, points[2 * n :], strict=True))
    found_counts = {"otava_relative_any": flat_any, "otava_absolute_any": absolute_any,
                    "otava_within1": found, "otava_exact": exact}  # fmt: skip
    return (f"identical-code relative series with any change point {_bounds(flat_any, n)}, "
            f"absolute {_bounds(absolute_any, n)}; step found on its 3rd night within 1 night "
            f"{_bounds(found, len(stepped))}, at its first night "
            f"{_bounds(exact, len(stepped))}", found_counts)  # fmt: skip


def analyse(out: Path, sequences: int, injections: int, otava: str | None, seed: int) -> None:
    import statistics

    rng = random.Random(seed)
    pool = _pool(out)
    kinds = {kind: [n for n in pool if n["kind"] == kind] for kind in ("normal", "slowed")}
    loads = [n["load_before"] for n in pool]
    print(f"pool: {len(kinds['normal'])} identical-code nights, {len(kinds['slowed'])} with "
          f"json-aa 10 % slower; {sum(n['hog'] for n in pool)} under the CPU hog; load average "
          f"{min(loads):.1f} to {max(loads):.1f} (median {statistics.median(loads):.1f}) on "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    for kind, nights in kinds.items():
        for hog in (False, True):
            chosen = [n for n in nights if n["hog"] == hog]
            if chosen:
                ratio = [n["figures"][("json-aa", "decode")] / n["figures"][("json", "decode")]
                         for n in chosen]  # fmt: skip
                level = statistics.median(n["figures"][("json", "decode")] for n in chosen)
                print(
                    f"  {kind}, hog {hog}: {len(chosen)} nights, json decode median "
                    f"{level * 1e6:.2f} us, json-aa/json {statistics.median(ratio):.3f}"
                )
    alarms = history_false_alarms(pool, sequences, 40, rng)
    print(f"history check, identical code, {sequences} random orders of up to 40 nights:")
    for name, (k, n) in alarms.items():
        print(f"  false alarms per {name}: {_bounds(k, n)}")
    compared = compare_false_alarms(pool)
    print("compare --baseline, consecutive nights:")
    for name, (k, n) in compared.items():
        print(f"  {name}: {_bounds(k, n)}")
    found = detection(pool, injections, rng)
    print(f"10 % step in json-aa, {injections} injections (nights resampled from the pool):")
    for name, value in found.items():
        if isinstance(value, tuple):
            print(f"  {name}: {_bounds(*value)}")
    if found["delays"]:
        counts = {d: found["delays"].count(d) for d in sorted(set(found["delays"]))}
        print(f"  delay in nights after the first stepped night (first alarm): {counts}")
        offsets = {d: found["offsets"].count(d) for d in sorted(set(found["offsets"]))}
        print(f"  placement at the first alarm, nights after the step's first night: {offsets}")
        then = found["offsets_then"]
        offsets = {d: then.count(d) for d in sorted(set(then), key=lambda d: (d is None, d))}
        print(f"  placement held on the step's third night (or the alarm's): {offsets}")
    if otava:
        agreement = otava_agreement(otava, found["otava_series"])
        print(
            "Apache Otava (E-Divisive, window 50, p 0.001) and evbench's detectors on the "
            f"same series (json-aa / json, decode; at the 3rd stepped night and at the end; "
            f"a change within 1 night of the step counts): {agreement}"
        )


# --- the trend page's time on a lab's store ----------------------------------------------

CORE_V1 = Path(__file__).resolve().parent.parent / "tests" / "data" / "runs" / "core-v1"


def _synthetic_night(out: Path, number: int, codecs: int, rng: random.Random,
                     moved: float) -> Path:  # fmt: skip
    """Night `number`: the committed run tests/data/runs/core-v1 with its json records
    copied to `codecs` codecs (codec00..), every timing scaled by the night's load (a
    few % a night) and its own noise; codec00 `moved` slower from the 30th night on."""
    import datetime as dt
    import shutil

    from evbench_core import results

    directory = out / f"night-{number:03d}"
    shutil.copytree(CORE_V1, directory)
    manifest = json.loads((directory / results.MANIFEST).read_text())
    run_id = f"2026{number:04d}T020000Z-{number:06x}"
    start = dt.datetime(2026, 11, 1, 2, tzinfo=dt.timezone.utc) + dt.timedelta(days=number)
    names = [f"codec{c:02d}" for c in range(codecs)]
    manifest.update(run_id=run_id, start_time=start.isoformat(timespec="milliseconds"))
    manifest["spec"]["codecs"] = names
    manifest["board_identity"] = {"id": "name:lab-1", "source": "--board-name", "place": None}
    results.write_json(directory / results.MANIFEST, manifest)
    load = 1 + 0.02 * rng.random()
    lines = []
    for line in (directory / results.SAMPLES).read_text().splitlines():
        sample_set = json.loads(line)
        if sample_set["suite"] != "codec" or sample_set["codec"] != "json":
            continue
        for c, name in enumerate(names):
            copy = dict(sample_set, codec=name)
            if copy["metric"] in TESTED_OPERATIONS:
                scale = load * (1 + 0.1 * c) * rng.gauss(1, 0.01)
                scale *= 1 + moved if c == 0 and number >= 30 else 1
                copy["values"] = [v * scale for v in copy["values"]]
            lines.append(json.dumps(copy) + "\n")
    (directory / results.SAMPLES).write_text("".join(lines))
    records = results.summarize(results.read_samples(directory))
    summary = {"format": results.FORMAT, "version": results.VERSION, "run_id": run_id,
               "partial": False, "records": records}  # fmt: skip
    results.write_json(directory / results.SUMMARY, summary)
    results.write_checksums(directory)
    (directory / results.COMPLETE).write_text(f"{run_id}\n")
    return directory


def trend_page_time(out: Path, nights: int, codecs: int, seed: int) -> None:
    """Build a store of `nights` nights x `codecs` codecs x 3 timings (12 codecs: 36
    tested series, 72 with the relative ones) and time `evbench history report` on it."""
    from evbench.history import open_store, parse_url
    from evbench.history.indexing import index_run

    rng = random.Random(seed)
    store_path = out / "history.sqlite"
    if not store_path.exists():
        out.mkdir(parents=True, exist_ok=True)
        with open_store(parse_url(str(store_path))) as store:
            for number in range(nights):
                store.add(index_run(_synthetic_night(out / "runs", number, codecs, rng, 0.1)))
    started = time.monotonic()
    done = subprocess.run([*EVBENCH, "history", "report", "--history", str(store_path), "--out",
                           str(out / "trends")], capture_output=True, text=True)  # fmt: skip
    seconds = time.monotonic() - started
    page = out / "trends" / "trends.html"
    size = page.stat().st_size if page.exists() else 0
    print(done.stderr, end="")
    print(f"trend page: {nights} nights x {codecs * 3} tested series: exit {done.returncode}, "
          f"{seconds:.1f} s, {size / 1e6:.2f} MB")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    actions = parser.add_subparsers(dest="action", required=True)
    gather = actions.add_parser("collect", help="run the night pool")
    gather.add_argument("--out", type=Path, required=True)
    gather.add_argument("--nights", type=int, default=40, help="identical-code nights")
    gather.add_argument("--slowed", type=int, default=20, help="nights with json-aa 10 %% slower")
    gather.add_argument("--hog-share", type=float, default=0.5, help="nights under the CPU hog")
    gather.add_argument("--seed", type=int, default=26)
    gather.add_argument("--plan", choices=sorted(PLANS), default="quick",
                        help="each night's plan (default: quick)")  # fmt: skip
    study = actions.add_parser("analyse", help="false alarms, detection, Otava agreement")
    study.add_argument("--out", type=Path, required=True)
    study.add_argument("--sequences", type=int, default=30, help="random orders of the nights")
    study.add_argument("--injections", type=int, default=100, help="10 %% steps injected")
    study.add_argument("--otava", metavar="PYTHON", help="the interpreter of Otava's own venv")
    study.add_argument("--seed", type=int, default=26)
    sim = actions.add_parser("simulate", help="simulated nights in time order, drifting load")
    sim.add_argument("--sequences", type=int, default=20, help="sequences per load shape")
    sim.add_argument("--nights", type=int, default=35)
    sim.add_argument("--otava", metavar="PYTHON", help="the interpreter of Otava's own venv")
    sim.add_argument("--seed", type=int, default=43)
    sim.add_argument("--check-replay", action="store_true",
                     help="compare the replay with the check run on every prefix")  # fmt: skip
    page = actions.add_parser("trend-page", help="time the trend page on a synthetic store")
    page.add_argument("--out", type=Path, required=True)
    page.add_argument("--nights", type=int, default=35)
    page.add_argument("--codecs", type=int, default=12, help="x 3 timings: tested series")
    page.add_argument("--seed", type=int, default=35)
    args = parser.parse_args()
    if args.action == "trend-page":
        trend_page_time(args.out, args.nights, args.codecs, args.seed)
    elif args.action == "simulate" and args.check_replay:
        check_replay(args.sequences, args.nights, args.seed)
    elif args.action == "simulate":
        simulate(args.sequences, args.nights, args.seed, args.otava)
    elif args.action == "collect":
        collect(args.out, args.nights, args.slowed, args.hog_share, args.seed, args.plan)
    else:
        analyse(args.out, args.sequences, args.injections, args.otava, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
