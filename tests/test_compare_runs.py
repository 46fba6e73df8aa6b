"""evbench compare, in process, on runs written by the real writer whose answer is known by
construction, and a change confirmed against the board's history of nights.

Per-process values are symmetric about the process's centre (its median exactly), the
centres a fixed symmetric set, the same in both runs: a codec 20 % slower in every
process puts its 10 medians above all 10 of the baseline's, so the exact two-sided
Mann-Whitney p is 2 / C(20, 10) and the Hodges-Lehmann ratio 1.2 exactly. The nights
(tests/history_runs.py) have every timing times a known factor: night-to-night log
differences log(f[i+1] / f[i]), p from scipy's Student t and Holm's rule by hand.
"""

import dataclasses
import functools
import itertools
import json
import math
import random
import shutil
from pathlib import Path
from unittest import mock

import pytest
from history_runs import CORE_V1, night, stored
from scipy import stats as scipy_stats

from evbench.cli import evbench
from evbench.history.night_spread import NightSpread, of_values
from evbench.report import compare, criteria
from evbench.report.compare import Change, _night_interval, _p_cell
from evbench.report.context import load_context
from evbench_core import comparison, results
from evbench_core.analysis.stats import student_t_sf
from evbench_core.analysis.verdicts import BASELINE, EQUAL, TOO_SMALL, UNDECIDED
from evbench_core.results import SampleSet

PLAN = {"processes": 10, "values": 5, "warmups": 1, "payloads": 20, "seed": 1}
#: Process centres: log-offsets -0.05 .. 0.05 without 0, symmetric (their spread, 0.1,
#: is less than log 1.2 = 0.18, so a 20 % slower run's medians all lie above).
OFFSETS = [0.01 * k for k in (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5)]
#: Five symmetric centres for a quick-like plan: the ratio estimate stays exact.
QUICK_OFFSETS = [0.01 * k for k in (-4, -2, 0, 2, 4)]
#: Round-to-round variation within a process, symmetric around 1: the median is the centre.
ROUNDS = [math.exp(e) for e in (-0.01, -0.005, 0.0, 0.005, 0.01)]
OPERATIONS = {"encode": 50e-6, "decode": 30e-6, "decode_access": 40e-6}
CODECS = {"json": 1.0, "protobuf": 0.2}
LINK = {"peer": "loopback", "mode": "ack", "rate_hz": 20.0, "count": 20}
CAPACITY = {"peer": "loopback", "mode": "ack", "window": 8, "duration_s": 1.0}
#: Twelve nights of identical code, a few percent apart (night 12 is the baseline).
NOISE = [1.00, 1.03, 0.99, 1.02, 0.97, 1.01, 1.03, 0.98, 1.00, 1.02, 0.99, 1.01]
LinkSet = functools.partial(SampleSet, "link", "seed")


def codec_sets(
    slower: dict[str, float] | None = None,
    loops: int = 16,
    offsets: list[float] = OFFSETS,
    payloads: dict[str, int] | None = None,
) -> list[SampleSet]:
    """The codec suite's sets, one per process, codec and operation. `slower` multiplies a
    codec's times; `payloads` changes one operation's plan (an identity param); `loops`
    (an outcome) differs by codec as calibration does."""
    slower, payloads = slower or {}, payloads or {}
    sets = []
    for worker, offset in enumerate(offsets):
        for operation, seconds in OPERATIONS.items():
            params = dict(PLAN, payloads=payloads.get(operation, PLAN["payloads"]))
            for codec, factor in CODECS.items():
                centre = seconds * factor * slower.get(codec, 1.0) * math.exp(offset)
                values = [centre * r for r in ROUNDS]
                run = params | {"loops": loops * (2 if codec == "protobuf" else 1)}  # an outcome
                sets.append(SampleSet("codec", "seed", codec, operation, "s", run, values, worker))
    for codec, size in (("json", 1000.0), ("protobuf", 300.0)):
        grown = size * slower.get(f"{codec}-size", 1.0)
        sizes = [grown + i for i in range(20)]
        sets.append(SampleSet("codec", "seed", codec, "size", "bytes", {"payloads": 20}, sizes))
    return sets


