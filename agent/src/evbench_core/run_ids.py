"""Run ids: a UTC time stamp and a random tail, so ids sort by time and never collide.

Its own small module: the host names a run before anything heavy loads.
"""

from __future__ import annotations

import datetime
import os


def new_run_id() -> str:
    """A new run id such as 20260101T120000Z-a1b2c3."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{os.urandom(3).hex()}"


__all__ = ["new_run_id"]
