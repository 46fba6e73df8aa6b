"""Bus errors per link phase, for the terminal and the report.

Reads the link suite's context records of a bus interface's counters
(evbench_agent.telemetry.bus_stats: `bus_errors`, one value per phase, and a
`bus_counter` per counter) from the run's raw samples, where each phase is
its own sample set (`worker` is the phase's index): the summary pools the
phases, and a phase with errors must be named.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from evbench_agent.telemetry.bus_stats import (
    CAN_STATES,
    ERROR_COUNTERS,
    ERRORS_METRIC,
    METRIC,
)
from evbench_core.results import SampleSet

SUITE = "link"
#: At most this many flagged phases are listed one by one; the rest are counted.
MAX_LISTED = 20


@dataclass
class Phase:
    """One link phase over a bus: its error events and what they were."""

    profile: str
    codec: str
    index: int  # 0-based, as the samples' worker
    interface: str
    source: str
    errors: int = 0
    rises: dict[str, int] = field(default_factory=dict)  # error counters that rose
    state: str | None = None

    @property
    def flagged(self) -> bool:
        return self.errors > 0 or self.state not in (None, CAN_STATES[0])

    def what(self) -> str:
        """'bus_error +2, error_passive +1, state ERROR-PASSIVE'."""
        found = [f"{name} +{value}" for name, value in sorted(self.rises.items())]
        if self.state not in (None, CAN_STATES[0]):
            found.append(f"state {self.state}")
        return ", ".join(found) or f"{self.errors} error events"


def phases(samples: Iterable[SampleSet]) -> list[Phase]:
    """Every link phase that has bus counter records, in the order they ran."""
    found: dict[tuple[str, str, int], Phase] = {}
    details = []
    for sample in samples:
        if sample.suite != SUITE or sample.metric not in (ERRORS_METRIC, METRIC):
            continue
        key = (str(sample.profile), str(sample.codec), sample.worker)
        params = sample.params
        if sample.metric == ERRORS_METRIC and sample.values:
            found[key] = Phase(
                *key,
                interface=str(params.get("interface", "?")),
                source=str(params.get("counter_source", "?")),
                errors=round(sample.values[0]),
            )
        elif sample.values:
            details.append((key, str(params.get("counter")), round(sample.values[0])))
    for key, counter, value in details:
        phase = found.get(key)
        if phase is None:
            continue
        if counter in ERROR_COUNTERS and value > 0:
            phase.rises[counter] = value
        elif counter == "state" and 0 <= value < len(CAN_STATES):
            phase.state = CAN_STATES[value]
    return sorted(found.values(), key=lambda p: (p.index, p.profile, p.codec))


def _interfaces(found: list[Phase]) -> str:
    return ", ".join(sorted({f"{p.interface}, from {p.source}" for p in found}))


def summary_line(found: list[Phase]) -> str:
    flagged = [p for p in found if p.flagged]
    where = f"Bus counters ({_interfaces(found)})"
    if not flagged:
        return f"{where}: no error in any of the {len(found)} phases."
    return f"{where}: errors in {len(flagged)} of {len(found)} phases."


def text(samples: Iterable[SampleSet]) -> str | None:
    """The terminal's lines after `evbench run`'s tables; None without bus counters."""
    found = phases(samples)
    if not found:
        return None
    lines = [summary_line(found)]
    flagged = [p for p in found if p.flagged]
    for phase in flagged[:MAX_LISTED]:
        lines.append(f"  {phase.profile} {phase.codec} phase {phase.index + 1}: {phase.what()}")
    if len(flagged) > MAX_LISTED:
        lines.append(f"  ... and {len(flagged) - MAX_LISTED} more phases with errors")
    return "\n".join(lines)


HEADERS = ["Profile", "Codec", "Phase", "Interface", "Error events", "What rose"]


def table_rows(found: list[Phase]) -> list[list[str]]:
    """One row per phase with errors (every one: a report has room for them)."""
    return [
        [p.profile, p.codec, str(p.index + 1), p.interface, str(p.errors), p.what()]
        for p in found
        if p.flagged
    ]
