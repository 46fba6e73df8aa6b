"""The codec suite's rounds: their order, the calibration, the A/A copy's slowdown. No role
bias: samples go operation by operation, A B in even rounds and B A in odd ones, each
operation's first sample primed by the same operation of another codec (unprimed, it came
out about 1 % slower). Order is read from the worker's own calls; timed parts use a spin of
known cost or a clock that moves by the operations' stated costs alone."""

import time
from types import SimpleNamespace

import pytest

from evbench_agent.suites import codec

CODECS = ("json", "json-aa")
MIN_TIME = 0.0004  # seconds: short, so the tests are quick


def worker_task(**changes):
    """A worker's task on the seed; min_time 0: no recalibration or retake, the plan's calls."""
    task = {
        "suite": "codec", "profiles": ["seed"], "codecs": list(CODECS), "payloads": 20,
        "seed": 1, "min_time": 0.0, "cpu": None, "gc": True, "slowdown": {},
        # the manager's digest of each profile's payload set, which workers copy
        "payload_digests": {"seed": {"payload_digest": "0123456789abcdef"}},
    }  # fmt: skip
    return task | changes


def run_worker(task: dict) -> dict:  # its progress messages dropped
    return codec.worker_main(task, lambda _what: None)


def record_calls(monkeypatch, cost_ns: int = 0) -> list[tuple[int, str, str, bool, float]]:
    """The worker's timed calls from now on as (round, codec, operation, sample?, slowdown),
    a sample being take_round_sample's; with `cost_ns` the clock moves that much a call only."""
    calls: list[tuple[int, str, str, bool, float]] = []
    real_prepare, real_time, real_take = codec._prepare, codec._time_loops, codec.take_round_sample
    now = {"round": -1, "sample": False, "clock": 0}
    if cost_ns:
        fake = {"perf_counter_ns": lambda: now["clock"], "monotonic_ns": time.monotonic_ns}
        monkeypatch.setattr(codec, "time", SimpleNamespace(**fake))

    def tag(function, cell):
        def tagged(argument):
            now["clock"] += cost_ns
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

    for name, function in (("_prepare", prepare), ("_time_loops", time_loops)):
        monkeypatch.setattr(codec, name, function)
    monkeypatch.setattr(codec, "take_round_sample", take)
    return calls


def _measured(monkeypatch, codec_names=CODECS, values=3, worker=0):
    """A measuring worker's recorded samples (one warm-up round): [(sample, call before)]."""
    calls = record_calls(monkeypatch)
    loops = {f"seed|{c}|{o}": 8 for c in codec_names for o in codec.OPERATIONS}
    task = worker_task(codecs=list(codec_names), mode="measure", worker=worker, loops=loops)
    result = run_worker(task | {"values": values, "warmups": 1, "params": {}})
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


def test_each_codec_is_timed_first_and_second_alike_and_first_in_half_over_two_workers(
    monkeypatch,
):
    found = {}
    for values, worker in [(3, 0), (4, 0), (3, 1)]:
        with monkeypatch.context() as patch:
            found[values, worker] = _measured(patch, values=values, worker=worker)
    # What precedes A's samples and B's is one multiset up to swapping the names, for
    # an odd count of values as for an even.
    swap = {"json": "json-aa", "json-aa": "json"}
    for values in (3, 4):
        before: dict[str, list[tuple[str, str, str]]] = {name: [] for name in CODECS}
        for (_, name, operation, *_), (_, codec_before, operation_before, *_) in found[values, 0]:
            mirrored = swap[codec_before] if name == "json-aa" else codec_before
            before[name].append((operation, operation_before, mirrored))
        assert sorted(before["json"]) == sorted(before["json-aa"]), values
    # With 3 values a worker cannot put each codec first equally often; the next worker
    # starts with the other codec, so over workers 0 and 1 (and every even count) each
    # operation's first sample is each codec's in 3 of the 6 recorded rounds.
    first: dict[tuple[str, str], int] = {}
    for worker in (0, 1):
        seen = set()
        for (round_number, name, operation, *_), _before in found[3, worker]:
            if (round_number, operation) not in seen:
                seen.add((round_number, operation))
                first[(name, operation)] = first.get((name, operation), 0) + 1
    assert first == {(name, op): 3 for name in CODECS for op in codec.OPERATIONS}


def test_rounds_go_op_by_op_a_b_then_b_a_primed_untimed_mirrored_and_take_the_next_payload():
    cells = [("json", "encode"), ("json", "decode"), ("protobuf", "encode"), ("protobuf", "decode")]
    assert codec.round_order(cells, 0) == [
        ("json", "encode"), ("protobuf", "encode"), ("json", "decode"), ("protobuf", "decode")
    ]  # fmt: skip
    assert codec.round_order(cells, 1) == [
        ("protobuf", "encode"), ("json", "encode"), ("protobuf", "decode"), ("json", "decode")
    ]  # fmt: skip
    assert codec.round_order(cells, 2) == codec.round_order(cells, 0)
    # The prime (untimed, on the round's payload) runs the operation of the codec timed
    # last in it; one codec alone has nothing to pair, nothing primed.
    steps = codec.round_steps([(c, o) for c in ("A", "B") for o in codec.OPERATIONS], 0)
    assert steps == [
        (("B", "encode"), ("A", "encode")),
        (None, ("B", "encode")),
        (("B", "decode"), ("A", "decode")),
        (None, ("B", "decode")),
        (("B", "decode_access"), ("A", "decode_access")),
        (None, ("B", "decode_access")),
    ]
    assert [primer for primer, _cell in codec.round_steps([("A", "encode")], 1)] == [None]
    # Each round of a worker takes the next payload, worker after worker: 3 rounds per
    # worker over 5 payloads, worker 0 takes 0 1 2, worker 1 takes 3 4 0.
    assert codec.round_payloads(0, 3, 5) == [0, 1, 2]
    assert codec.round_payloads(1, 3, 5) == [3, 4, 0]
    # An A/A pair is the same code under two names, so any carry-over from the cell
    # before must hit both arms alike: swapping A <-> B turns A's predecessors into B's.
    # The order repeats every two rounds, so two rounds taken as a cycle hold every case.
    cells = [(c, o) for c in ("A", "B") for o in ("encode", "decode", "decode_access")]
    sequence = codec.round_order(cells, 0) + codec.round_order(cells, 1)
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for index, cell in enumerate(sequence):
        found.setdefault(cell, []).append(sequence[index - 1])
    swap = {"A": "B", "B": "A"}
    for operation in ("encode", "decode", "decode_access"):
        mirrored = sorted((swap[c], o) for c, o in found[("A", operation)])
        assert mirrored == sorted(found[("B", operation)]), operation


