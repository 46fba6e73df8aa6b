"""The planned duration from a short measured probe, not from constants alone.

The suites' `planned_seconds` model a plan with fixed costs (a worker's start-up, a
sample's span) measured once on a quiet machine with the built-in payloads. A large
payload breaks them: every worker builds all the profile's payloads and encodes the
ones its rounds use, and an operation on a 5 MB message takes far longer than a
sample's `min_time` (a plan said 6 s and took 9 min 52 s). A loaded machine breaks
them too (91 s planned, 156 s taken).

So, before the run, the agent measures here what the codec suite's plan is made of, on
this machine as loaded as it is now: a fresh interpreter importing the run's codecs
(what each worker process pays first), building a few payloads of each profile (scaled
to the plan's count), and one call of each timed operation on a payload of each
profile and codec. The codec suite's plan is worked out from those, step by step as
suites/codec.py runs it (each operation's primed first sample included), and the
planned duration is the larger of that and the suite's model. Other suites keep their
model (their phases are paced by the clock).

Each of the probe's measurements is taken twice, apart in time, and the shorter counts:
a stall of the machine (another process's start, a disk read) only lengthens one, and a
plan multiplies the interpreter's start and the payloads' building by the run's processes
(a CI run planned 42 s for a run of 19 s when one of them was taken in such a stall).

The probe takes about a second for the built-in payloads; it never fails a run: a
codec it cannot time here (a native harness) keeps the model's figures.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
import zlib
from typing import Any

from evbench_agent import codecs, payloads, registry
from evbench_agent.native.codec import NativeCodec
from evbench_agent.suites import codec as codec_suite

log = logging.getLogger(__name__)

#: Payloads of each profile built to time the building (scaled to the plan's count).
PROBE_PAYLOADS = 3
#: Calls of each operation timed; the shortest counts (a preemption only lengthens one).
PROBE_CALLS = 2


def _interpreter_start(codec_names: list[str]) -> float:
    """Seconds a fresh interpreter takes to start and import the codecs, as a worker does."""
    program = (
        "from evbench_agent import codecs\n"
        "from evbench_agent.processes import workers\n"
        "import sys\n"
        "for name in sys.argv[1:]:\n"
        "    codecs.get(name)\n"
    )
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", program, *codec_names],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=120,
    )
    return time.perf_counter() - started


def _shortest(function: Any, argument: Any) -> float:
    """Seconds of the fastest of PROBE_CALLS calls (the first one warmed up apart)."""
    function(argument)
    best = float("inf")
    for _ in range(PROBE_CALLS):
        started = time.perf_counter()
        function(argument)
        best = min(best, time.perf_counter() - started)
    return best


def _timed(function: Any) -> tuple[Any, float]:
    """What one call of `function` returns, and the seconds it took."""
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


class _Cost:
    """What one profile costs the codec suite's processes, measured."""

    def __init__(self, spec: Any, profile_name: str) -> None:
        profile = payloads.get(profile_name)
        count = min(spec.payloads, PROBE_PAYLOADS)
        items, built = _timed(lambda: profile.payloads(count, spec.seed))
        item = items[0]
        chosen = {name: codecs.get(name) for name in spec.codecs}
        bound = {
            name: codec.bind(profile)
            for name, codec in chosen.items()
            # timed in a harness: the model's figures (binding one would start its harness
            # once more, for nothing)
            if not isinstance(codec, NativeCodec)
        }
        # What every process pays per payload is taken again after the calls, apart in
        # time; the shorter counts.
        prepared = self._prepare(bound, item)
        #: Per (codec, operation): seconds of one call.
        self.calls: dict[tuple[str, str], float] = {}
        #: Per codec: seconds to deflate a payload's encoding (the sizes).
        self.deflate: dict[str, float] = {}
        for name, codec in bound.items():
            blob = codec.encode(codec.data(item))
            self.deflate[name] = _shortest(
                lambda value: zlib.compress(value, codec_suite.DEFLATE_LEVEL), blob
            )
            for operation, (function, arguments) in codec_suite.operations(codec, [item]).items():
                self.calls[(name, operation)] = _shortest(function, arguments[0])
        built = min(built, _timed(lambda: profile.payloads(count, spec.seed))[1])
        again = self._prepare(bound, item)
        #: Seconds to build the plan's payloads of the profile (every process does).
        self.build = built / len(items) * spec.payloads
        #: Per codec: seconds to make one payload's data and encode it (a process does it
        #: for each payload it uses).
        self.prepare = {name: min(prepared[name], again[name]) for name in prepared}

    @staticmethod
    def _prepare(bound: dict[str, Any], item: Any) -> dict[str, float]:
        """Per codec: seconds to make one payload's data and encode it."""
        return {
            name: _timed(lambda codec=codec: codec.encode(codec.data(item)))[1]
            for name, codec in bound.items()
        }


