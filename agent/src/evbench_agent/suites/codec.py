"""The serialization suite: encode, decode, decode_access, size, size_deflate.

Method, after pyperf: a calibration process finds, for each operation, the
number of inner loops that makes one sample span at least `min_time`; then
several fresh worker processes each take warm-up samples (discarded) and
values. Time comes from `time.perf_counter_ns`; a sample is the mean time of
one operation over its inner loop, so spreads and tails are those of
inner-loop means, not of single operations. Each round uses the next payload
of the profile (the same one for every codec), so the spread includes the
variety of messages.

Calibration holds (issue 13): it times every payload once and calibrates on
the fastest, takes the shortest of `CALIBRATION_REPEATS` samples at each loop
count (a preemption makes a sample longer, never shorter), and adds
`CALIBRATION_MARGIN`. A worker whose warm-up samples of an operation fall
short of `min_time` calibrates that operation again itself (``recalibrated``);
a recorded sample shorter than `SHORTEST_SHARE` x `min_time` is timed again
with more loops, so no recorded sample spans less. Each sample set records its
shortest span (``shortest_span_s``) and its loop count (``loops``); both are
outcomes, they never split a comparison.

Replicates: a sample set's `worker` is its process index; its i-th value is
round i after the warm-ups, and the i-th values of two codecs of the same
worker are a pair (same round, same payload, taken one right after the
other). Within a process the rounds go operation by operation, the codecs in
order (A B) in even rounds and reversed (B A) in odd ones, so neither codec
always runs first and slow drift such as heating shows in every codec alike;
each operation's first sample is primed, untimed, by the same operation of the
codec the round times last in it, so every sample follows the same operation
of another codec (`round_steps`), and a worker's first recorded round starts
with A in even workers and with B in odd ones. Without the prime the first
codec of each pair followed another operation and came out about 1 % slower
than the second, and the quick plan (3 values after one warm-up: B A, A B, B A)
handed that penalty to B, the A/A copy (issue 43, item 5).

A/A control (`--aa`): the copy is the same codec under another name; the
testing option `aa_slowdown` makes each of the copy's timed operations that
fraction slower, by name, in this process: after the inner loop the clock
spins until the sample spans (1 + fraction) times what the loop took.
"""

from __future__ import annotations

import gc
import itertools
import math
import os
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from evbench_agent import codecs, payloads
from evbench_agent.native.codec import NativeBound
from evbench_agent.payloads import identity as payload_identity
from evbench_agent.processes.workers import run_worker
from evbench_agent.spec import Spec
from evbench_agent.suites import RunContext
from evbench_agent.telemetry import contention
from evbench_core.analysis import metrics
from evbench_core.results import SampleSet

SUITE = "codec"
OPERATIONS = metrics.CODEC_TIMED
DEFLATE_LEVEL = 6
#: Calibration stops doubling here, whatever the time; no real operation needs more.
MAX_LOOPS = 1 << 24
#: Samples per loop count while calibrating; the shortest counts.
CALIBRATION_REPEATS = 3
#: Loops cover this much more than `min_time` on the fastest payload.
CALIBRATION_MARGIN = 1.2
#: No recorded sample spans less than this share of `min_time`.
SHORTEST_SHARE = 0.9


class HarnessOperation(Protocol):
    """An operation a native codec's harness times itself (evbench_agent.native.codec);
    called, it runs once."""

    def time_loops(self, argument: Any, loops: int) -> int: ...

    def __call__(self, argument: Any) -> Any: ...


#: A timed operation: a Python callable, or a native harness's.
Operation = Callable[[Any], Any] | HarnessOperation


def _time_loops(operation: Operation, argument: Any, loops: int, slowdown: float = 0.0) -> int:
    """Nanoseconds for `loops` calls, with the loop pyperf's bench_func uses.

    `slowdown` (A/A testing only): spin until the sample spans (1 + slowdown)
    times what the loop took, so each call counts that fraction slower.
    A native codec's operation times its loops in its harness (`time_loops`).
    """
    clock = time.perf_counter_ns
    native = getattr(operation, "time_loops", None)  # a harness's operation
    if native is not None:
        start = clock()
        elapsed: int = native(argument, loops)
        start = clock() - elapsed  # the spin below extends what the harness timed
    else:
        repeat = itertools.repeat(None, loops)
        start = clock()
        for _ in repeat:
            operation(argument)
        elapsed = clock() - start
    if slowdown:
        until = start + round(elapsed * (1 + slowdown))
        while clock() < until:
            pass
        elapsed = clock() - start
    return elapsed


