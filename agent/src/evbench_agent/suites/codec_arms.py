"""The codec suite under two or more environments (`--arm`), interleaved within rounds.

The codec suite pairs codecs inside one worker process: in every round, operation
by operation, each codec takes one sample, A B in even rounds and B A in odd ones.
Arms cannot share a process (each is another interpreter), so a replicate is a
set of processes, one per arm, started together: arm A's process and arm B's
take turns within each round, in the same order as codecs do in one process
(`codec.round_steps` over the cells "codec@arm", each operation's first sample
primed by another cell's untimed run of it), while the others wait, blocked
on a pipe, never measuring at the same time. The i-th values of protobuf@old and
protobuf@new of replicate w are a pair: same round, same payload, moments apart.
The replicate (worker index) is the unit of the test, as in the codec suite: the
verdict per operation is the same signed-rank test over per-replicate ratios.

Each arm calibrates its own loops and measures its own encoded sizes in its own
interpreter, before any replicate. The payload sets are the managing process's:
every arm's sizes must carry the same payload digest, or the run stops.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from evbench_agent import arms
from evbench_agent.payloads import identity as payload_identity
from evbench_agent.processes import child_exit, workers
from evbench_agent.suites import RunContext
from evbench_agent.suites.codec import OPERATIONS, SUITE, make_task, round_steps, timed_params
from evbench_agent.telemetry import contention
from evbench_core.errors import EvbenchError, PartialRun
from evbench_core.results import SampleSet

log = logging.getLogger(__name__)

#: No answer from an arm's process in this long (calibrating, or one round) is a hang.
REPLY_TIMEOUT_S = 600.0
#: A line from an arm's process longer than this is not the protocol's.
MAX_LINE = 64 * 1024 * 1024
#: Seconds to wait for an arm's process to exit after its result.
EXIT_TIMEOUT_S = 30.0
#: A turn's step that runs the cell untimed (`codec.prime`) before another cell's sample.
PRIME = "prime"


class ArmProcess:
    """One arm's worker process and its JSON-lines conversation."""

    def __init__(self, arm: str, python: str):
        self.arm = arm
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self.process = subprocess.Popen(
            [python, "-m", "evbench_agent.arm_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            env=arms.environment(),
        )
        self._buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None  # stdin=PIPE
        try:
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()
        except BrokenPipeError:
            raise self._failure("stopped taking commands") from None

    def receive(self) -> dict[str, Any]:
        """The next answer; progress lines are skipped. Capped in time and length."""
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        assert self.process.stdout is not None  # stdout=PIPE
        stream = self.process.stdout.fileno()
        while True:
            line, sep, rest = self._buffer.partition(b"\n")
            if sep:
                self._buffer = rest
                message: dict[str, Any] = json.loads(line)  # the worker's answers are objects
                if "progress" not in message:
                    return message
                continue
            if len(self._buffer) > MAX_LINE:
                raise self._failure("wrote a line too long for the protocol")
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stream], [], [], left)[0]:
                raise self._failure(f"did not answer in {REPLY_TIMEOUT_S:g} s")
            chunk = os.read(stream, 65536)
            if not chunk:
                raise self._failure("ended")
            self._buffer += chunk

    def ask(self, message: dict[str, Any], answer: str) -> dict[str, Any]:
        self.send(message)
        reply = self.receive()
        if answer not in reply:
            raise self._failure(f"answered {str(reply)[:200]} to {str(message)[:200]}")
        return reply

    def result(self) -> dict[str, Any]:
        """The final answer, then the process's exit."""
        reply = self.receive()
        if "result" not in reply:
            raise self._failure(f"answered {str(reply)[:200]} instead of its result")
        try:
            returncode = self.process.wait(EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise self._failure(f"did not exit {EXIT_TIMEOUT_S:g} s after its result") from None
        if returncode != 0:
            raise self._failure(f"exited {returncode} after its result")
        workers.note_peak_rss(reply.get("peak_rss_bytes"))  # the manifest's worker peak
        result: dict[str, Any] = reply["result"]
        return result

    def _failure(self, what: str) -> Exception:
        """A cut-short run when the process was killed; its error otherwise."""
        try:
            returncode = self.process.wait(1.0)
        except subprocess.TimeoutExpired:
            returncode = None
        if returncode is not None and child_exit.killed(returncode):
            return PartialRun(
                f"the worker of arm {self.arm!r} was killed ({child_exit.describe(returncode)})"
            )
        self.errors.seek(0)
        tail = self.errors.read()[-2000:].decode(errors="replace").strip()
        return EvbenchError(
            f"the worker of arm {self.arm!r} {what}" + (f": {tail}" if tail else "")
        )

    def close(self) -> None:
        """Stop the process if it still runs (an error elsewhere); never waits long."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:  # both are pipes
                with contextlib.suppress(OSError):
                    stream.close()
        self.errors.close()


def _relabel(sample_set: dict[str, Any], arm: str) -> SampleSet:
    """An arm's record under the codec name that names its arm (protobuf@old)."""
    return SampleSet.from_dict(dict(sample_set, codec=arms.label(sample_set["codec"], arm)))


def _calibrate(
    interpreters: dict[str, str], task: dict[str, Any], advance: Callable[[str], None]
) -> tuple[dict[str, dict[str, int]], list[SampleSet]]:
    """Each arm's loops per cell and its sizes records, from its own interpreter."""
    loops, sizes = {}, []
    for arm, python in interpreters.items():
        worker = ArmProcess(arm, python)
        try:
            worker.send(dict(task, mode="calibrate"))
            assert worker.process.stdin is not None  # stdin=PIPE
            worker.process.stdin.close()
            result = worker.result()
        finally:
            worker.close()
        for record in result["sizes"]:
            expected = task["payload_digests"][record["profile"]][payload_identity.PARAM]
            if record["params"].get(payload_identity.PARAM) != expected:
                raise EvbenchError(
                    f"arm {arm!r} made another payload set of {record['profile']} "
                    f"({record['params'].get(payload_identity.PARAM)}, not {expected}): "
                    "its arms would not measure the same messages"
                )
            sizes.append(_relabel(record, arm))
        loops[arm] = result["loops"]
        advance(f"calibrated arm {arm}")
    return loops, sizes


def round_turns(
    arm_names: Sequence[str], codec_names: Sequence[str], round_number: int
) -> list[tuple[str, list[list[str]]]]:
    """One round's turns: (arm, its steps in order), as the managing process hands them
    out; consecutive steps of one arm are one turn.

    A step is ``[codec, operation]`` (take the round's sample) or ``[codec, operation,
    "prime"]`` (run it untimed first): the codec suite's `codec.round_steps` over the
    cells "codec@arm", so each operation's first sample is primed by the same operation
    of the cell timed last in it, which may be another arm's. Without the prime the
    first arm of a pair followed another operation and the second its own, warm: the
    A/A role bias the codec suite had (issue 43, item 5), here between arms.
    """
    by_label = {
        (arms.label(codec, arm), op): (arm, codec, op)
        for arm in arm_names
        for codec in codec_names
        for op in OPERATIONS
    }
    turns: list[tuple[str, list[list[str]]]] = []

    def add(arm: str, step: list[str]) -> None:
        if not turns or turns[-1][0] != arm:
            turns.append((arm, []))
        turns[-1][1].append(step)

    for primer, key in round_steps(list(by_label), round_number):
        if primer is not None:
            arm, codec, op = by_label[primer]
            add(arm, [codec, op, PRIME])
        arm, codec, op = by_label[key]
        add(arm, [codec, op])
    return turns


def _replicate(
    context: RunContext,
    interpreters: dict[str, str],
    tasks: dict[str, dict[str, Any]],
    worker: int,
) -> list[SampleSet]:
    """One replicate: a process per arm, taking turns within every round."""
    spec, plan = context.spec, context.spec.plan
    rounds = plan.warmups + plan.values
    processes = {arm: ArmProcess(arm, python) for arm, python in interpreters.items()}
    sample_sets: list[SampleSet] = []
    try:
        for arm, process in processes.items():
            process.send(tasks[arm])
        for profile in spec.profiles:
            for process in processes.values():
                process.ask({"begin": profile}, "ready")
            started_ns = time.monotonic_ns()
            for round_number in range(rounds):
                # Replicates alternate which arm leads their first recorded round, as the
                # codec suite's workers alternate codecs.
                order = round_number - plan.warmups + worker
                for arm, turn in round_turns(list(processes), spec.codecs, order):
                    processes[arm].ask({"round": round_number, "cells": turn}, "done")
            ended_ns = time.monotonic_ns()
            for process in processes.values():
                process.ask({"end": profile}, "ended")
            for event, t_ns in (("start", started_ns), ("end", ended_ns)):
                context.mark(event, t_ns, suite=SUITE, profile=profile, worker=worker)
            context.progress.advance(f"worker {worker + 1}: {profile}")
        for arm, process in processes.items():
            process.send({"finish": True})
            result = process.result()
            sample_sets += [_relabel(item, arm) for item in result["sample_sets"]]
    finally:
        for process in processes.values():
            process.close()
    return sample_sets


def run(context: RunContext) -> None:
    """The codec suite's run with `spec.arms`: calibrate and size per arm, then replicates.

    The task and params are the codec suite's own, so an arm's worker measures exactly
    what a codec worker would.
    """
    spec, plan, progress = context.spec, context.spec.plan, context.progress
    task, params = make_task(spec), timed_params(spec)
    assert spec.arms is not None  # the codec suite runs this only for a spec with arms
    interpreters = {arm: arms.interpreter(where) for arm, where in spec.arms.items()}
    progress.start(SUITE, len(interpreters) + plan.processes * len(spec.profiles))
    used = range(min(spec.payloads, plan.processes * (plan.warmups + plan.values)))
    loops, sizes = _calibrate(interpreters, dict(task, indices=list(used)), progress.advance)
    context.writer.add(sizes)
    # Identity: the primed order (issue 43) began new series, as in the codec suite.
    params = dict(
        params,
        order="arms, codecs and operations A B / B A by round and replicate, each primed",
    )
    for worker in range(plan.processes):
        tasks = {
            arm: dict(
                task,
                mode="measure",
                worker=worker,
                loops=loops[arm],
                values=plan.values,
                warmups=plan.warmups,
                params=params,
            )
            for arm in interpreters
        }
        context.mark("start", suite=SUITE, worker=worker)  # the cool-down guard waits here
        before = contention.take()
        sample_sets = _replicate(context, interpreters, tasks, worker)
        found = contention.figures(before, contention.take())
        context.mark("end", suite=SUITE, worker=worker)
        context.writer.add(sample_sets)
        # The machine around the replicate (all its arms' processes), as the codec suite
        # records it around a worker: the table marks rows measured on a busy machine.
        context.writer.add(
            SampleSet(SUITE, None, None, metric, "percent", {"kind": "worker"}, [value], worker)
            for metric, value in found.items()
        )
    progress.finish()