def link_sets(
    phases: int, rtt_factor: float = 1.0, cpu: float = 2.0, capacity_factor: float = 1.0
) -> list[SampleSet]:
    """Link phases (the replicate) with per-message RTTs, and telemetry per codec."""
    sets = []
    for phase in range(phases):
        offset = 0.01 * (phase - (phases - 1) / 2)
        link = {"phases": phases, "phase_index": phase}
        for codec, rtt in (("json", 300e-6), ("protobuf", 240e-6)):
            messages = [rtt * rtt_factor * math.exp(offset) * r for r in ROUNDS]
            sets.append(LinkSet(codec, "rtt", "s", LINK | link, messages, phase))
            rate = [3000.0 * capacity_factor * math.exp(offset)]
            sets.append(LinkSet(codec, "capacity_msgs", "messages/s", CAPACITY | link, rate, phase))
    for codec in CODECS:
        params = {"phase": "link", "kind": "periodic", "interval_s": 0.1, "throttled": False}
        values = [cpu * r for r in ROUNDS]
        sets.append(SampleSet("telemetry", "seed", codec, "agent_cpu", "percent", params, values))
    return sets


def write_run(directory: Path, sets: list[SampleSet], **platform: str) -> Path:
    writer = results.RunWriter(directory, directory.name)
    writer.write_manifest({"platform": {"board": "rig", **platform}, "status": "complete"})
    writer.add(sets)
    writer.finish(complete=True)
    return directory


def run_compare(capsys, *argv: str, code: int | None) -> tuple[str, str]:
    """`evbench compare ARGV` in process: its output and error; it must exit with `code`."""
    done = evbench(["compare", *map(str, argv)])
    out, err = capsys.readouterr()
    assert code is None or done == code, out + err
    return out, err


