"""The codec suite's calibration holds, its rounds alternate, its A/A slowdown is what it says.

Timed parts use a real operation of known cost (a spin on the clock), so every
expected lower bound follows from that cost; preemption can only make a spin longer.
Where a preempted call could change the answer (the loop count, the fastest payload),
the suite's clock moves by the operations' stated costs alone.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

from test_codec_order import record_calls, worker_task

from evbench_agent.suites import codec

MIN_TIME = 0.0004  # seconds: short, so the test is quick


def spin(microseconds: float) -> None:
    """Takes at least `microseconds`, never less."""
    until = time.perf_counter_ns() + microseconds * 1000
    while time.perf_counter_ns() < until:
        pass


def _ticking(monkeypatch):
    """An operation whose argument is its cost in ns on the suite's clock, a clock that
    moves by those costs alone: a preempted call (a loaded machine) cannot change what
    calibration sees, so the expected loops follow exactly."""
    now = [0]
    monkeypatch.setattr(codec, "time", SimpleNamespace(perf_counter_ns=lambda: now[0]))

    def operation(cost: int) -> None:
        now[0] += cost

    return operation


def test_loops_cover_min_time_with_the_margin(monkeypatch):
    # Calls of 20 us: doubling stops at 64 loops (1.28 ms >= 1 ms), and 1.2 x 1 ms
    # needs 1200 / 20 = 60 calls.
    assert codec.calibrate_loops(_ticking(monkeypatch), 20_000, min_ns=1_000_000) == 60


def test_calibration_takes_the_fastest_payload(monkeypatch):
    operation = _ticking(monkeypatch)
    assert codec._fastest(operation, [300_000, 40_000, 150_000], slowdown=0.0) == 40_000


def test_each_round_of_a_worker_takes_the_next_payload_worker_after_worker():
    # 3 rounds per worker over 5 payloads: worker 0 takes 0 1 2, worker 1 takes 3 4 0.
    assert codec.round_payloads(0, 3, 5) == [0, 1, 2]
    assert codec.round_payloads(1, 3, 5) == [3, 4, 0]


def test_rounds_go_operation_by_operation_a_b_then_b_a():
    cells = [("json", "encode"), ("json", "decode"), ("protobuf", "encode"), ("protobuf", "decode")]
    assert codec.round_order(cells, 0) == [
        ("json", "encode"), ("protobuf", "encode"), ("json", "decode"), ("protobuf", "decode")
    ]  # fmt: skip
    assert codec.round_order(cells, 1) == [
        ("protobuf", "encode"), ("json", "encode"), ("protobuf", "decode"), ("json", "decode")
    ]  # fmt: skip
    assert codec.round_order(cells, 2) == codec.round_order(cells, 0)


def _predecessors(cells):
    """What runs just before each cell in the steady state: the order repeats every
    two rounds, so two rounds taken as a cycle hold every case once."""
    sequence = codec.round_order(cells, 0) + codec.round_order(cells, 1)
    found = {}
    for index, cell in enumerate(sequence):
        found.setdefault(cell, []).append(sequence[index - 1])
    return found


def test_what_runs_before_each_arm_is_the_mirror_image_of_the_other_arm():
    # An A/A pair is the same code under two names, so any carry-over from the
    # cell before (warm caches, garbage left to collect) must hit both arms alike:
    # swapping the names A <-> B must turn A's predecessors into B's.
    cells = [(c, o) for c in ("A", "B") for o in ("encode", "decode", "decode_access")]
    swap = {"A": "B", "B": "A"}
    found = _predecessors(cells)
    for operation in ("encode", "decode", "decode_access"):
        mirrored = sorted((swap[c], o) for c, o in found[("A", operation)])
        assert mirrored == sorted(found[("B", operation)]), operation


def test_a_slowdown_makes_every_sample_that_fraction_longer():
    # 10 calls of >= 100 us: >= 1 ms plain, >= 1.5 ms with the copy's 50 % slowdown.
    assert codec._time_loops(spin, 100, 10) >= 1_000_000
    assert codec._time_loops(spin, 100, 10, slowdown=0.5) >= 1_500_000


class _HarnessTimed:
    """A native harness's operation (native.codec.NativeOperation's shape): it times its
    own loops, and calling it runs one loop there."""

    def __init__(self) -> None:
        self.calls: list[object] = []

    def time_loops(self, argument: object, loops: int) -> int:
        return 7_000 * loops  # what the harness says its loops took

    def __call__(self, argument: object) -> int:
        self.calls.append(argument)
        return self.time_loops(argument, 1)


def test_a_harness_operation_times_its_loops_in_the_harness_not_call_by_call():
    operation = _HarnessTimed()
    assert codec._time_loops(operation, "payload", 1_000) == 7_000_000
    assert operation.calls == []  # never timed through Python calls, one round trip each


def test_a_worker_records_each_round_once_per_codec_and_no_sample_shorter_than_0_9_min_time():
    task = worker_task(min_time=MIN_TIME)
    loops = codec.worker_main(dict(task, mode="calibrate"), lambda _what: None)
    assert set(loops) == {
        f"seed|{c}|{o}" for c in ("json", "json-aa") for o in ("encode", "decode", "decode_access")
    }
    # A calibration far too short (1 loop): the worker must raise it, not record short samples.
    too_short = dict.fromkeys(loops, 1)
    result = codec.worker_main(
        dict(task, mode="measure", worker=3, loops=too_short, values=4, warmups=1, params={}),
        lambda _what: None,
    )
    sets = result["sample_sets"]
    assert len(sets) == 6
    for sample_set in sets:
        params = sample_set["params"]
        assert sample_set["worker"] == 3 and len(sample_set["values"]) == 4
        assert params["shortest_span_s"] >= 0.9 * MIN_TIME
        assert params["calibration_loops"] == 1 and params["loops"] > 1
        assert params["payload_digest"] == "0123456789abcdef"  # the manager's, copied
        for value in sample_set["values"]:  # value x loops is at least the span it came from
            assert value * params["loops"] >= 0.9 * MIN_TIME * 0.999
    # One call is far shorter than MIN_TIME, so the warm-up falls short and the worker
    # calibrates again (a warm-up preempted past MIN_TIME is the rare exception).
    assert sum(s["params"]["recalibrated"] for s in sets) >= 4


def test_the_slowdown_applies_to_the_copys_callables_by_name_and_to_nothing_else(monkeypatch):
    calls = record_calls(monkeypatch)
    task = worker_task(min_time=MIN_TIME, slowdown={"json-aa": 0.25})
    loops = codec.worker_main(dict(task, mode="calibrate"), lambda _what: None)
    codec.worker_main(
        dict(task, mode="measure", worker=0, loops=loops, values=2, warmups=1, params={}),
        lambda _what: None,
    )
    used: dict[tuple[str, str], set[float]] = {}
    for _round, name, operation, _sample, slowdown in calls:
        used.setdefault((name, operation), set()).add(slowdown)
    assert used == {
        **{("json", op): {0.0} for op in codec.OPERATIONS},
        **{("json-aa", op): {0.25} for op in codec.OPERATIONS},
    }