Operations = dict[str, tuple[Operation, list[Any]]]


def operations(bound: codecs.BoundCodec | NativeBound, items: list[payloads.Payload]) -> Operations:
    """The timed callables of one codec and their arguments, one per payload."""
    if isinstance(bound, NativeBound):  # timed in a native harness
        native: Operations = dict(bound.native_operations(items))
        return native
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


def _prepare(
    task: dict[str, Any], profile_name: str, indices: list[int] | None = None
) -> dict[str, Operations]:
    """Every codec's operations on the profile's payloads (only those at `indices` if given:
    a worker encodes just the payloads its rounds use, which saves most of its start-up)."""
    profile = payloads.get(profile_name)
    items = profile.payloads(task["payloads"], task["seed"])
    if indices is not None:
        # A profile may hold fewer payloads than asked for (a samples file's lines): the
        # rounds then go round them again, as round_payloads does with the count asked for.
        items = [items[index % len(items)] for index in indices]
    return {name: operations(codecs.get(name).bind(profile), items) for name in task["codecs"]}


def round_payloads(worker: int, rounds: int, count: int) -> list[int]:
    """The payload of each round of a worker: the next ones of the profile, worker after worker."""
    return [(worker * rounds + round_number) % count for round_number in range(rounds)]


def _cell(profile: str, codec: str, operation: str) -> str:
    return f"{profile}|{codec}|{operation}"


def _fastest(function: Operation, arguments: list[Any], slowdown: float) -> Any:
    """The argument the operation handles fastest (calibrating on it keeps every sample long)."""
    _time_loops(function, arguments[0], 1, slowdown)  # first call: imports, caches
    return min(arguments, key=lambda argument: _time_loops(function, argument, 1, slowdown))


def calibrate_loops(
    function: Operation, argument: Any, min_ns: float, slowdown: float = 0.0
) -> int:
    """Loops that make one sample of `function(argument)` span `min_ns` with the margin.

    Doubles until the shortest of CALIBRATION_REPEATS samples reaches `min_ns`,
    then scales the count to cover CALIBRATION_MARGIN x `min_ns`.
    """
    loops = 1
    while True:
        shortest = min(
            _time_loops(function, argument, loops, slowdown) for _ in range(CALIBRATION_REPEATS)
        )
        if shortest >= min_ns or loops >= MAX_LOOPS:
            break
        loops *= 2
    per_call = max(shortest, 1) / loops
    return max(1, min(MAX_LOOPS, math.ceil(CALIBRATION_MARGIN * min_ns / per_call)))


def _calibrate(task: dict[str, Any], emit: Callable[[str], None]) -> dict[str, int]:
    min_ns = task["min_time"] * 1e9
    loops_by_cell = {}
    for profile in task["profiles"]:
        for codec, operations in _prepare(task, profile, task.get("indices")).items():
            slowdown = task.get("slowdown", {}).get(codec, 0.0)
            for operation, (function, arguments) in operations.items():
                fastest = _fastest(function, arguments, slowdown)
                loops_by_cell[_cell(profile, codec, operation)] = calibrate_loops(
                    function, fastest, min_ns, slowdown
                )
        emit(f"calibrated {profile}")
    return loops_by_cell


def round_order(cells: list[tuple[str, str]], round_number: int) -> list[tuple[str, str]]:
    """One round's order of (codec, operation) cells: operation by operation, the
    codecs A B in even rounds and B A in odd ones.

    Operation-major keeps a pair's two samples next to each other, and it makes
    what runs just before each codec the mirror image of what runs before the
    other (A's encode follows B's encode or A's last operation; B's encode
    follows A's encode or B's last operation). The codec-major order this
    replaced let one codec's encode follow its own encode at every other round
    boundary: warm caches made json 1 % to 2 % faster than its identical A/A copy.
    """
    operations = list(dict.fromkeys(operation for _codec, operation in cells))
    codecs = list(dict.fromkeys(codec for codec, _operation in cells))
    if round_number % 2:
        codecs.reverse()
    present = set(cells)
    return [(c, o) for o in operations for c in codecs if (c, o) in present]


