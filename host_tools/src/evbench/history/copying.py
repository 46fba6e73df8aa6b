"""`evbench history copy FROM TO`: every run and every acceptance of one store into another.

Copying is adding: a run already in the target is a no-op, so a copy that was
interrupted can simply be run again, and two stores can be merged.
"""

from __future__ import annotations

from dataclasses import dataclass

from evbench.history.store import Store


@dataclass(frozen=True)
class Copied:
    added: int
    already: int
    acceptances: int


def copy(source: Store, target: Store) -> Copied:
    added = already = 0
    for run in source.runs():
        if target.add(source.dump_run(run["run_id"])):
            added += 1
        else:
            already += 1
    acceptances = source.acceptances()
    for acceptance in acceptances:
        target.add_acceptance(acceptance)
    return Copied(added, already, len(acceptances))
