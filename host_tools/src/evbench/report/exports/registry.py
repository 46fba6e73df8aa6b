"""The exports' registry: `@export(FILE)` declares the function that makes FILE.

Each export module of this package declares its file so; `collect` imports them all
(the package's `__init__` calls it), so a new export is one new module and no list to
extend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from evbench_core import extensions

if TYPE_CHECKING:
    from evbench.report.context import RunContext
    from evbench_core.comparison import Comparison

#: What an export is made from: the run, and its comparison (None when it has none).
Maker = Callable[["RunContext", "Comparison | None"], bytes]


@dataclass(frozen=True)
class Export:
    """A file written beside a run's results, declared by `@export` on its maker."""

    file: str
    make: Maker


_EXPORTS: dict[str, Export] = {}


def export(file: str) -> Callable[[Maker], Maker]:
    """Register the decorated function as the maker of `file` (a file given twice is a bug)."""

    def register(make: Maker) -> Maker:
        if file in _EXPORTS:
            raise ValueError(f"export {file!r} is registered twice")
        _EXPORTS[file] = Export(file, make)
        return make

    return register


def registered() -> tuple[Export, ...]:
    """Every export, in the order they were declared."""
    return tuple(_EXPORTS.values())


#: This package's modules that declare no export: the registry itself; a module whose
#: name starts with `_` is a helper, not collected either.
NOT_EXPORTS = frozenset({"registry"})


def collect(path: Iterable[str], package: str) -> None:
    """Import every export module of `package` (at `path`), by name; each declares its
    file with `@export` as it is imported (a module that declares none is a bug)."""

    def declares(module: ModuleType) -> bool:
        return any(entry.make.__module__ == module.__name__ for entry in _EXPORTS.values())

    extensions.collect(path, package, "export (no @export in it)", declares, skip=NOT_EXPORTS)
