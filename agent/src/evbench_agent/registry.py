"""Benchmark suites, by name: the one place that knows which suites exist.

Each suite module has `SUITE`, `run(context)` and `planned_seconds(spec)`, and
may have `preflight(spec)` (checks and warnings before the run writes anything);
one that runs work in worker processes also has `worker_main(task, emit)`,
which `evbench_agent.workers` reaches through `load`. A suite module is
imported only when a run uses it, so the agent starts fast and a suite whose
optional parts are missing does not break the others. This module imports
none of the agent's: the spec (which validates suite names) and the workers (which
dispatch by suite name) both depend on it, and it on neither.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from evbench_core.analysis.identity import TELEMETRY

#: Suite name -> module, in the order a run takes them.
REGISTRY = {
    "codec": "evbench_agent.suites.codec",
    "link": "evbench_agent.suites.link",
}
#: Every suite a record may name, in display order: the registry's, then telemetry.
RECORD_SUITES = (*REGISTRY, TELEMETRY)


def load(name: str) -> ModuleType:
    """The module of suite `name` (imported on first use)."""
    return importlib.import_module(REGISTRY[name])


def planned_seconds(spec: Any) -> dict[str, float]:
    """Each suite of `spec` with the seconds its plan should take on this machine."""
    return {name: float(load(name).planned_seconds(spec)) for name in spec.suites}


def preflight(spec: Any) -> list[str]:
    """What the suites of `spec` say before the run writes anything: one-line warnings
    (a suite module's optional `preflight(spec)`); a suite that cannot run at all
    raises its UserError here, so a bad device leaves no half-written run behind."""
    notes: list[str] = []
    for name in spec.suites:
        check = getattr(load(name), "preflight", None)
        if check is not None:
            notes += check(spec)
    return notes


__all__ = ["RECORD_SUITES", "TELEMETRY", "planned_seconds"]