def table_rows(out: str) -> dict[tuple[str, str, str], list[str]]:
    """The change table's rows: (suite, codec, metric) -> cells."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 8 and cells[0] in ("codec", "link"):
            rows[(cells[0], cells[2], cells[3])] = cells
    return rows


def _with_params(sets: list[SampleSet], **params) -> list[SampleSet]:
    return [dataclasses.replace(s, params={**s.params, **params}) for s in sets]


def test_a_codec_20_pct_slower_is_unconfirmed_or_beyond_max_change_or_criteria(tmp_path, capsys):
    base = write_run(tmp_path / "a", codec_sets())
    slow = write_run(tmp_path / "b", codec_sets(slower={"json": 1.2}))  # every process
    # the processes of one run share its night: 2 nights only
    out, _err = run_compare(capsys, "--baseline", base, slow, code=0)
    encode = table_rows(out)[("codec", "JSON", "Serialization")]
    assert encode[6:8] == ["+20.0%", "worse (not confirmed: 2 nights)"]
    assert "not confirmed: 2 nights: two runs cannot tell a change" in out
    junit = tmp_path / "junit.xml"
    out, err = run_compare(
        capsys, "--baseline", base, slow, "--junit", junit, "--max-change", "10", code=3
    )
    for operation in OPERATIONS:  # every timed json row, none of protobuf's (unchanged)
        assert (
            f"codec/seed/json/{operation} changed +20.0% (x1.2) against the baseline, "
            "beyond --max-change 10% (x1.1 or x0.909)"  # 1 / 1.1 = 0.90909...
        ) in err
    assert "codec/seed/protobuf" not in err
    # Family (codec, seed): 6 timed rows; the smallest raw p is 2 / C(20, 10) for each
    # json row, so Holm's first step gives 6 times it.
    assert f"p (Holm) {6 * 2 / math.comb(20, 10):.2g}" in err
    rows = table_rows(out)
    encode = rows[("codec", "JSON", "Serialization")]
    assert encode[6:8] == ["+20.0%", "REGRESSION"]
    assert encode[10] == "10 processes per run"
    assert rows[("codec", "Protobuf", "Serialization")][6] == "+0.0%"
    assert rows[("codec", "Protobuf", "Serialization")][7] in (EQUAL, UNDECIDED)
    assert rows[("codec", "JSON", "Size")][7] == "fact"  # sizes equal: no regression
    # one failing case per regressed record of the newer run
    assert junit.read_text().count("<failure ") == 3
    # criteria thresholds apply to the new rows
    limits = tmp_path / "criteria.json"
    limits.write_text('{"metrics": {"seed/json/encode": 30, "decode": 25}}')
    out, err = run_compare(
        capsys, "--baseline", base, slow, "--criteria", limits, "--max-change", "10", code=3
    )
    assert "codec/seed/json/decode_access changed" in err  # default 5 %
    assert "json/encode changed" not in err and "json/decode changed" not in err
    rows = table_rows(out)
    assert rows[("codec", "JSON", "Serialization")][7] == "worse (not confirmed: 2 nights)"
    assert rows[("codec", "JSON", "Serialization")][-1] == "30%"
    # the same thresholds, read through the module, decide the same way
    contexts = [load_context(base), load_context(slow)]
    assert len(compare.compare(contexts, criteria.load(limits), True, 10.0).regressions) == 1


def test_the_verdict_counts_processes_holds_the_ratio_and_same_data_rarely_name_a_winner():
    pair = comparison.compare_runs(codec_sets(), codec_sets(slower={"json": 1.2}), "A", "B")
    timed = {(r.baseline.codec, r.identity.metric): r for r in pair.rows if r.verdict is not None}
    assert len(timed) == 6 and set(pair.families) == {"codec seed"}
    for operation in OPERATIONS:
        row = timed[("json", operation)]
        assert row.baseline.codec == row.candidate.codec == "json"
        assert row.outcome == BASELINE  # the baseline run is the better one
        assert row.n == 10 and row.n_counts == "processes per run"
        assert row.verdict.p_value == pytest.approx(2 / math.comb(20, 10))
        assert row.verdict.ratio == pytest.approx(1.2, rel=1e-12)
        # The interval's ends are pairwise ratios 1.2 * exp(o_j - o_i): within the spread.
        assert 1.2 * math.exp(-0.1) <= row.verdict.ratio_low < 1.2 < row.verdict.ratio_high
        assert row.verdict.ratio_high <= 1.2 * math.exp(0.1) + 1e-12
        assert timed[("protobuf", operation)].outcome in (EQUAL, UNDECIDED)
    # Each run draws its own process centres. The family-wise false-winner count over 40
    # run pairs stays within a 5 % level (P(X >= 6) = 0.05 under Binomial(40, 0.05)).
    false_pairs = 0
    for seed in range(40):
        rng = random.Random(seed)
        a = codec_sets(offsets=[rng.gauss(0, 0.05) for _ in OFFSETS])
        b = codec_sets(offsets=[rng.gauss(0, 0.05) for _ in OFFSETS])
        false_pairs += bool(comparison.compare_runs(a, b).winners())
    assert false_pairs <= 5


def test_same_rows_name_no_winner_telemetry_is_context_and_outcomes_do_not_split(tmp_path, capsys):
    run = write_run(tmp_path / "a", codec_sets() + link_sets(7, cpu=2.0))
    busy = write_run(tmp_path / "b", codec_sets() + link_sets(7, cpu=4.0))  # all else alike
    out, err = run_compare(capsys, "--baseline", run, busy, code=0)
    assert "| REGRESSION" not in out and "regressed" not in err
    changes = {cells[7] for cells in table_rows(out).values()}
    assert changes <= {EQUAL, UNDECIDED, "fact"} and "fact" in changes
    context = out.split("Context (not tested)")[1]
    assert "Agent CPU" in context and "4.0 %" in context and "2.0 %" in context
    assert not any("Agent CPU" in cells[3] for cells in table_rows(out).values())
    pair = comparison.compare_runs(link_sets(7, cpu=2.0), link_sets(7, cpu=4.0))
    cpu = [r for r in pair.rows if r.identity.metric == "agent_cpu"]
    assert len(cpu) == 2 and all(r.verdict is None and r.family is None for r in cpu)
    # Outcome params do not split rows, and other identities are never pooled.
    base = write_run(tmp_path / "outcomes" / "a", codec_sets(loops=16))
    # loops differ (an outcome): same rows. The encode plan differs (payloads, identity):
    # encode is a different measurement in each run, so neither run's encode is compared.
    other = write_run(tmp_path / "outcomes" / "b", codec_sets(loops=64, payloads={"encode": 40}))
    out, _err = run_compare(capsys, base, other, code=0)
    rows = table_rows(out)
    metrics = sorted({metric for (_suite, _codec, metric) in rows})
    assert metrics == ["Deserialization", "Deserialization + access", "Size"]
    assert len(rows) == 2 * 3  # per codec: decode, decode + access, size; once each
    block = out.split("not comparable (4 rows, each not in every run):\n")[1]
    left_out = block.split("\n\n")[0].strip().splitlines()
    # each run's encode: two identities per codec, each in one run only, one a line
    assert [line.strip() for line in left_out] == [
        f"codec/seed/{codec}/encode [Serialization (payloads={mine})] in {run} (rig) only; "
        f"{other} (rig): settings differ (payloads {mine} vs {theirs})"
        for codec in ("json", "protobuf")
        for run, other, mine, theirs in (("A", "B", 20, 40), ("B", "A", 40, 20))
    ]
    # In-process: the pair's rows carry the loops of neither run as a split.
    pair = comparison.compare_runs(codec_sets(loops=16), codec_sets(loops=64))
    assert len(pair.rows) == 2 * 4 and pair.left_out == ()


def test_rows_count_phases_too_few_never_regress_even_doubled_nor_a_185_pct_gain(tmp_path, capsys):
    # Seven phases per run: best p 2 / C(14, 7); family (link, seed) has 4 tested rows.
    pair = comparison.compare_runs(link_sets(7), link_sets(7, rtt_factor=1.2))
    rtt = {r.baseline.codec: r for r in pair.rows if r.identity.metric == "rtt"}
    for row in rtt.values():
        assert row.n == 7 and row.n_counts == "phases per run"
        assert row.outcome == BASELINE
        assert row.verdict.p_value == pytest.approx(2 / math.comb(14, 7))
        assert row.verdict.ratio == pytest.approx(1.2, rel=1e-12)
    # Three phases per run: best p 2 / C(6, 3) = 0.1 > 0.05, whatever the data.
    base = write_run(tmp_path / "a", link_sets(3))
    slow = write_run(tmp_path / "b", link_sets(3, rtt_factor=1.3))  # within --max-change
    out, _err = run_compare(capsys, "--baseline", base, slow, code=0)
    rtt_cells = table_rows(out)[("link", "JSON", "RTT, encode to decoded reply")]
    assert rtt_cells[6:8] == ["+30.0%", "n too small"]
    assert rtt_cells[11] == "none reachable"
    assert "not called (n too small, so no regression): link/seed/json/rtt" in out
    few = comparison.compare_runs(link_sets(3), link_sets(3, rtt_factor=1.5))
    assert {r.outcome for r in few.rows if r.verdict} == {TOO_SMALL}

    # core-v1 has 2 processes per run: best p 2 / C(4, 2) = 1/3 > 0.05, so no interval.
    # json's encode doubled is +100 %, beyond --max-change 50 % by its estimate alone.
    slow = tmp_path / "slow"
    shutil.copytree(CORE_V1, slow)
    lines = []
    for line in (slow / results.SAMPLES).read_text().splitlines():
        found = json.loads(line)
        if (found["codec"], found["metric"]) == ("json", "encode"):
            found["values"] = [2 * value for value in found["values"]]
        lines.append(json.dumps(found) + "\n")
    (slow / results.SAMPLES).write_text("".join(lines))
    results.write_checksums(slow)
    out, err = run_compare(capsys, "--no-history", CORE_V1, slow, code=0)
    cells = table_rows(out)[("codec", "JSON", "Serialization")]
    assert cells[6:9] == ["+100.0%", TOO_SMALL, "1"], cells  # not "REGRESSION"
    assert "not called (n too small, so no regression): codec/seed/json/encode" in out
    assert "regressed" not in err
    # Capacity is higher-is-better (it once read REGRESSION): every phase carries 2.85 times
    # the baseline's messages a second, +185 % by construction, which fails --max-change
    # 50 % all the same, said as a change that improved.
    base = write_run(tmp_path / "capacity" / "a", link_sets(10))
    gain = write_run(tmp_path / "capacity" / "b", link_sets(10, capacity_factor=2.85))
    out, err = run_compare(capsys, "--baseline", base, gain, code=3)
    rows = [cells for (_s, _c, metric), cells in table_rows(out).items() if "Capacity" in metric]
    assert len(rows) == 2, out  # json's and protobuf's
    for cells in rows:
        assert "+185.0%" in cells and "REGRESSION" not in "|".join(cells), cells
        assert any(cell.startswith("better") for cell in cells), cells
    assert "improved beyond --max-change" in err and "regressed" not in err, err


def test_a_fact_that_grew_regresses_no_samples_or_no_comparable_row_is_refused(tmp_path, capsys):
    base = write_run(tmp_path / "a", codec_sets())
    bigger = write_run(tmp_path / "b", codec_sets(slower={"protobuf-size": 1.1}))
    _out, err = run_compare(capsys, "--baseline", base, bigger, code=3)
    # mean size 309.5 -> 339.5 (every payload 30 B larger): +9.7 %
    assert "codec/seed/protobuf/size regressed +9.7%" in err
    assert "exact figure, not tested" in err
    empty = tmp_path / "c"  # a run without raw samples
    empty.mkdir()
    (empty / "summary.json").write_bytes((base / "summary.json").read_bytes())
    _out, err = run_compare(capsys, base, empty, code=2)
    assert "holds no raw samples" in err
    # rows whose payloads differ are listed, and nothing comparable is exit 2
    base = write_run(
        tmp_path / "payloads" / "a", _with_params(codec_sets(), payload_digest="a" * 16)
    )
    other = write_run(
        tmp_path / "payloads" / "b", _with_params(codec_sets(), payload_digest="b" * 16)
    )
    out, err = run_compare(capsys, "--baseline", base, other, code=2)
    assert "no tested row can be compared between these runs" in err
    lines = out.split("not comparable (16 rows, each not in every run):\n")[1].splitlines()
    assert len([line for line in lines if line.endswith("payloads differ")]) == 16


def test_timed_rows_compare_across_plans_10x_fails_naming_the_environment(tmp_path, capsys):
    # Baseline: 10 processes x 5 values; later: a quick-like 5 x 3 plan, json 10x slower.
    base = write_run(tmp_path / "a", codec_sets())
    quick = codec_sets(slower={"json": 10.0}, offsets=QUICK_OFFSETS)
    quick = write_run(tmp_path / "b", _with_params(quick, values=3))
    out, err = run_compare(capsys, "--baseline", base, quick, code=3)  # 10x never passes
    for operation in OPERATIONS:
        assert f"codec/seed/json/{operation} changed +900.0% (x10) against the baseline" in err
    rows = table_rows(out)
    # Protobuf's rows were compared across the plans: a verdict, not "not comparable".
    assert rows[("codec", "Protobuf", "Serialization")][7] in (EQUAL, UNDECIDED)
    assert rows[("codec", "JSON", "Serialization")][10] == "5 processes per run"
    # Without --baseline too: a side-by-side never passes a 10x change.
    _out, err = run_compare(capsys, base, quick, code=3)
    assert "beyond --max-change 50%" in err

    def run(directory: Path, backend: str, slower: float) -> Path:
        cpu, phase = ([51.0] if slower == 1 else [100.0]), {"phase": "codec"}
        telemetry = SampleSet("telemetry", "seed", None, "cpu_util", "percent", phase, cpu)
        sets = [*codec_sets(slower={"protobuf": slower}), telemetry]
        return write_run(directory, sets, protobuf="6.31.1", protobuf_backend=backend)

    base, pure = (
        run(tmp_path / "environment" / "a", "upb", 1.0),
        run(tmp_path / "environment" / "b", "python", 135.0),
    )
    out, err = run_compare(capsys, "--baseline", base, pure, code=3)
    assert "protobuf backend: upb -> python" in out and "protobuf backend: upb -> python" in err
    assert "telemetry/seed/-/cpu_util[phase=codec] (percent): 51 -> 100" in out


def _rms(factors: list[float]) -> float:
    steps = [math.log(b / a) for a, b in itertools.pairwise(factors)]
    return math.sqrt(sum(d * d for d in steps) / len(steps))


def test_student_t_tail_and_the_spread_of_alternating_nights_worked_by_hand():
    # df = 2 has a closed form: P(T > t) = (1 - t / sqrt(t^2 + 2)) / 2.
    for t in (0.0, 0.5, 1.0, 2.5, 8.0):
        assert math.isclose(student_t_sf(t, 2), (1 - t / math.sqrt(t * t + 2)) / 2, rel_tol=1e-12)
    for df, t in itertools.product((1, 3, 4, 7, 12, 30), (0.1, 1.0, 2.0, 3.3, 6.0, 20.0)):
        assert math.isclose(student_t_sf(t, df), scipy_stats.t.sf(t, df), rel_tol=1e-9)
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
    stored(tmp_path / "store.sqlite", directories)
    candidate = night(runs, len(factors) + 1, **later)
    return str(tmp_path / "store.sqlite"), directories[-1], candidate


def test_a_real_step_is_confirmed_by_the_history_not_a_move_within_its_spread(tmp_path, capsys):
    # protobuf 25 % slower in the candidate, json unchanged (same factor as the baseline).
    slower = {"factor": NOISE[-1], "codec_factors": {"protobuf": 1.25}}
    store, baseline, candidate = _nights(tmp_path, NOISE, **slower)
    out, err = run_compare(capsys, "--baseline", baseline, candidate, "--history", store, code=3)
    # The history is nights 1..11 (the baseline is one of the compared runs): 10 steps,
    # floor(20 / 3) = 6 degrees of freedom; the three protobuf rows and three json rows
    # (p 1) are tested together, so Holm multiplies the protobuf rows' p by 6.
    p = 2 * scipy_stats.t.sf(math.log(1.25) / _rms(NOISE[:11]), 6)
    said = f"confirmed against 11 nights of this board's history (p (Holm) {6 * p:.2g})"
    assert err.count(said) == 3, err
    for operation in ("encode", "decode", "decode_access"):
        assert f"codec/seed/protobuf/{operation} changed +25.0%" in err
    assert "json/encode" not in err
    # The sample run has 2 processes a run: alone, the runs could name nothing.
    assert "not called" not in out
    assert out.count("| REGRESSION ") == 3
    # Every codec 3 % slower than the baseline night: the history says nights move that much.
    store, baseline, candidate = _nights(tmp_path / "a", NOISE, factor=1.04)
    out, _err = run_compare(capsys, "--baseline", baseline, candidate, "--no-history", code=0)
    assert "history: not used (--no-history)" in out
    assert "nights)" not in out
    out, _err = run_compare(capsys, "--baseline", baseline, candidate, "--history", store, code=0)
    assert out.count("(not confirmed: 11 nights)") == 6  # json, protobuf x 3 operations
    p = 2 * scipy_stats.t.sf(math.log(1.04 / NOISE[-1]) / _rms(NOISE[:11]), 6)
    assert p > 0.05  # the hand-worked reason it is not confirmed, even before Holm
    # A short history confirms nothing, and another board's is not used.
    slower = {"factor": NOISE[3], "codec_factors": {"protobuf": 1.25}}
    store, baseline, candidate = _nights(tmp_path / "b", NOISE[:4], **slower)
    out, _err = run_compare(capsys, "--baseline", baseline, candidate, "--history", store, code=0)
    assert out.count("(not confirmed: 3 nights)") == 3
    other = night(tmp_path / "b" / "runs", 20, board="name:bench-2")
    out, _err = run_compare(capsys, "--baseline", baseline, other, "--history", store, code=None)
    assert "history: not used: the runs are of different boards" in out


@pytest.mark.parametrize(("p", "p_holm"), [(0.004, 0.012), (0.02, 0.06), (0.01, 0.01)])
def test_the_night_tests_interval_holds_1_exactly_when_its_p_does(p, p_holm):
    # 13 nights: 12 differences, floor(2 x 12 / 3) = 8 degrees of freedom. The spread s
    # makes |log r| / s the test's t; the interval is at the row's Holm step, level
    # 1 - 0.05 / k with k = p (Holm) / p.
    ratio = 1.08
    s = math.log(ratio) / scipy_stats.t.ppf(1 - p / 2, 8)
    reach = scipy_stats.t.ppf(1 - 0.05 / (2 * (p_holm / p)), 8) * s
    with mock.patch.object(Change, "difference", property(lambda _self: ratio - 1)):
        change = Change(None, p_nights=p_holm)  # type: ignore[arg-type]
        low, high = _night_interval(change, 13, p, p_holm)  # type: ignore[misc]
        assert low == pytest.approx(ratio * math.exp(-reach), rel=1e-6)
        assert high == pytest.approx(ratio * math.exp(reach), rel=1e-6)
        assert (low > 1) == (p_holm < 0.05)
        assert _p_cell(change).endswith(" (nights)")
