"""The codec comparison: one row per record identity, verdicts on replicates, on synthetic
runs with known answers (a 10 % slower arm, a 20 % faster RTT, identical arms); the
committed core-v1 run still compares."""

import dataclasses
import json
import math
import random
from pathlib import Path

import pytest

from evbench_core import comparison, results
from evbench_core.analysis import identity
from evbench_core.analysis.identity import CONTEXT, FACT, TESTED
from evbench_core.analysis.verdicts import BASELINE, CANDIDATE, EQUAL, TOO_SMALL, UNDECIDED
from evbench_core.results import SampleSet

CORE_V1 = Path(__file__).parent / "data" / "runs" / "core-v1"
PLAN = {"processes": 10, "values": 10, "warmups": 1, "payloads": 20, "seed": 1}


def _codec_run(rng: random.Random, slowdown: float, processes: int = 10) -> list[SampleSet]:
    """Codec-suite samples: per process, one value per round per codec, loops differing."""
    sets = []
    for worker in range(processes):
        process_offset = rng.gauss(0, 0.05)  # shared by both codecs in this process
        for operation, seconds in (("encode", 50e-6), ("decode", 30e-6), ("decode_access", 40e-6)):
            drift = [rng.gauss(0, 0.02) for _ in range(10)]  # shared by both codecs per round
            for codec, factor, loops in (("json", 1.0, 16), ("json-slow", slowdown, 32)):
                noise = [math.exp(process_offset + d + rng.gauss(0, 0.005)) for d in drift]
                values = [seconds * factor * n for n in noise]
                run = dict(PLAN, loops=loops)
                sets.append(SampleSet("codec", "seed", codec, operation, "s", run, values, worker))
    for codec, size in (("json", 300), ("json-slow", 300)):
        sizes = [size + i for i in range(20)]
        sets.append(SampleSet("codec", "seed", codec, "size", "bytes", {"payloads": 20}, sizes))
    return sets


def test_ten_percent_slower_loses_every_timed_row_too_few_say_n_too_small_and_a_a_ties():
    result = comparison.compare(_codec_run(random.Random(1), 1.10), "json", "json-slow")
    timed = [row for row in result.rows if row.role == TESTED]
    assert [row.identity.metric for row in timed] == ["encode", "decode", "decode_access"]
    for row in timed:
        assert row.outcome == BASELINE and row.family == "codec seed"
        assert row.n == 10 and row.n_counts == "processes"
        assert row.verdict.ratio_low < 1.10 < row.verdict.ratio_high
        assert row.min_detectable is not None and row.min_detectable < 0.10
    assert set(result.families) == {"codec seed"} and len(result.families["codec seed"]) == 3
    (size,) = result.by_role(FACT)
    assert size.verdict is None and size.fact_difference == 0.0
    # too few processes say n too small
    result = comparison.compare(_codec_run(random.Random(3), 1.5, processes=5), "json", "json-slow")
    assert {row.outcome for row in result.by_role(TESTED)} == {TOO_SMALL}
    assert all(row.too_small and row.min_detectable is None for row in result.by_role(TESTED))
    # No difference: the family-wise false-winner count over 40 synthetic runs stays within
    # a 5 % level (P(X >= 6) = 0.05 under Binomial(40, 0.05)).
    runs = (_codec_run(random.Random(seed), 1.0) for seed in range(40))
    assert sum(bool(comparison.compare(run, "json", "json-slow").winners()) for run in runs) <= 5


def test_loops_do_not_split_rows_a_plan_change_does_and_a_process_pairs_its_rounds():
    sets = _codec_run(random.Random(2), 1.0)
    result = comparison.compare(sets, "json", "json-slow")
    assert len({row.identity for row in result.rows}) == len(result.rows) == 4
    assert result.unmatched == ()
    changed = [
        dataclasses.replace(s, params=dict(s.params, payloads=40))
        if s.codec == "json-slow" and s.metric == "encode"
        else s
        for s in sets
    ]
    result = comparison.compare(changed, "json", "json-slow")
    assert "encode" not in [row.identity.metric for row in result.rows]
    assert {k.metric for k in result.unmatched} == {"encode"}
    # Hand-worked: rounds (1, 2), (2, 2), (4, 2): log-ratios log 2, 0, log 0.5 -> median 0.
    assert comparison.process_log_ratio([1.0, 2.0, 4.0], [2.0, 2.0, 2.0]) == 0.0
    # Unequal counts fall back to the ratio of medians: 3 / 1.5.
    assert comparison.process_log_ratio([1.0, 1.5, 2.0], [3.0, 3.0]) == pytest.approx(math.log(2))


LINK_PERIODIC = {"peer": "loopback", "mode": "ack", "phases": 7, "rate_hz": 20.0, "count": 20}
LINK_CAPACITY = {"peer": "loopback", "mode": "ack", "phases": 7, "window": 8, "duration_s": 1.0}


