"""Runs the suites of a spec into a results directory, complete or partial."""

from __future__ import annotations

import datetime
import os
import signal
from pathlib import Path
from typing import Any

from evbench_agent import platform_info, suites
from evbench_agent.progress import Progress
from evbench_agent.results import RunWriter
from evbench_agent.spec import Spec


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def new_run_id() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{os.urandom(3).hex()}"


def _raise_interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run(spec: Spec, directory: Path, run_id: str, progress: Progress) -> None:
    """Measure every suite of `spec` into `directory`.

    SIGTERM is handled like Ctrl-C. Whatever stops the run, the samples
    measured so far are kept, summarized and checksummed, and the run is left
    without its `complete` marker.
    """
    writer = RunWriter(directory, run_id)
    manifest = {
        "spec": spec.as_dict(),
        "quick": spec.quick,
        "start_time": _now(),
        "end_time": None,
        "status": "running",
        "platform": platform_info.collect(),
        "gc": "enabled" if spec.gc else "disabled during timing (--no-gc)",
        "affinity": spec.cpu,
        "pid": os.getpid(),
    }
    writer.write_manifest(manifest)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    status = "interrupted"
    try:
        context = suites.RunContext(spec, writer, progress)
        for suite in spec.suites:
            suites.load(suite).run(context)
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except BaseException:
        status = "failed"
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        manifest.update(end_time=_now(), status=status)
        writer.write_manifest(manifest)
        writer.finish(complete=status == "complete")
