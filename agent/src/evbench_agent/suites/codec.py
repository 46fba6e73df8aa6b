"""The serialization suite: encode, decode, decode_access, size, size_deflate.

Method, after pyperf: a calibration process finds, for each operation, the
number of inner loops that makes one sample span at least `min_time`; then
several fresh worker processes each take warm-up samples (discarded) and
values. Within a worker the codecs are interleaved (A B A B) sample by sample,
so slow drift such as heating shows in every codec alike instead of following
the codec order. Time comes from `time.perf_counter_ns`; a sample is the mean
time of one operation over its inner loop, so spreads and tails are those of
inner-loop means, not of single operations. Each sample uses the next payload
of the profile, so the spread includes the variety of messages.
"""

from __future__ import annotations

import gc
import itertools
import os
import time
import zlib
from collections.abc import Callable
from typing import Any

from evbench_agent import codecs, payloads
from evbench_agent.results import SampleSet
from evbench_agent.spec import Spec
from evbench_agent.suites import RunContext
from evbench_agent.workers import run_worker

SUITE = "codec"
OPERATIONS = ("encode", "decode", "decode_access")
DEFLATE_LEVEL = 6
#: Calibration stops doubling here, whatever the time; no real operation needs more.
MAX_LOOPS = 1 << 24


def _time_loops(operation: Callable[[Any], Any], argument: Any, loops: int) -> int:
    """Nanoseconds for `loops` calls, with the loop pyperf's bench_func uses."""
    repeat = itertools.repeat(None, loops)
    clock = time.perf_counter_ns
    start = clock()
    for _ in repeat:
        operation(argument)
    return clock() - start


Operations = dict[str, tuple[Callable[[Any], Any], list[Any]]]


def operations(bound: codecs.BoundCodec, items: list[payloads.Payload]) -> Operations:
    """The timed callables of one codec and their arguments, one per payload."""
    data = [bound.data(item) for item in items]
    blobs = [bound.encode(value) for value in data]
    decode, access = bound.decode, bound.access

    def decode_access(blob: bytes) -> int:
        return access(decode(blob))

    return {
        "encode": (bound.encode, data),
        "decode": (decode, blobs),
        "decode_access": (decode_access, blobs),
    }


def _prepare(task: dict[str, Any], profile_name: str) -> dict[str, Operations]:
    profile = payloads.get(profile_name)
    items = profile.payloads(task["payloads"], task["seed"])
    return {name: operations(codecs.get(name).bind(profile), items) for name in task["codecs"]}


def _cell(profile: str, codec: str, operation: str) -> str:
    return f"{profile}|{codec}|{operation}"


def _calibrate(task: dict[str, Any], emit: Callable[[str], None]) -> dict[str, int]:
    min_ns = task["min_time"] * 1e9
    loops_by_cell = {}
    for profile in task["profiles"]:
        for codec, operations in _prepare(task, profile).items():
            for operation, (function, arguments) in operations.items():
                loops = 1
                _time_loops(function, arguments[0], 1)  # first call: imports, caches
                while loops < MAX_LOOPS and _time_loops(function, arguments[0], loops) < min_ns:
                    loops *= 2
                loops_by_cell[_cell(profile, codec, operation)] = loops
        emit(f"calibrated {profile}")
    return loops_by_cell


