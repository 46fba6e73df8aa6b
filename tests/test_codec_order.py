"""No role bias in the codec suite (issue 43, item 5): what runs just before each sample.

In a round the codecs take their samples operation by operation, A B in even rounds
and B A in odd ones. The second sample of an operation followed the same operation,
warm; the first followed another operation, and came out about 1 % slower. A plan
whose recorded rounds put one codec first more often (the quick plan's 3 values after
one warm-up: B A, A B, B A) gave that codec the penalty: in A/A runs the copy, listed
second, was slower on most rows. Now each operation's first sample is primed by the
same operation of another codec, so every sample follows the same operation of
another codec. These tests read what the worker did from its own calls, not timings.
"""

from __future__ import annotations

from evbench_agent import codecs, payloads
from evbench_agent.suites import codec

CODECS = ("json", "json-aa")


def _task(**changes):
    task = {
        "suite": "codec",
        "profiles": ["seed"],
        "codecs": list(CODECS),
        "payloads": 20,
        "seed": 1,
        # No sample can fall short of 0 ns: no warm-up recalibrates, no sample is retaken,
        # so the calls are the plan's own.
        "min_time": 0.0,
        "cpu": None,
        "gc": True,
        "slowdown": {},
        "payload_digests": {"seed": {"payload_digest": "0123456789abcdef"}},
    }
    task.update(changes)
    return task


def _worker_calls(monkeypatch, codec_names=CODECS, values=3, warmups=1, worker=0):
    """A measuring worker's run: its calls of the timed operations in order, each as
    (round, codec, operation, sample?), a sample being a call that take_round_sample made."""
    calls: list[tuple[int, str, str, bool]] = []
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
        calls.append((now["round"], *operation.cell, now["sample"]))
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
    loops = {f"seed|{c}|{o}": 8 for c in codec_names for o in codec.OPERATIONS}
    result = codec.worker_main(
        _task(
            mode="measure",
            codecs=list(codec_names),
            worker=worker,
            loops=loops,
            values=values,
            warmups=warmups,
            params={},
        ),
        lambda _what: None,
    )
    for sample_set in result["sample_sets"]:
        assert len(sample_set["values"]) == values  # one sample per recorded round
    return calls


def test_every_recorded_sample_follows_the_same_operation_of_another_codec(monkeypatch):
    # The quick plan's shape (1 warm-up, 3 values): under the old order the first sample
    # of each operation followed the previous operation (A's decode after B's encode).
    calls = _worker_calls(monkeypatch, values=3, warmups=1)
    samples = 0
    for index, (round_number, name, operation, sample) in enumerate(calls):
        if not sample or round_number < 1:
            continue
        samples += 1
        _round, before_codec, before_operation, _sample = calls[index - 1]
        assert (before_operation, before_codec != name) == (operation, True), calls[index]
    assert samples == 3 * len(CODECS) * len(codec.OPERATIONS)


def test_each_codec_is_timed_first_and_second_alike_over_the_recorded_rounds(monkeypatch):
    # What precedes a sample is the same for both codecs in every recorded round,
    # whichever goes first: the predecessors of A's samples and of B's are one
    # multiset up to swapping the names, for an odd count of values as for an even.
    swap = {"json": "json-aa", "json-aa": "json"}
    for values in (3, 4):
        calls = _worker_calls(monkeypatch, values=values, warmups=1)
        before: dict[str, list[tuple[str, str, str]]] = {name: [] for name in CODECS}
        for index, (round_number, name, operation, sample) in enumerate(calls):
            if sample and round_number >= 1:
                _round, codec_before, operation_before, _sample = calls[index - 1]
                mirrored = swap[codec_before] if name == "json-aa" else codec_before
                before[name].append((operation, operation_before, mirrored))
        assert sorted(before["json"]) == sorted(before["json-aa"]), values


def test_three_codecs_each_sample_follows_the_same_operation(monkeypatch):
    calls = _worker_calls(monkeypatch, codec_names=("json", "protobuf", "json-aa"), values=3)
    for index, (round_number, name, operation, sample) in enumerate(calls):
        if sample and round_number >= 1:
            _round, codec_before, operation_before, _sample = calls[index - 1]
            assert operation_before == operation and codec_before != name, calls[index]


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
        for round_number, name, operation, sample in _worker_calls(monkeypatch, worker=worker):
            if sample and round_number >= 1 and (round_number, operation) not in seen:
                seen.add((round_number, operation))
                first[(name, operation)] = first.get((name, operation), 0) + 1
    assert first == {(name, op): 3 for name in CODECS for op in codec.OPERATIONS}