#: A prime is this share of the priming cell's loops (at least one call).
PRIME_SHARE = 0.125


def round_steps(
    cells: list[tuple[str, str]], round_number: int
) -> list[tuple[tuple[str, str] | None, tuple[str, str]]]:
    """One round's steps: (the cell whose operation primes, or None; the cell timed).

    `round_order`, with each operation's first sample primed: before it, untimed, a
    short run of the same operation by the codec the round times last in it. Without
    the prime the first codec of a pair followed another operation and the second
    followed its own operation, warm: the first came out about 1 % to 2 % slower, and
    a plan that puts one codec first in more of the recorded rounds (an odd count of
    values, as the quick plan's 3) handed that codec the penalty. With it, every
    sample follows the same operation of another codec, whatever the count.
    """
    steps: list[tuple[tuple[str, str] | None, tuple[str, str]]] = []
    order = round_order(cells, round_number)
    for index, cell in enumerate(order):
        primer = None
        if index == 0 or order[index - 1][1] != cell[1]:  # the operation's first sample
            same = [other for other in order if other[1] == cell[1]]
            primer = same[-1] if len(same) > 1 else None
        steps.append((primer, cell))
    return steps


class _Cell:
    """One codec's operation in one worker: its loops, samples and what they spanned."""

    def __init__(self, function: Operation, arguments: list[Any], loops: int):
        self.function, self.arguments, self.loops = function, arguments, loops
        self.calibration_loops = loops
        self.recalibrated = False
        self.values: list[float] = []
        self.shortest_ns: int | None = None
        self.warmup_short = False


def _take(
    cell: _Cell, argument: Any, min_ns: float, slowdown: float, recorded: bool
) -> tuple[int, int]:
    """One sample (ns, loops); a recorded one too short is timed again with more loops."""
    loops = cell.loops
    elapsed = _time_loops(cell.function, argument, loops, slowdown)
    while recorded and elapsed < SHORTEST_SHARE * min_ns and loops < MAX_LOOPS:
        loops = min(MAX_LOOPS, math.ceil(loops * CALIBRATION_MARGIN * min_ns / max(elapsed, 1)))
        cell.loops = loops  # the rest of this worker keeps the longer loop
        elapsed = _time_loops(cell.function, argument, loops, slowdown)
    return elapsed, loops


def _recalibrate(cell: _Cell, min_ns: float, slowdown: float) -> None:
    """This process runs the operation faster than the calibration one did: more loops."""
    fastest = _fastest(cell.function, cell.arguments, slowdown)
    cell.loops = max(cell.loops, calibrate_loops(cell.function, fastest, min_ns, slowdown))
    cell.recalibrated = True


def prepare_cells(task: dict[str, Any], profile: str) -> dict[tuple[str, str], _Cell]:
    """A worker's (codec, operation) cells of one profile, on the payloads of its rounds."""
    rounds = task["warmups"] + task["values"]
    indices = round_payloads(task["worker"], rounds, task["payloads"])
    return {
        (codec, operation): _Cell(
            function, arguments, task["loops"][_cell(profile, codec, operation)]
        )
        for codec, operations in _prepare(task, profile, indices).items()
        for operation, (function, arguments) in operations.items()
    }


def take_round_sample(
    cell: _Cell, round_number: int, warmups: int, min_ns: float, slowdown: float
) -> None:
    """The cell's sample of one round: a warm-up (which may recalibrate) or a value."""
    recorded = round_number >= warmups
    argument = cell.arguments[round_number]  # the same payload for every codec
    elapsed, loops = _take(cell, argument, min_ns, slowdown, recorded)
    if not recorded:
        cell.warmup_short |= elapsed < min_ns
        if round_number == warmups - 1 and cell.warmup_short:
            _recalibrate(cell, min_ns, slowdown)
        return
    cell.values.append(elapsed / loops / 1e9)
    cell.shortest_ns = elapsed if cell.shortest_ns is None else min(cell.shortest_ns, elapsed)


