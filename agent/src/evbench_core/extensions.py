"""Extensions found where they live (docs/contributing.md).

Every kind that users extend (codecs, payload profiles, board transports,
exports) is a package whose modules each declare their own as they are imported:
a decorator (`@codec`, `@scheme`, `@export`) or a module attribute (`PROFILE`).
The package collects its modules with `collect`, so a new one is one new module
and no list to extend. A module whose name starts with `_` is a helper of the
others, not collected; a module that declares nothing is a bug, refused by name.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Collection, Iterable
from types import ModuleType


def collect(
    path: Iterable[str],
    package: str,
    what: str,
    declares: Callable[[ModuleType], bool],
    *,
    first: Collection[str] = (),
    skip: Collection[str] = (),
) -> list[ModuleType]:
    """Import every module of `package` (found at `path`, its `__path__`): those named
    in `first` in that order, then the others by name, leaving out `skip` and the `_`
    helpers. `declares(module)` says whether a module declared its `what`; one that did
    not is a RuntimeError ("PACKAGE.NAME declares no WHAT")."""
    names = sorted(
        found.name
        for found in pkgutil.iter_modules(path)
        if found.name not in skip and not found.name.startswith("_")
    )
    ordered = [name for name in first if name in names] + [n for n in names if n not in first]
    modules = []
    for name in ordered:
        module = importlib.import_module(f"{package}.{name}")
        if not declares(module):
            raise RuntimeError(f"{module.__name__} declares no {what}")
        modules.append(module)
    return modules


__all__ = ["collect"]