def _measure(task: dict[str, Any], emit: Callable[[str], None]) -> dict[str, list[dict]]:
    """The worker's sample sets, and when each profile ran on the monotonic clock.

    Codecs alternate sample by sample (milliseconds each), too fast for
    telemetry to tell apart, so the marked phase is the profile's block in
    this worker: every codec of the profile, interleaved.
    """
    worker, rounds = task["worker"], task["warmups"] + task["values"]
    sample_sets, phases = [], []
    for profile in task["profiles"]:
        prepared = _prepare(task, profile)
        samples: dict[tuple[str, str], list[float]] = {}
        gc.collect()
        if not task["gc"]:
            gc.disable()
        started_ns = time.monotonic_ns()  # the telemetry clock, system-wide
        try:
            for round_number in range(rounds):
                for codec, operations in prepared.items():
                    for operation, (function, arguments) in operations.items():
                        loops = task["loops"][_cell(profile, codec, operation)]
                        argument = arguments[(worker * rounds + round_number) % len(arguments)]
                        elapsed = _time_loops(function, argument, loops)
                        if round_number >= task["warmups"]:
                            samples.setdefault((codec, operation), []).append(elapsed / loops / 1e9)
        finally:
            gc.enable()
        phases.append({"profile": profile, "start_ns": started_ns, "end_ns": time.monotonic_ns()})
        for (codec, operation), values in samples.items():
            params = dict(task["params"], loops=task["loops"][_cell(profile, codec, operation)])
            sample_sets.append(
                SampleSet(SUITE, profile, codec, operation, "s", params, values, worker).as_dict()
            )
        emit(f"worker {worker + 1}: {profile}")
    return {"sample_sets": sample_sets, "phases": phases}


def worker_main(task: dict[str, Any], emit: Callable[[str], None]) -> Any:
    """Entry point inside a worker process."""
    if task.get("cpu") is not None:
        os.sched_setaffinity(0, {task["cpu"]})
    if task["mode"] == "calibrate":
        return _calibrate(task, emit)
    return _measure(task, emit)


def sizes(spec: Spec) -> list[SampleSet]:
    """Encoded and deflated sizes of every payload: exact, so measured once."""
    sample_sets = []
    params = {"payloads": spec.payloads, "seed": spec.seed}
    for profile_name in spec.profiles:
        profile = payloads.get(profile_name)
        items = profile.payloads(spec.payloads, spec.seed)
        for codec_name in spec.codecs:
            bound = codecs.get(codec_name).bind(profile)
            blobs = [bound.encode(bound.data(item)) for item in items]
            sample_sets.append(
                SampleSet(
                    SUITE,
                    profile_name,
                    codec_name,
                    "size",
                    "bytes",
                    params,
                    [len(b) for b in blobs],
                )
            )
            deflated = [len(zlib.compress(blob, DEFLATE_LEVEL)) for blob in blobs]
            sample_sets.append(
                SampleSet(
                    SUITE,
                    profile_name,
                    codec_name,
                    "size_deflate",
                    "bytes",
                    dict(params, zlib_level=DEFLATE_LEVEL),
                    deflated,
                )
            )
    return sample_sets


def run(context: RunContext) -> None:
    spec, writer, progress = context.spec, context.writer, context.progress
    plan = spec.plan
    steps = len(spec.profiles) * (1 + plan.processes)
    progress.start(SUITE, steps)
    writer.add(sizes(spec))
    task = {
        "suite": SUITE,
        "profiles": list(spec.profiles),
        "codecs": list(spec.codecs),
        "payloads": spec.payloads,
        "seed": spec.seed,
        "min_time": plan.min_time,
        "cpu": spec.cpu,
        "gc": spec.gc,
    }
    loops = run_worker(dict(task, mode="calibrate"), progress.advance)
    params = {
        "processes": plan.processes,
        "values": plan.values,
        "warmups": plan.warmups,
        "min_time_s": plan.min_time,
        "gc": spec.gc,
        "cpu": spec.cpu,
        "payloads": spec.payloads,
        "seed": spec.seed,
    }
    for worker in range(plan.processes):
        context.mark("start", suite=SUITE, worker=worker)  # the cool-down guard waits here
        result = run_worker(
            dict(
                task,
                mode="measure",
                worker=worker,
                loops=loops,
                values=plan.values,
                warmups=plan.warmups,
                params=params,
            ),
            progress.advance,
        )
        context.mark("end", suite=SUITE, worker=worker)
        writer.add(SampleSet.from_dict(item) for item in result["sample_sets"])
        for phase in result["phases"]:  # codec=None: all codecs of the profile, interleaved
            for event in ("start", "end"):
                where = {"suite": SUITE, "profile": phase["profile"], "worker": worker}
                context.mark(event, phase[f"{event}_ns"], **where)
    progress.finish()
