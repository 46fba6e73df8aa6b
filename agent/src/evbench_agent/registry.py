"""Benchmark suites, by name: the one place that knows which suites exist.

A suite is a module of `suites/` (or a package there, one module per concept)
that declares `SUITE = "name"` at its top level: the registry finds each by
reading the files of `suites/`, without importing them, so a new suite is one
new module and no list to extend. Each suite module has `SUITE`,
`run(context)` and `planned_seconds(spec)`, and may have `preflight(spec)`
(checks and warnings before the run writes anything); one that runs work in
worker processes also has `worker_main(task, emit)`, which
`evbench_agent.processes.workers` reaches through `load`. A suite module is imported only
when a run uses it, so the agent starts fast and a suite whose optional parts
are missing does not break the others. This module imports none of the
agent's: the spec (which validates suite names) and the workers (which
dispatch by suite name) both depend on it, and it on neither.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from evbench_core.analysis.identity import TELEMETRY

#: The package whose modules are the suites.
SUITES = "evbench_agent.suites"
#: A suite's declaration: a line of its module (or of a module of its package).
DECLARATION = re.compile(r'^SUITE = "([a-z][a-z0-9-]*)"$', re.MULTILINE)


def _declares(path: Path) -> list[str]:
    return DECLARATION.findall(path.read_text(encoding="utf-8"))


def declared(directory: Path, package: str = SUITES) -> dict[str, str]:
    """Suite name -> module of every suite the files in `directory` (the package
    `package`) declare, by module name: a module's own, or a package's (any of its
    modules may declare it; the package is the suite's module). A name starting
    with `_` is a helper, not read."""
    found: dict[str, str] = {}
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith(("_", ".")):
            continue
        if entry.suffix == ".py" and entry.is_file():
            names = _declares(entry)
        elif (entry / "__init__.py").is_file():
            names = [name for inner in sorted(entry.glob("*.py")) for name in _declares(inner)]
        else:
            continue
        module = f"{package}.{entry.stem}"
        for name in names:
            if found.setdefault(name, module) != module:
                raise RuntimeError(f"suite {name!r} is declared by {found[name]} and {module}")
    return found


def _suites_directory() -> Path:
    # find_spec imports evbench_agent, not the suites: their package runs nothing here.
    spec = importlib.util.find_spec(SUITES)
    if spec is None or spec.submodule_search_locations is None:
        raise RuntimeError(f"{SUITES} is not a package here")
    return Path(next(iter(spec.submodule_search_locations)))


#: Suite name -> module, in the order a run takes them (by module name).
REGISTRY = declared(_suites_directory())
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