def prime(cell: _Cell, round_number: int, slowdown: float = 0.0) -> None:
    """Run the cell's operation untimed on this round's payload, `PRIME_SHARE` of its
    loops (at least one call): what the next sample of the operation will follow. A
    copy's slowdown (A/A testing) applies here too, as to all the copy's calls."""
    loops = max(1, int(cell.loops * PRIME_SHARE))
    _time_loops(cell.function, cell.arguments[round_number], loops, slowdown)


def cell_sample_sets(
    task: dict[str, Any], profile: str, cells: dict[tuple[str, str], _Cell]
) -> list[dict[str, Any]]:
    """The sample sets of a worker's cells of one profile, as dicts."""
    sample_sets = []
    for (codec, operation), cell in cells.items():
        params = dict(
            task["params"],
            **task["payload_digests"][profile],
            loops=cell.loops,
            calibration_loops=cell.calibration_loops,
            recalibrated=cell.recalibrated,
            shortest_span_s=None if cell.shortest_ns is None else cell.shortest_ns / 1e9,
        )
        sample_sets.append(
            SampleSet(
                SUITE, profile, codec, operation, "s", params, cell.values, task["worker"]
            ).as_dict()
        )
    return sample_sets


def _measure(task: dict[str, Any], emit: Callable[[str], None]) -> dict[str, list[dict[str, Any]]]:
    """The worker's sample sets, and when each profile ran on the monotonic clock.

    Codecs alternate within each round (milliseconds each), too fast for
    telemetry to tell apart, so the marked phase is the profile's block in
    this worker: every codec of the profile, interleaved.
    """
    worker, warmups = task["worker"], task["warmups"]
    rounds = warmups + task["values"]
    min_ns = task["min_time"] * 1e9
    slowdowns = task.get("slowdown", {})
    sample_sets, phases = [], []
    for profile in task["profiles"]:
        cells = prepare_cells(task, profile)
        order = list(cells)
        gc.collect()
        if not task["gc"]:
            gc.disable()
        started_ns = time.monotonic_ns()  # the telemetry clock, system-wide
        try:
            for round_number in range(rounds):
                # Workers alternate which codec goes first in their first recorded round.
                for primer, key in round_steps(order, round_number - warmups + worker):
                    if primer is not None:
                        prime(cells[primer], round_number, slowdowns.get(primer[0], 0.0))
                    slowdown = slowdowns.get(key[0], 0.0)
                    take_round_sample(cells[key], round_number, warmups, min_ns, slowdown)
        finally:
            gc.enable()
        phases.append({"profile": profile, "start_ns": started_ns, "end_ns": time.monotonic_ns()})
        sample_sets += cell_sample_sets(task, profile, cells)
        emit(f"worker {worker + 1}: {profile}")
    return {"sample_sets": sample_sets, "phases": phases}


def worker_main(task: dict[str, Any], emit: Callable[[str], None]) -> Any:
    """Entry point inside a worker process."""
    if task.get("cpu") is not None:
        os.sched_setaffinity(0, {task["cpu"]})
    if task["mode"] == "calibrate":
        return _calibrate(task, emit)
    return _measure(task, emit)


class SizePlan(Protocol):
    """What sizes() reads of a run: a Spec, or the task an arm's worker gets."""

    @property
    def profiles(self) -> Sequence[str]: ...

    @property
    def codecs(self) -> Sequence[str]: ...

    @property
    def payloads(self) -> int: ...

    @property
    def seed(self) -> int: ...


def sizes(spec: SizePlan) -> list[SampleSet]:
    """Encoded and deflated sizes of every payload: exact, so measured once."""
    sample_sets = []
    for profile_name in spec.profiles:
        profile = payloads.get(profile_name)
        items = profile.payloads(spec.payloads, spec.seed)
        params = dict(
            payloads=spec.payloads,
            seed=spec.seed,
            **payload_identity.params(profile_name, spec.payloads, spec.seed, items),
        )
        for codec_name in spec.codecs:
            bound = codecs.get(codec_name).bind(profile)
            blobs = [bound.encode(bound.data(item)) for item in items]
            if hasattr(bound, "close"):  # a native harness: done with it
                bound.close()
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


