"""The built-in payload profiles: every module of this package declares some.

A module here declares `PROFILE` (one `Profile`) or `PROFILES` (a list of them),
and `declared()` collects them all, so that a new profile is one new module and
no list to extend. They are collected when evbench_agent.payloads is first
imported, which a run and `run --help` do and `evbench-agent --help` does not.
"""

from __future__ import annotations

import importlib
import pkgutil

from evbench_agent.payloads.profile import Profile

#: The modules listed first, in this order (the table compares seed and ev-full); the
#: others follow by name.
FIRST = ("seed", "ev_full")


def declared() -> list[Profile]:
    """Every profile the modules of this package declare."""
    names = sorted(module.name for module in pkgutil.iter_modules(__path__))
    ordered = [name for name in FIRST if name in names] + [n for n in names if n not in FIRST]
    profiles: list[Profile] = []
    for name in ordered:
        module = importlib.import_module(f"{__name__}.{name}")
        found = [getattr(module, "PROFILE", None), *getattr(module, "PROFILES", ())]
        if found == [None]:
            raise RuntimeError(f"{module.__name__} declares no PROFILE or PROFILES")
        profiles += [profile for profile in found if profile is not None]
    return profiles
