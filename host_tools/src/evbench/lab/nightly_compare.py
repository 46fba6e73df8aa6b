"""Each lab entry against that board's previous run, from the history store.

The previous run is the newest complete run in the history of the same board identity
(a labgrid place: `place:NAME`) that measured the same profiles and codecs with the same
sample plan, and whose run directory is still on disk. The comparison is `evbench
compare --baseline PREVIOUS NEW` itself, so its criteria (5 % or a criteria file) and its
exit code 3 decide what a regression is; its table is kept beside the lab's logs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from evbench_agent import results
from evbench_agent.errors import EvbenchError, ExitCode

COMPARE_TIMEOUT = 600.0


def previous_run(out: Path) -> dict[str, Any] | None:
    """The history's row of the board's previous comparable run, or None."""
    from evbench.history import default_url, open_store

    manifest = json.loads((out / results.MANIFEST).read_text(encoding="utf-8"))
    run_id = manifest.get("run_id")
    with open_store(default_url(None)) as store:
        this = store.run(run_id) if run_id else None
        if this is None:
            return None
        candidates = [
            row
            for row in store.runs(board=this["board"])
            if row["run_id"] != run_id
            and not row["partial"]
            and row["start_time"] < this["start_time"]
            and (row["profiles"], row["codecs"], row["quick"])
            == (this["profiles"], this["codecs"], this["quick"])
            and row.get("directory")
            and Path(row["directory"]).is_dir()
        ]
    return candidates[-1] if candidates else None


def against_previous(out: Path, table: Path) -> dict[str, Any]:
    """{baseline, regressed, exit_code, table} for lab.json; no baseline: the first night."""
    try:
        previous = previous_run(out)
    except (EvbenchError, OSError, ValueError) as error:
        return {"baseline": None, "regressed": False, "note": f"no history: {error}"}
    if previous is None:
        return {"baseline": None, "regressed": False, "note": "no previous run of this board"}
    argv = [
        sys.executable,
        "-m",
        "evbench",
        "compare",
        "--baseline",
        previous["directory"],
        str(out),
    ]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=COMPARE_TIMEOUT, stdin=subprocess.DEVNULL
    )
    table.parent.mkdir(parents=True, exist_ok=True)
    results.write_atomic(table, (done.stdout + done.stderr).encode())
    return {
        "baseline": previous["directory"],
        "baseline_run_id": previous["run_id"],
        "regressed": done.returncode == ExitCode.CHECK_FAILED,
        "exit_code": done.returncode,
        "table": str(table),
    }
