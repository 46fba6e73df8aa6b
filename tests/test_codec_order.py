"""No role bias in the codec suite (issue 43, item 5): what runs just before each sample.

In a round the codecs take their samples operation by operation, A B in even rounds
and B A in odd ones. The first sample of an operation followed another operation and
came out about 1 % slower than the second, which followed the same operation, warm;
the quick plan's rounds (3 values after one warm-up: B A, A B, B A) gave that penalty
to the codec listed second, the A/A copy. Now each operation's first sample is primed
by the same operation of another codec. These tests read what the worker did from its
own calls, not timings; tests/test_codec_calibration.py uses the same recorder.
"""

from __future__ import annotations

import pytest

from evbench_agent import codecs, payloads
from evbench_agent.suites import codec

CODECS = ("json", "json-aa")


def worker_task(**changes):
    """A worker's task on the seed. With min_time 0 no sample can fall short: no warm-up
    recalibrates and no sample is retaken, so the calls are the plan's own."""
    task = {
        "suite": "codec", "profiles": ["seed"], "codecs": list(CODECS), "payloads": 20,
        "seed": 1, "min_time": 0.0, "cpu": None, "gc": True, "slowdown": {},
        # the manager's digest of each profile's payload set, which workers copy
        "payload_digests": {"seed": {"payload_digest": "0123456789abcdef"}},
    }  # fmt: skip
    return task | changes


def record_calls(monkeypatch) -> list[tuple[int, str, str, bool, float]]:
    """The worker's calls of its timed operations from now on, in order, each as (round,
    codec, operation, sample?, slowdown), a sample being a call take_round_sample made."""
    calls: list[tuple[int, str, str, bool, float]] = []
    real_prepare, real_time, real_take = codec._prepare, codec._time_loops, codec.take_round_sample
    now = {"round": -1, "sample": False}

    def tag(function, cell):
        def tagged(argument):
            return function(argument)

        tagged.cell = cell  # json and json-aa share json.loads itself: tell them apart here
        return tagged

    def prepare(task, profile, indices=None):
        return {
            name: {op: (tag(f, (name, op)), args) for op, (f, args) in operations.items()}
            for name, operations in real_prepare(task, profile, indices).items()
        }

    def time_loops(operation, argument, loops, slowdown=0.0):
        calls.append((now["round"], *operation.cell, now["sample"], slowdown))
        return real_time(operation, argument, loops, slowdown)

    def take(cell, round_number, warmups, min_ns, slowdown):
        now.update(round=round_number, sample=True)
        try:
            return real_take(cell, round_number, warmups, min_ns, slowdown)
        finally:
            now["sample"] = False

    monkeypatch.setattr(codec, "_prepare", prepare)
    monkeypatch.setattr(codec, "_time_loops", time_loops)
    monkeypatch.setattr(codec, "take_round_sample", take)
    return calls


def _measured(monkeypatch, codec_names=CODECS, values=3, worker=0):
    """The recorded rounds' samples of a measuring worker (one warm-up round), each with
    the call just before it: [(sample, before)]."""
    calls = record_calls(monkeypatch)
    loops = {f"seed|{c}|{o}": 8 for c in codec_names for o in codec.OPERATIONS}
    task = worker_task(codecs=list(codec_names), mode="measure", worker=worker, loops=loops)
    result = codec.worker_main(
        task | {"values": values, "warmups": 1, "params": {}}, lambda _what: None
    )
    for sample_set in result["sample_sets"]:
        assert len(sample_set["values"]) == values  # one sample per recorded round
    return [(call, calls[i - 1]) for i, call in enumerate(calls) if call[3] and call[0] >= 1]


@pytest.mark.parametrize("names", [CODECS, ("json", "protobuf", "json-aa")], ids=["a-a", "three"])
def test_every_recorded_sample_follows_the_same_operation_of_another_codec(monkeypatch, names):
    # The quick plan's shape (1 warm-up, 3 values): under the old order the first sample
    # of each operation followed the previous operation (A's decode after B's encode).
    found = _measured(monkeypatch, names)
    for (_, name, operation, *_), (_, codec_before, operation_before, *_) in found:
        assert (operation_before, codec_before != name) == (operation, True), (name, operation)
    assert len(found) == 3 * len(names) * len(codec.OPERATIONS)


@pytest.mark.parametrize("values", [3, 4])
def test_each_codec_is_timed_first_and_second_alike_over_the_recorded_rounds(monkeypatch, values):
    # What precedes a sample is the same for both codecs in every recorded round,
    # whichever goes first: the predecessors of A's samples and of B's are one
    # multiset up to swapping the names, for an odd count of values as for an even.
    swap = {"json": "json-aa", "json-aa": "json"}
    before: dict[str, list[tuple[str, str, str]]] = {name: [] for name in CODECS}
    for (_, name, operation, *_), (_, codec_before, operation_before, *_) in _measured(
        monkeypatch, values=values
    ):
        mirrored = swap[codec_before] if name == "json-aa" else codec_before
        before[name].append((operation, operation_before, mirrored))
    assert sorted(before["json"]) == sorted(before["json-aa"])


def test_the_prime_is_untimed_short_and_on_the_rounds_payload():
    steps = codec.round_steps([(c, o) for c in ("A", "B") for o in codec.OPERATIONS], 0)
    assert steps == [
        (("B", "encode"), ("A", "encode")),
        (None, ("B", "encode")),
        (("B", "decode"), ("A", "decode")),
        (None, ("B", "decode")),
        (("B", "decode_access"), ("A", "decode_access")),
        (None, ("B", "decode_access")),
    ]
    # One codec alone: nothing to pair, nothing primed.
    assert [primer for primer, _cell in codec.round_steps([("A", "encode")], 1)] == [None]


def test_the_copy_binds_the_originals_code_with_no_wrapper():
    # An A/A copy is the original under another name: its callables run the same code
    # (json's encode is a closure per binding, so the same code object; decode is
    # json.loads itself), so nothing but the order can favour either name.
    profile = payloads.get("seed")
    original, copy = (codecs.get(name).bind(profile) for name in CODECS)
    assert copy.encode.__code__ is original.encode.__code__
    assert copy.decode is original.decode
    assert copy.access is original.access


def test_over_a_pair_of_workers_each_codec_is_timed_first_in_half_the_recorded_rounds(
    monkeypatch,
):
    # With 3 values a worker cannot put each codec first equally often; the next worker
    # starts with the other codec, so over workers 0 and 1 (and every even count) each
    # operation's first sample is each codec's in 3 of the 6 recorded rounds.
    first: dict[tuple[str, str], int] = {}
    for worker in (0, 1):
        seen = set()
        for (round_number, name, operation, *_), _before in _measured(monkeypatch, worker=worker):
            if (round_number, operation) not in seen:
                seen.add((round_number, operation))
                first[(name, operation)] = first.get((name, operation), 0) + 1
    assert first == {(name, op): 3 for name in CODECS for op in codec.OPERATIONS}
