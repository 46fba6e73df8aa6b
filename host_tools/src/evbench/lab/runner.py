"""Run a lab plan: one board's entries one after another, different boards in parallel.

Each entry is an ordinary `evbench run` in a child process (its own place, its own
Ctrl-C handling, its own exit code) writing an ordinary run directory under the lab
directory. A failing board does not stop the others. A transient failure (the place
taken, the connection lost) is retried up to the plan's `retries`, each attempt in a
directory of its own (a partial attempt is kept); an entry's own exit 130 (its run
stopped by a signal the lab did not get) fails that entry alone and is not retried. A
complete entry is compared with that board's previous run from the history store
(nightly_compare.py).

Ctrl-C, SIGTERM or SIGHUP stops the lab as a whole: no entry or attempt starts after
it, each running entry's `evbench run` gets SIGTERM (it stops its board's run, keeps it
partial and releases its place; killed if it has not ended in CHILD_STOP_TIMEOUT), and
lab.json is finished with every entry's state, so the lab page can be written.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TextIO

from evbench.lab import nightly_compare
from evbench.lab.index import LabIndex
from evbench.lab.plan import Entry, Plan
from evbench_core import results
from evbench_core.errors import ExitCode
from evbench_core.log_output import notice

#: One entry's run may take this long before it is stopped (a full run on a slow board).
ENTRY_TIMEOUT = 4 * 3600.0
#: What makes a failure worth another attempt: the board or its place, not the benchmark.
TRANSIENT_MARKERS = ("gave up waiting for", "dropped", "ConnectionLost", "connection lost")
MAX_PARALLEL_BOARDS = 16
#: After the lab is stopped: how long a running entry may take to stop its board's run,
#: fetch it and release its place before it is killed.
CHILD_STOP_TIMEOUT = 120.0
WAIT_STEP = 0.5


def _one_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("evbench: error:")]
    return (errors or lines or ["no output"])[-1][:300]


def _transient(code: int, stderr: str) -> bool:
    if code == ExitCode.INTERRUPTED:  # a signal stopped it on purpose: not a flaky board
        return False
    return code == ExitCode.PARTIAL or any(marker in stderr for marker in TRANSIENT_MARKERS)


class LabRun:
    def __init__(self, plan: Plan, directory: Path, index: LabIndex) -> None:
        self.plan = plan
        self.directory = directory
        self.index = index
        self._stopped = threading.Event()  # set by an interrupt: nothing new starts

    def run(self) -> int:
        boards: dict[str, list[Entry]] = {}
        for entry in self.plan.entries:
            boards.setdefault(entry.board.label, []).append(entry)
        workers = min(len(boards), MAX_PARALLEL_BOARDS)
        interrupted = False
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lab-board")
        try:
            futures = [pool.submit(self._board, entries) for entries in boards.values()]
            try:
                outcomes = [future.result() for future in futures]
            except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP (evbench.interrupts)
                interrupted = True
                self._stopped.set()
                notice("lab: interrupted; stopping the running entries and releasing their places")
                outcomes = [future.result() for future in futures]
        finally:
            self._stopped.set()
            pool.shutdown(wait=True)
            self.index.finish(interrupted=interrupted or None)
        if interrupted:
            return ExitCode.INTERRUPTED
        codes = [code for board in outcomes for code in board]
        if any(code not in (ExitCode.OK, ExitCode.CHECK_FAILED) for code in codes):
            return ExitCode.PARTIAL  # some entry did not complete
        if ExitCode.CHECK_FAILED in codes:
            return ExitCode.CHECK_FAILED  # every entry ran; a regression criterion failed
        return ExitCode.OK

    def _board(self, entries: list[Entry]) -> list[int]:
        codes = []
        for entry in entries:
            if self._stopped.is_set():
                self.index.update(entry.id, status="not run", error="the lab was stopped")
                codes.append(int(ExitCode.INTERRUPTED))
                continue
            codes.append(self._entry(entry))
        return codes

    def _entry(self, entry: Entry) -> int:
        started = time.monotonic()
        code, error, out = int(ExitCode.INTERNAL), "", None
        run_dir = None
        for attempt in range(1, self.plan.retries + 2):
            suffix = "" if attempt == 1 else f".attempt{attempt}"
            out = self.directory / "runs" / f"{entry.id}{suffix}"
            log = self.directory / "logs" / f"{entry.id}{suffix}.log"
            out.parent.mkdir(parents=True, exist_ok=True)
            log.parent.mkdir(parents=True, exist_ok=True)
            self.index.update(
                entry.id,
                status="running",
                attempts=attempt,
                run_dir=str(out.relative_to(self.directory)),
            )
            code, stderr = self._run_one(entry, out, log)
            error = "" if code == ExitCode.OK else _one_line(stderr)
            # lab.json names only a run directory that exists (an attempt refused before
            # its run started leaves none): this attempt's, else the last one's that does.
            if out.is_dir():
                run_dir = str(out.relative_to(self.directory))
            self.index.update(entry.id, run_dir=run_dir)
            # An entry's own 130 (its agent signalled on the board, say) fails that entry
            # alone: only a signal to the lab itself stops the lab (run()'s interrupt path;
            # Ctrl-C at a terminal reaches the lab as well as its entries). A run that holds
            # its `complete` marker is whole however its process ended (stopped at
            # ENTRY_TIMEOUT while drawing its report, say): another attempt measures nothing new.
            if (
                code == ExitCode.OK
                or (out / results.COMPLETE).is_file()
                or not _transient(code, stderr)
                or attempt > self.plan.retries
                or self._stopped.is_set()
            ):
                break
            notice(f"lab: {entry.id}: attempt {attempt} failed ({error}); retrying")
        statuses: dict[int, str] = {  # the exit code of `evbench run`
            ExitCode.OK: "complete",
            ExitCode.PARTIAL: "partial",
            ExitCode.INTERRUPTED: "interrupted",
        }
        status = statuses.get(code, "failed")
        if code != ExitCode.OK and out is not None and (out / results.COMPLETE).is_file():
            # Stopped after its measurement (rendering the report, say): the run holds
            # everything its plan asked for, which its `complete` marker says.
            status = "complete"
        comparison = None
        if code == ExitCode.OK and out is not None:
            comparison = nightly_compare.against_previous(
                out,
                self.directory / "logs" / f"{entry.id}.compare.txt",
                entry.run_argv(out, self.plan.place_timeout),  # its --history, if any
            )
            # compare fails (3) either way: a regression, or a gain beyond --max-change
            # (two runs that far apart may not measure the same thing); lab.html tells which.
            if comparison.get("regressed") or comparison.get("improved_beyond_max_change"):
                code = ExitCode.CHECK_FAILED
        self.index.update(
            entry.id,
            status=status,
            exit_code=int(code),
            duration_s=round(time.monotonic() - started, 1),
            error=error or None,
            comparison=comparison,
        )
        notice(f"lab: {entry.id}: {status} (exit {int(code)})")
        return int(code)

    def _run_one(self, entry: Entry, out: Path, log: Path) -> tuple[int, str]:
        argv = [sys.executable, "-m", "evbench", *entry.run_argv(out, self.plan.place_timeout)]
        with open(log, "w+", encoding="utf-8", errors="replace") as stream:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=stream, stderr=subprocess.STDOUT
            )
            try:
                code = self._wait(process, stream)
            finally:
                if process.poll() is None:  # an error here: leave no entry running
                    process.kill()
                    process.wait()
            stream.seek(0)
            return code, stream.read()

    def _wait(self, process: subprocess.Popen, stream: TextIO) -> int:
        """The entry's exit code; once the lab is stopped, SIGTERM, then SIGKILL if need be."""
        deadline = time.monotonic() + ENTRY_TIMEOUT
        stop_deadline = None
        while True:
            try:
                return process.wait(timeout=WAIT_STEP)
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if self._stopped.is_set() and stop_deadline is None:
                process.terminate()  # evbench run: stop, keep partial, release (exit 130)
                stop_deadline = now + CHILD_STOP_TIMEOUT
            if stop_deadline is not None and now > stop_deadline:
                process.kill()
                process.wait()
                stream.write(f"\nevbench: error: did not stop in {CHILD_STOP_TIMEOUT:.0f} s\n")
                return ExitCode.INTERRUPTED
            if now > deadline:
                process.kill()
                process.wait()
                stream.write(f"\nevbench: error: the entry did not end in {ENTRY_TIMEOUT:.0f} s\n")
                return ExitCode.PARTIAL
