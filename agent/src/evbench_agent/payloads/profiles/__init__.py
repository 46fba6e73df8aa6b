"""The built-in payload profiles: every module of this package declares some.

A module here declares `PROFILE` (one `Profile`) or `PROFILES` (a list of them),
and `declared()` collects them all, so that a new profile is one new module and
no list to extend. They are collected when evbench_agent.payloads is first
imported, which a run and `run --help` do and `evbench-agent --help` does not.
"""

from __future__ import annotations

from types import ModuleType

from evbench_agent.payloads.profile import Profile
from evbench_core import extensions

#: The modules listed first, in this order (the table compares seed and ev-full); the
#: others follow by name.
FIRST = ("seed", "ev_full")


def _found(module: ModuleType) -> list[Profile]:
    found = [getattr(module, "PROFILE", None), *getattr(module, "PROFILES", ())]
    return [profile for profile in found if profile is not None]


def declared() -> list[Profile]:
    """Every profile the modules of this package declare."""
    what = "PROFILE or PROFILES"
    modules = extensions.collect(__path__, __name__, what, lambda m: bool(_found(m)), first=FIRST)
    return [profile for module in modules for profile in _found(module)]