#: Seconds a worker process takes to start, import the codecs and build the payloads.
WORKER_START_S = 0.6
#: Seconds calibrating one operation takes on average (every payload once, then doubling).
CALIBRATION_PER_OPERATION_S = 0.015
#: Seconds to encode and deflate every payload once per profile and codec (the sizes).
SIZES_PER_CODEC_S = 0.05
#: A sample spans this many times `min_time` on average: calibrated on the fastest payload
#: with CALIBRATION_MARGIN, the other payloads take longer.
MEAN_SPAN_FACTOR = 1.5


def planned_seconds(spec: Spec) -> float:
    """How long the suite's plan should take here: the calibration, then every worker."""
    plan = spec.plan
    arms = len(spec.arms or ()) or 1  # --arm: every cell, calibration and worker per arm
    cells = len(spec.profiles) * len(spec.codecs) * len(OPERATIONS)
    rounds = plan.warmups + plan.values
    sizes = len(spec.profiles) * len(spec.codecs) * SIZES_PER_CODEC_S
    calibration = sizes + WORKER_START_S + cells * CALIBRATION_PER_OPERATION_S
    # Each operation's first sample of a round is primed when the operation has two or
    # more cells in the round (codecs, or one codec under two --arm environments).
    paired = arms * len(spec.codecs)
    primes = 1 + PRIME_SHARE / paired if paired > 1 else 1.0
    worker = WORKER_START_S + cells * rounds * plan.min_time * MEAN_SPAN_FACTOR * primes
    return arms * (calibration + plan.processes * worker)


def timed_params(spec: Spec) -> dict[str, Any]:
    """The identity params every timed record of the run shares (its plan and settings)."""
    plan = spec.plan
    params = {
        "processes": plan.processes,
        "values": plan.values,
        "warmups": plan.warmups,
        "min_time_s": plan.min_time,
        "gc": spec.gc,
        "cpu": spec.cpu,
        "payloads": spec.payloads,
        "seed": spec.seed,
        # Identity: the primed order (issue 43) began new series; the earlier text was
        # "codecs and operations A B in even rounds, B A in odd ones".
        "order": "operation by operation, A B / B A by round and worker, each primed",
    }
    if spec.aa_slowdown:
        params["aa_slowdown"] = spec.aa_slowdown
    return params


def make_task(spec: Spec) -> dict[str, Any]:
    """What every worker of the run gets (each adds its mode, index and loops)."""
    plan = spec.plan
    return {
        "suite": SUITE,
        "profiles": list(spec.profiles),
        "codecs": list(spec.codecs),
        "payloads": spec.payloads,
        "seed": spec.seed,
        "min_time": plan.min_time,
        "cpu": spec.cpu,
        "gc": spec.gc,
        # A/A testing option: the copy's operations, by name, this fraction slower.
        "slowdown": {codec: spec.slowdown(codec) for codec in spec.codecs if spec.slowdown(codec)},
        # Computed here, once before any worker: the workers only copy them.
        "payload_digests": {
            profile: payload_identity.params(profile, spec.payloads, spec.seed)
            for profile in spec.profiles
        },
    }


def run(context: RunContext) -> None:
    spec, writer, progress = context.spec, context.writer, context.progress
    plan = spec.plan
    task = make_task(spec)
    progress.start(SUITE, len(spec.profiles) * (1 + plan.processes))
    writer.add(sizes(spec))
    # Calibrate on the payloads the workers' rounds will use (the fastest of them).
    used = range(min(spec.payloads, plan.processes * (plan.warmups + plan.values)))
    loops = run_worker(dict(task, mode="calibrate", indices=list(used)), progress.advance)
    params = timed_params(spec)
    for worker in range(plan.processes):
        context.mark("start", suite=SUITE, worker=worker)  # the cool-down guard waits here
        before = contention.take()
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
        found = contention.figures(before, contention.take())
        context.mark("end", suite=SUITE, worker=worker)
        writer.add(SampleSet.from_dict(item) for item in result["sample_sets"])
        # The machine around the worker (every profile and codec ran in it: codec none).
        writer.add(
            SampleSet(SUITE, None, None, metric, "percent", {"kind": "worker"}, [value], worker)
            for metric, value in found.items()
        )
        for phase in result["phases"]:  # codec=None: all codecs of the profile, interleaved
            for event in ("start", "end"):
                where = {"suite": SUITE, "profile": phase["profile"], "worker": worker}
                context.mark(event, phase[f"{event}_ns"], **where)
    progress.finish()
