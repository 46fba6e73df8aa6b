"""An arm's worker process (`python -m evbench_agent.arm_worker`), under the arm's Python.

Unlike a codec worker, which runs all its rounds alone, an arm's worker takes its
samples when the managing process says so, so that the arms' processes of one
replicate take turns within every round (evbench_agent.suites.codec_arms). JSON
lines on standard input and output; the first input line is the task:

- mode ``calibrate``: the loops of every cell and the encoded sizes, computed here,
  under this arm's libraries; one result line, then exit;
- mode ``measure``: then commands, one a line, each answered by one line:
  ``{"begin": PROFILE}`` builds the profile's cells (``{"ready": PROFILE}``);
  ``{"round": R, "cells": [[CODEC, OPERATION], ...]}`` takes round R's sample of
  those cells in that order (``{"done": R}``); a cell ``[CODEC, OPERATION, "prime"]``
  runs instead untimed, a short run on round R's payload (`codec.prime`), so that the
  next sample, perhaps another arm's, follows the same operation; ``{"end": PROFILE}`` closes the
  profile (``{"ended": PROFILE}``); ``{"finish": true}`` answers the result and exits.

Only the codec suite's own timing code runs here (suites/codec.py); the time
between commands is never inside a sample.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from typing import Any, NamedTuple, TextIO

from evbench_agent.platform import memory
from evbench_agent.suites import codec


class _SizePlan(NamedTuple):
    """The task's part that codec.sizes reads (codec.SizePlan)."""

    profiles: list[str]
    codecs: list[str]
    payloads: int
    seed: int


def _write(stdout: TextIO, message: dict[str, Any]) -> None:
    stdout.write(json.dumps(message) + "\n")
    stdout.flush()


def _calibrate(task: dict[str, Any], stdout: TextIO) -> None:
    loops = codec.worker_main(dict(task, mode="calibrate"), lambda what: None)
    plan = _SizePlan(
        profiles=task["profiles"],
        codecs=task["codecs"],
        payloads=task["payloads"],
        seed=task["seed"],
    )
    sizes = [sample_set.as_dict() for sample_set in codec.sizes(plan)]
    result = {"loops": loops, "sizes": sizes}
    _write(stdout, {"result": result, "peak_rss_bytes": memory.peak_rss_bytes()})


def _measure(task: dict[str, Any], stdin: TextIO, stdout: TextIO) -> None:
    if task.get("cpu") is not None:
        os.sched_setaffinity(0, {task["cpu"]})
    warmups, min_ns = task["warmups"], task["min_time"] * 1e9
    cells: dict[tuple[str, str], Any] = {}
    profile = ""  # set by the first "begin"
    sample_sets: list[dict[str, Any]] = []
    for line in stdin:
        command = json.loads(line)
        if "begin" in command:
            profile = command["begin"]
            cells = codec.prepare_cells(task, profile)
            gc.collect()
            if not task["gc"]:
                gc.disable()
            _write(stdout, {"ready": profile})
        elif "round" in command:
            round_number = command["round"]
            for step in command["cells"]:
                cell = cells[(step[0], step[1])]
                if step[2:] == ["prime"]:  # untimed: what the next cell's sample follows
                    codec.prime(cell, round_number)
                else:
                    codec.take_round_sample(cell, round_number, warmups, min_ns, 0.0)
            _write(stdout, {"done": round_number})
        elif "end" in command:
            gc.enable()
            sample_sets += codec.cell_sample_sets(task, profile, cells)
            _write(stdout, {"ended": profile})
        elif command.get("finish"):
            result = {"sample_sets": sample_sets}
            _write(stdout, {"result": result, "peak_rss_bytes": memory.peak_rss_bytes()})
            return
        else:
            raise ValueError(f"an arm worker got an unknown command: {line[:200]!r}")
    raise EOFError("the managing process closed the arm worker's input before finishing")


def serve(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
    task = json.loads(stdin.readline())
    if task["mode"] == "calibrate":
        _calibrate(task, stdout)
    else:
        _measure(task, stdin, stdout)


if __name__ == "__main__":
    serve()