def round_seconds(calls: dict[str, float], min_time: float) -> float:
    """Seconds one round of one operation takes in a worker: a sample of each codec
    (`calls`: seconds of one call per codec) and, when two or more codecs pair, the
    prime before the operation's first sample (`codec.prime`: PRIME_SHARE of the
    priming cell's loops, at least one call), by the codec the round times last,
    which alternates: counted as the codecs' mean prime."""
    margin, factor = codec_suite.CALIBRATION_MARGIN, codec_suite.MEAN_SPAN_FACTOR
    spans = {name: max(margin * min_time, call) * factor for name, call in calls.items()}
    seconds = sum(spans.values())
    if len(calls) > 1:
        primes = [max(codec_suite.PRIME_SHARE * spans[name], call) for name, call in calls.items()]
        seconds += sum(primes) / len(primes)
    return seconds


def codec_seconds(spec: Any) -> float:
    """The codec suite's plan worked out from a probe of this machine (seconds)."""
    plan = spec.plan
    start = _interpreter_start(list(spec.codecs))
    rounds = plan.warmups + plan.values
    used = min(spec.payloads, plan.processes * rounds)
    # A sample spans min_time (more for slower payloads) or, when one call takes longer,
    # one call per payload.
    repeats = codec_suite.CALIBRATION_REPEATS
    costs = [_Cost(spec, profile_name) for profile_name in spec.profiles]
    # the start once more, after the profiles' probe: the shorter counts
    start = min(start, _interpreter_start(list(spec.codecs)))
    sizes, calibration, worker = 0.0, start, start
    for cost in costs:
        model_call = plan.min_time / 2  # a codec the probe could not time
        sizes += cost.build + spec.payloads * sum(
            cost.prepare.get(name, model_call) + cost.deflate.get(name, 0.0) for name in spec.codecs
        )
        calibration += cost.build + used * sum(cost.prepare.values())
        worker += cost.build + rounds * sum(cost.prepare.values())
        for operation in codec_suite.OPERATIONS:
            calls = {name: cost.calls.get((name, operation), model_call) for name in spec.codecs}
            for call in calls.values():
                # every used payload once, then doubling to min_time, REPEATS at each count
                calibration += (1 + used) * call + repeats * 2 * max(plan.min_time, call)
            worker += rounds * round_seconds(calls, plan.min_time)
    arms = len(spec.arms or ()) or 1
    return float(arms * (sizes + calibration + plan.processes * worker))


def planned_seconds(spec: Any) -> dict[str, float]:
    """Each suite of `spec` with the seconds its plan should take here, now: the suites'
    models, the codec suite's raised to what a probe of this machine works out."""
    planned = registry.planned_seconds(spec)
    if "codec" in planned and not spec.arms:  # --arm: other interpreters, the model's
        try:
            planned["codec"] = max(planned["codec"], codec_seconds(spec))
        except Exception as error:  # the probe never fails a run: the run says what failed
            log.info("plan probe: %s; the planned duration is the model's", error)
    return planned


__all__ = ["PROBE_CALLS", "PROBE_PAYLOADS", "codec_seconds", "planned_seconds", "round_seconds"]
