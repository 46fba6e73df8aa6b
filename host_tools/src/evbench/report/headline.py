"""The first line of a partial run's report and of `evbench run`'s output.

A partial run opens with what cut it short, so nobody reads its tables as a
whole run: ``PARTIAL: the telemetry sampler died (signal 9, SIGKILL)``. The
reason is the manifest's own (`evbench_core.results.partial_reason`, cleaned
of control characters and capped: it may come from a board); without one, the
line says what the reader found instead (the manifest's status, missing files).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evbench_core import results

PREFIX = "PARTIAL: "


def partial_headline(
    manifest: dict[str, Any], missing: Sequence[str] = (), problems: Sequence[str] = ()
) -> str:
    """``PARTIAL: why`` for a run known to be partial (never empty)."""
    reason = results.partial_reason(manifest)
    if reason:
        return PREFIX + reason
    status = manifest.get("status")
    if status == "interrupted":
        return PREFIX + "the run was interrupted"
    if isinstance(status, str) and status not in ("complete", ""):
        shown = results.partial_reason({"reason": status}) or "?"
        return PREFIX + f"the manifest's status is {shown!r} and it gives no reason"
    if missing:
        return PREFIX + f"missing {', '.join(missing)}"
    if problems:
        return PREFIX + (results.partial_reason({"reason": problems[0]}) or "a damaged run")
    return PREFIX + "the run did not finish"