def test_loops_are_timed_with_the_slowdown_and_calibration_covers_min_time_with_margin(monkeypatch):
    def spin(microseconds: float) -> None:  # takes at least `microseconds`, never less
        until = time.perf_counter_ns() + microseconds * 1000
        while time.perf_counter_ns() < until:
            pass

    # 10 calls of >= 100 us: >= 1 ms plain, >= 1.5 ms with the copy's 50 % slowdown.
    assert codec._time_loops(spin, 100, 10) >= 1_000_000
    assert codec._time_loops(spin, 100, 10, slowdown=0.5) >= 1_500_000

    class HarnessTimed:  # native.codec.NativeOperation's shape: calling it runs one loop
        def __init__(self) -> None:
            self.calls: list[object] = []

        def time_loops(self, argument: object, loops: int) -> int:
            return 7_000 * loops  # what the harness says its loops took

        def __call__(self, argument: object) -> int:
            self.calls.append(argument)
            return self.time_loops(argument, 1)

    operation = HarnessTimed()
    assert codec._time_loops(operation, "payload", 1_000) == 7_000_000
    assert operation.calls == []  # never timed through Python calls, one round trip each
    # calibration takes the fastest payload and covers min_time with the margin
    # An operation whose argument is its cost in ns on a clock that moves by those costs
    # alone: a preempted call (a loaded machine) cannot change what calibration sees.
    now = [0]
    monkeypatch.setattr(codec, "time", SimpleNamespace(perf_counter_ns=lambda: now[0]))

    def operation(cost: int) -> None:
        now[0] += cost

    assert codec._fastest(operation, [300_000, 40_000, 150_000], slowdown=0.0) == 40_000
    # Calls of 20 us: doubling stops at 64 loops (1.28 ms >= 1 ms), and 1.2 x 1 ms
    # needs 1200 / 20 = 60 calls.
    assert codec.calibrate_loops(operation, 20_000, min_ns=1_000_000) == 60


def test_a_worker_records_each_round_once_per_codec_and_no_sample_shorter_than_0_9_min_time(
    monkeypatch,
):
    # Each call costing 7 us on a clock that moves by those costs alone: a warm-up
    # preempted past MIN_TIME (a loaded machine) cannot skip recalibrating.
    record_calls(monkeypatch, cost_ns=7_000)
    task = worker_task(min_time=MIN_TIME)
    loops = run_worker(dict(task, mode="calibrate"))
    # Doubling stops at 64 loops (448 us >= 400 us); 1.2 x 400 us / 7 us = 68.6: 69 loops.
    assert loops == {
        f"seed|{c}|{o}": 69 for c in CODECS for o in ("encode", "decode", "decode_access")
    }
    # A calibration far too short (1 loop): the worker must raise it, not record short samples.
    too_short = dict.fromkeys(loops, 1)
    measure = {"mode": "measure", "worker": 3, "values": 4, "warmups": 1, "params": {}}
    sets = run_worker(task | measure | {"loops": too_short})["sample_sets"]
    assert len(sets) == 6
    for sample_set in sets:
        params = sample_set["params"]
        # The warm-up's 1 loop spans 7 us < 400 us: the worker calibrates again, to 69
        # loops, and each recorded sample spans 69 x 7 us = 483 us, 7 us a call.
        assert sample_set["worker"] == 3 and sample_set["values"] == [7e-6] * 4
        assert params["calibration_loops"] == 1 and params["recalibrated"] is True
        assert params["loops"] == 69
        assert params["shortest_span_s"] == 0.000483  # >= 0.9 x MIN_TIME = 360 us
        assert params["payload_digest"] == "0123456789abcdef"  # the manager's, copied


def test_the_slowdown_applies_to_the_copys_callables_by_name_and_to_nothing_else(monkeypatch):
    calls = record_calls(monkeypatch)
    task = worker_task(min_time=MIN_TIME, slowdown={"json-aa": 0.25})
    loops = run_worker(dict(task, mode="calibrate"))
    run_worker(dict(task, mode="measure", worker=0, loops=loops, values=2, warmups=1, params={}))
    used: dict[tuple[str, str], set[float]] = {}
    for _round, name, operation, _sample, slowdown in calls:
        used.setdefault((name, operation), set()).add(slowdown)
    assert used == {
        **{("json", op): {0.0} for op in codec.OPERATIONS},
        **{("json-aa", op): {0.25} for op in codec.OPERATIONS},
    }