def _link_run(rng: random.Random) -> list[SampleSet]:
    """Seven phases per codec; protobuf's RTT 20 % lower; telemetry per phase kind."""
    sets = []
    for phase in range(7):
        for codec, rtt in (("json", 300e-6), ("protobuf", 240e-6)):
            messages = [rtt * math.exp(rng.gauss(0, 0.05)) for _ in range(20)]
            bandwidth = 6000.0 if codec == "json" else 2000.0
            capacity = 3000.0 * math.exp(rng.gauss(0, 0.02))
            for metric, unit, params, values in [
                ("rtt", "s", LINK_PERIODIC, messages),
                ("lost", "messages", LINK_PERIODIC, [0.0]),
                ("bandwidth_payload", "bytes/s", LINK_PERIODIC, [bandwidth]),
                ("capacity_msgs", "messages/s", LINK_CAPACITY, [capacity]),
            ]:
                sets.append(SampleSet("link", "seed", codec, metric, unit, params, values, phase))
    for codec in ("json", "protobuf"):
        for kind, cpu in (("periodic", 2.0), ("capacity", 90.0)):
            params = {"phase": "link", "kind": kind, "interval_s": 0.1, "throttled": False}
            values = [cpu + rng.gauss(0, 0.2) for _ in range(30)]
            cpu_set = SampleSet("telemetry", "seed", codec, "agent_cpu", "percent", params, values)
            sets.append(cpu_set)
    # the codec suite's interleaved block: every codec at once, codec None
    block = {"phase": "codec", "interval_s": 0.1, "throttled": False}
    sets.append(SampleSet("telemetry", "seed", None, "agent_cpu", "percent", block, [50.0] * 5))
    return sets


def test_link_rows_are_one_identity_and_record_each_telemetry_is_context_core_v1_too(tmp_path):
    writer = results.RunWriter(tmp_path / "run", "test-run")
    writer.write_manifest({})
    writer.add(_link_run(random.Random(4)))
    records = writer.finish(complete=True)
    result = comparison.compare_run(results.load_run(tmp_path / "run"), "json", "protobuf")
    for row in result.rows:  # each row exactly one summary record of each codec
        matching = [r for r in records if identity.of_record(r) == row.identity]
        assert sorted(r["codec"] for r in matching) == ["json", "protobuf"], row.label
    by_label = {row.label: row for row in result.rows}
    assert len(by_label) == len(result.rows)  # labels tell every row apart
    rtt = next(row for row in result.rows if row.identity.metric == "rtt")
    assert rtt.role == TESTED and rtt.outcome == CANDIDATE
    assert rtt.n == 7 and rtt.n_counts == "phase pairs"  # phase i of json with phase i
    # RTT at 20 Hz is judged on the difference against 50 µs (0.1 % of the period)
    assert rtt.verdict.scale == "difference" and rtt.verdict.diff_high < -50e-6
    capacity = next(row for row in result.rows if row.identity.metric == "capacity_msgs")
    assert capacity.outcome in (EQUAL, UNDECIDED) and capacity.family == rtt.family == "link seed"
    cpu_rows = [row for row in result.rows if row.identity.metric == "agent_cpu"]
    assert len(cpu_rows) == 2  # periodic and capacity: never pooled
    for row in cpu_rows:
        assert row.role == CONTEXT and row.verdict is None and row.family is None
    periodic = next(r for r in cpu_rows if r.identity.params_dict["kind"] == "periodic")
    assert periodic.baseline.summary.median == pytest.approx(2.0, abs=0.2)
    assert "periodic" in periodic.label
    bandwidth = next(r for r in result.rows if r.identity.metric == "bandwidth_payload")
    assert bandwidth.role == FACT and bandwidth.fact_difference == pytest.approx(-2 / 3)
    lost = next(r for r in result.rows if r.identity.metric == "lost")
    assert lost.role == CONTEXT and lost.verdict is None
    # only TESTED rows are in a family, and only two: the link rows, Holm-corrected together
    assert {row.label for row in result.families["link seed"]} == {rtt.label, capacity.label}
    # the committed core-v1 run still compares
    result = comparison.compare_run(results.load_run(CORE_V1), "json", "protobuf")
    items = map(json.loads, (CORE_V1 / "samples.jsonl").read_text().splitlines())
    sizes = {item["codec"]: sum(item["values"]) for item in items if item["metric"] == "size"}
    size = next(row for row in result.rows if row.identity.metric == "size")
    assert size.role == FACT
    # same payloads for both codecs: the relative difference of the totals
    assert size.fact_difference == pytest.approx(sizes["protobuf"] / sizes["json"] - 1)
    timed = result.by_role(TESTED)
    assert [row.identity.metric for row in timed] == ["encode", "decode", "decode_access"]
    # the quick plan of that run had 2 worker processes: no verdict is reachable
    assert all(row.n == 2 and row.outcome == TOO_SMALL for row in timed)
