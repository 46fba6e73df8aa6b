"""Run ids: a UTC time stamp and a random tail, so ids sort by time and never collide;
and the check of an id given by hand (`evbench fetch RUN_ID`, `evbench-agent run --run-id`).

Its own small module: the host names a run before anything heavy loads.
"""

from __future__ import annotations

import datetime
import os

from evbench_core.errors import UserError

#: Longer is no id `new_run_id` gives (23 characters): refused (a board's file names end
#: at 255 bytes: UTF-8 bytes are counted), and echoed cut to this many characters.
MAX_RUN_ID = 100


def new_run_id() -> str:
    """A new run id such as 20260101T120000Z-a1b2c3."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{os.urandom(3).hex()}"


def check_run_id(run_id: str) -> None:
    """Refuse (UserError) what is no run id. An id names the run's directory: one name
    (no `/`, so `../x` cannot climb out of results/), printable, not hidden, short."""
    if (
        run_id
        and run_id.isprintable()  # no control character, no byte that is no UTF-8
        and len(run_id.encode()) <= MAX_RUN_ID
        and "/" not in run_id
        and not run_id.startswith(".")
    ):
        return
    shown = repr(run_id)
    if len(shown) > MAX_RUN_ID:
        shown = f"{shown[:MAX_RUN_ID]}... ({len(run_id)} characters)"
    raise UserError(f"not a run id: {shown}", hint="give the id `evbench run` printed")


__all__ = ["MAX_RUN_ID", "check_run_id", "new_run_id"]
