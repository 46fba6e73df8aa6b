"""`evbench history copy FROM TO`: every run and every acceptance of one store into another.

Copying is adding: a run already in the target is a no-op, so a copy that was
interrupted can simply be run again, and two stores can be merged. A run the
target refuses (another run under its id) does not stop the others, as in
`history add`; its acceptances stay behind with it, since in the target they
would mark the other run.
"""

from __future__ import annotations

from dataclasses import dataclass

from evbench.history.store import Store
from evbench_core.errors import EvbenchError


@dataclass(frozen=True)
class Copied:
    added: int
    already: int
    acceptances: int
    #: Why each run that was not copied was refused.
    refused: tuple[EvbenchError, ...] = ()


def copy(source: Store, target: Store) -> Copied:
    added = already = 0
    refused: list[EvbenchError] = []
    left_behind: set[str] = set()
    for run in source.runs():
        try:
            if target.add(source.dump_run(run["run_id"])):
                added += 1
            else:
                already += 1
        except EvbenchError as error:
            refused.append(error)
            left_behind.add(run["run_id"])
    acceptances = [row for row in source.acceptances() if row["run_id"] not in left_behind]
    for acceptance in acceptances:
        target.add_acceptance(acceptance)
    return Copied(added, already, len(acceptances), tuple(refused))
