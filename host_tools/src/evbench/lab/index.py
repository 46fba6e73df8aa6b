"""lab.json: what ran where, its status, exit code, duration and the failure's one line.

Written atomically after every change (a reader in another terminal sees the old or the
new index, never half), from the runner's threads under one lock.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from evbench.lab.plan import Entry
from evbench_core import json_schema, results
from evbench_core.errors import FormatError, UserError

INDEX = "lab.json"
#: Every key and type of lab.json; a reader checks a file against it (docs/lab.md's table
#: is generated from it).
SCHEMA = json_schema.load("evbench.lab", "lab-index.schema.json")
FORMAT = SCHEMA["properties"]["format"]["const"]
#: An entry's states, in order; all but the first two are final. "interrupted": the lab
#: was stopped during the entry (its partial run kept); "not run": stopped before it.
STATES = tuple(SCHEMA["$defs"]["entry"]["properties"]["status"]["enum"])
FINAL_STATES = STATES[2:]


class LabIndex:
    def __init__(self, directory: Path, plan_file: Path, entries: list[Entry]) -> None:
        self.path = directory / INDEX
        self._lock = threading.Lock()
        self.document: dict[str, Any] = {
            "format": FORMAT,
            "plan": str(plan_file),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "finished": None,
            "interrupted": None,
            "runner": runner_record(os.getpid()),
            "entries": [
                {
                    "id": entry.id,
                    "board": entry.board.label,
                    "url": entry.board.url,
                    "suite": entry.suite,
                    "profile": entry.profile,
                    "codecs": entry.codecs,
                    "options": list(entry.options),
                    "status": "pending",
                    "exit_code": None,
                    "duration_s": None,
                    "attempts": 0,
                    "run_dir": None,
                    "error": None,
                    "comparison": None,
                }
                for entry in entries
            ],
        }
        self._write()

    def update(self, entry_id: str, **fields: Any) -> None:
        with self._lock:
            row = next(r for r in self.document["entries"] if r["id"] == entry_id)
            row.update(fields)
            self._write()

    def finish(self, interrupted: bool | None = None) -> None:
        """The lab is over: every entry still pending or running gets its final state."""
        with self._lock:
            for row in self.document["entries"]:
                if row["status"] == "pending":
                    row["status"] = "not run"
                elif row["status"] == "running":  # its thread ended without saying: a bug
                    row["status"] = "failed"
            self.document["interrupted"] = interrupted
            self.document["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self._write()

    def _write(self) -> None:
        results.write_json(self.path, self.document)


def _start_time(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch, as psutil reads it from the
    kernel), or None when no such process runs here."""
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, OSError):
        return None


def runner_record(pid: int) -> dict[str, Any]:
    """lab.json's `runner`: the process writing the index, so a reader can tell a lab
    still running from one whose runner was killed (SIGKILL leaves `finished` null)."""
    return {"pid": pid, "start_time": _start_time(pid), "host": socket.gethostname()}


#: Two readings of one process's start time differ by the kernel's clock tick at most.
START_TIME_TOLERANCE_S = 0.05


def runner_gone(document: dict[str, Any]) -> str | None:
    """Why an unfinished lab's runner no longer runs (killed before it could finish
    lab.json), or None while it runs, on another host (not checked from here), when the
    lab has finished, or when an older lab.json does not name its runner."""
    runner = document.get("runner")
    if document.get("finished") or not runner or runner["host"] != socket.gethostname():
        return None
    pid, started = runner["pid"], runner.get("start_time")
    now = _start_time(pid)
    if now is None:
        return f"its runner, PID {pid} on {runner['host']}, no longer runs"
    if started is not None and abs(now - started) > START_TIME_TOLERANCE_S:
        return (
            f"its runner, PID {pid} on {runner['host']}, no longer runs "
            "(another process has that PID now)"
        )
    return None


def parse(document: Any, path: Path | str) -> dict[str, Any]:
    """lab.json's content when it has the schema's keys and types; FormatError naming the
    first field that does not (a damaged or hand-edited file), never a crash later."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise FormatError(f"{path} is not a lab index evbench {FORMAT} knows")
    json_schema.validate(document, SCHEMA, str(path), FormatError)
    return document


def read(directory: Path) -> dict[str, Any]:
    path = directory / INDEX
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{directory} is not a lab directory (no {INDEX})") from None
    except (OSError, ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        why = str(error)[:200] or "nested too deeply"
        raise FormatError(f"cannot read {path}: {why}") from None
    return parse(document, path)
