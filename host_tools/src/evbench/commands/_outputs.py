"""Files and folders a command writes where the user said (--csv, --junit, --out).

A path that cannot be written (no such folder, a file where a folder belongs, a
read-only disk) is the user's to fix: one error line naming the option, never an
internal error. A file is never written into a run the command reads: it would
replace one of the run's own files and break its checksums.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from evbench_core.errors import UserError
from evbench_core.results import write_atomic


def make_directory(path: Path, option: str) -> None:
    """Create the folder `path` (given as `option`) and its parents, or accept it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(
            f"cannot create {option} {path}: {error.strerror or error}",
            hint="give a path whose folders can be created (not under a file, not read-only)",
        ) from None


def write_file(path: Path, data: bytes, option: str, runs_read: Iterable[Path] = ()) -> None:
    """Write `data` to `path` (given as `option`) atomically; never inside `runs_read`."""
    target = path.resolve()
    for run in runs_read:
        if run.resolve() in (target, *target.parents):
            raise UserError(
                f"{option} {path} is inside the run {run}, which this command reads; "
                "nothing was written",
                hint=f"give {option} a path outside the runs",
            )
    try:
        write_atomic(path, data)
    except OSError as error:
        raise UserError(
            f"cannot write {option} {path}: {error.strerror or error}",
            hint=f"give {option} a path in an existing, writable folder",
        ) from None


__all__ = ["make_directory", "write_file"]
