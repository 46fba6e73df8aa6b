"""Worker processes: each measurement runs in a fresh interpreter, as pyperf does.

Spreading samples over several processes captures the run-to-run spread
(memory layout, hash seeds, allocator state) that one process cannot show.
The manager sends a task as JSON on the worker's standard input; the worker
answers with JSON lines on its standard output: progress, then one result.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any, TextIO

from evbench_agent import registry
from evbench_agent.platform import memory
from evbench_agent.processes import child_exit
from evbench_core.errors import EvbenchError, ExitCode, PartialRun

ProgressCallback = Callable[[str], None]

#: The largest peak RSS (bytes) a worker of this process reported, for the manifest.
_peak_rss: list[int] = []


def worker_peak_rss() -> int | None:
    """The largest peak RSS of the workers run so far (bytes), or None if none ran."""
    return max(_peak_rss, default=None)


def note_peak_rss(value: Any) -> None:
    """Count the peak RSS (bytes) a worker started elsewhere reported (an arm's worker)."""
    if isinstance(value, int) and not isinstance(value, bool):
        _peak_rss.append(value)


def run_worker(task: dict[str, Any], on_progress: ProgressCallback) -> Any:
    """Run `task` in a new interpreter; return its result or raise with its stderr."""
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "evbench_agent", "worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        result = None
        assert process.stdin is not None and process.stdout is not None  # both PIPE
        try:
            # A worker killed before it read its task (the OOM killer, kill -9) breaks
            # the pipe: its exit status below says what happened, as for any other kill.
            with contextlib.suppress(BrokenPipeError):
                process.stdin.write(json.dumps(task))
            with contextlib.suppress(BrokenPipeError):
                process.stdin.close()
            for line in process.stdout:
                message = json.loads(line)
                if "progress" in message:
                    on_progress(message["progress"])
                elif "result" in message:
                    result = message["result"]
                    if isinstance(message.get("peak_rss_bytes"), int):
                        _peak_rss.append(message["peak_rss_bytes"])
            returncode = process.wait()
        except BaseException:
            process.kill()
            process.wait()
            raise
        finally:
            process.stdout.close()
        if child_exit.killed(returncode):  # the OOM killer, kill -9: not a bug, a cut-short run
            raise PartialRun(
                f"a {task.get('suite', '')} worker was killed ({child_exit.describe(returncode)})"
            )
        if returncode != 0 or result is None:
            errors.seek(0)
            tail = errors.read()[-2000:].strip()
            if returncode == ExitCode.PARTIAL:  # the worker's own PartialRun (a native harness)
                raise PartialRun(tail.removeprefix("evbench-agent: error: "))
            raise EvbenchError(
                f"a worker process failed (exit {returncode}): {tail or 'no output'}"
            )
        return result


def serve_task(stdin: TextIO, stdout: TextIO) -> None:
    """The worker side: read one task, run it, write progress and the result.

    The task names its suite; the suite's `worker_main(task, emit)` runs it.
    """
    task = json.load(stdin)
    handler = registry.load(task["suite"]).worker_main

    def emit(what: str) -> None:
        stdout.write(json.dumps({"progress": what}) + "\n")
        stdout.flush()

    result = handler(task, emit)
    peak = memory.peak_rss_bytes()  # measured by the kernel, after the work
    stdout.write(json.dumps({"result": result, "peak_rss_bytes": peak}) + "\n")
    stdout.flush()
