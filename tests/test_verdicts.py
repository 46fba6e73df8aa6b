"""Verdicts: a winner only when the difference is significant and large enough."""

from __future__ import annotations

import dataclasses
import random

import pytest

from evbench_agent import codecs
from evbench_agent.suites import codec as codec_suite
from evbench_agent.verdicts import HIGHER_IS_BETTER, LOWER_IS_BETTER, Question, decide


def _lognormal(rng: random.Random, scale: float, n: int = 40) -> list[float]:
    return [scale * rng.lognormvariate(0.0, 0.05) for _ in range(n)]


def test_a_clearly_slower_candidate_loses_and_a_faster_one_wins():
    rng = random.Random(1)
    base = _lognormal(rng, 1.0)
    slow, fast = _lognormal(rng, 1.5), _lognormal(rng, 0.5)
    slower, faster = decide(
        [
            Question("slow", LOWER_IS_BETTER, base, slow),
            Question("fast", LOWER_IS_BETTER, base, fast),
        ]
    )
    assert slower.winner == "baseline" and slower.pct_diff == pytest.approx(50, abs=8)
    assert faster.winner == "candidate" and faster.p_holm < 0.05


def test_higher_is_better_flips_the_winner():
    rng = random.Random(2)
    (verdict,) = decide(
        [Question("capacity", HIGHER_IS_BETTER, _lognormal(rng, 1.0), _lognormal(rng, 2.0))]
    )
    assert verdict.winner == "candidate"


def test_a_significant_but_tiny_difference_is_a_tie():
    rng = random.Random(3)
    base = [1.0 + rng.gauss(0, 0.0005) for _ in range(200)]
    cand = [1.01 + rng.gauss(0, 0.0005) for _ in range(200)]  # 1 %: below the 2 % minimum
    (verdict,) = decide([Question("tiny", LOWER_IS_BETTER, base, cand)])
    assert verdict.p_holm < 1e-6
    assert verdict.winner == "tie"


def test_the_same_distribution_is_a_tie():
    rng = random.Random(4)
    verdicts = decide(
        [
            Question(f"same {i}", LOWER_IS_BETTER, _lognormal(rng, 1.0), _lognormal(rng, 1.0))
            for i in range(10)
        ]
    )
    assert all(v.winner == "tie" for v in verdicts)


def test_holm_correction_spans_the_rows():
    rng = random.Random(5)
    many = [
        Question(f"row {i}", LOWER_IS_BETTER, _lognormal(rng, 1.0, 8), _lognormal(rng, 1.0, 8))
        for i in range(20)
    ]
    verdicts = decide(many)
    assert all(v.p_holm >= v.p_value for v in verdicts)


def _measure(monkeypatch, extra: dict[str, codecs.Codec], names: list[str]):
    """Run the real codec suite's calibration and measurement in this process."""
    for name, codec in extra.items():
        monkeypatch.setitem(codecs.CODECS, name, codec)
    task = {
        "suite": "codec",
        "profiles": ["seed"],
        "codecs": names,
        "payloads": 20,
        "seed": 1,
        "min_time": 0.001,
        "cpu": None,
        "gc": True,
    }
    loops = codec_suite.worker_main(dict(task, mode="calibrate"), lambda _: None)
    samples: dict[str, list[float]] = {}
    for worker in range(3):
        measured = codec_suite.worker_main(
            dict(task, mode="measure", worker=worker, loops=loops, values=8, warmups=1, params={}),
            lambda _: None,
        )
        for item in measured["sample_sets"]:
            if item["metric"] == "encode":
                samples.setdefault(item["codec"], []).extend(item["values"])
    return samples


def _slowed_json(module, profile):
    encode, decode = codecs.CODECS["json"]._bind(module, profile)

    def encode_three_times(value):
        encode(value)
        encode(value)
        return encode(value)

    return encode_three_times, decode


def test_a_deliberately_slowed_codec_loses_when_measured(monkeypatch):
    slowed = dataclasses.replace(codecs.CODECS["json"], name="json-slowed", _bind=_slowed_json)
    samples = _measure(monkeypatch, {"json-slowed": slowed}, ["json", "json-slowed"])
    (verdict,) = decide(
        [Question("encode", LOWER_IS_BETTER, samples["json"], samples["json-slowed"])]
    )
    assert verdict.winner == "baseline"
    assert verdict.pct_diff > 100


def test_json_against_itself_is_a_tie_when_measured(monkeypatch):
    again = dataclasses.replace(codecs.CODECS["json"], name="json-again")
    samples = _measure(monkeypatch, {"json-again": again}, ["json", "json-again"])
    (verdict,) = decide(
        [Question("encode", LOWER_IS_BETTER, samples["json"], samples["json-again"])]
    )
    assert verdict.winner == "tie"
