"""The report's "Does it fit at N Hz?": the bus budget of the run's measured sizes.

The computation is the agent's (evbench_agent.buses.measured), the cells are
buses/render.py's: `evbench budget`, `evbench run` and the report say the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evbench_agent.buses import budget, measured, render
from evbench_agent.buses.budget import Row

#: The rate when the manifest does not say one (the seed app's 20 Hz).
DEFAULT_RATE_HZ = 20.0


def rate_of(manifest: Mapping[str, Any]) -> float:
    """The run's message rate: the link suite's, 20 Hz by default."""
    rate = (manifest.get("spec") or {}).get("link_rate_hz")
    return float(rate) if isinstance(rate, (int, float)) and rate > 0 else DEFAULT_RATE_HZ


def budget_of(
    manifest: Mapping[str, Any],
    records: list[dict[str, Any]],
    ceiling: float = budget.DEFAULT_CEILING,
) -> tuple[list[Row], list[measured.Skipped], float]:
    """The run's budget rows, what they leave out, and the rate they are for."""
    rate = rate_of(manifest)
    rows, skipped = measured.from_records(records, rate, ceiling)
    return rows, skipped, rate


def text(manifest: Mapping[str, Any], records: list[dict[str, Any]]) -> str | None:
    """The terminal's budget after `evbench run`'s table; None when no sizes were measured."""
    rows, skipped, rate = budget_of(manifest, records)
    if not rows and not skipped:
        return None
    lines = [render.render_measured(rows, rate)] if rows else []
    lines += [f"not budgeted: {item.codec} on {item.profile} ({item.reason})" for item in skipped]
    return "\n".join(lines)


def table_rows(rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    """Headers and cells for the report's table: the profile first, then render's cells."""
    return ["profile", *render.HEADERS], [[row.profile, *render.cells(row)] for row in rows]
