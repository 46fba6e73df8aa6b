"""Payload profiles: deterministic, seeded data as plain Python and as protobuf.

A profile makes payload number i from a seed, as plain data (dicts, lists,
numbers, strings) for the JSON-family codecs, and converts it to the protobuf
message that carries the same values. Two runs with the same seed measure the
same bytes, whatever the machine.
"""

from __future__ import annotations

import os

from evbench_agent.payloads.profile import (
    DEFAULT_COUNT,
    DEFAULT_SEED,
    PROFILES,
    Payload,
    Profile,
)
from evbench_core.errors import UserError


def _registry() -> dict[str, Profile]:
    """The built-in profiles (each module of payloads/profiles/ declares its own), and a
    run's own message when this process is a worker or responder of a `--schema` run."""
    from evbench_agent.payloads import profiles

    registry: dict[str, Profile] = {}
    for profile in profiles.declared():
        if profile.name in registry:
            raise RuntimeError(f"profile {profile.name!r} is declared twice")
        registry[profile.name] = profile
    if os.environ.get("EVBENCH_AGENT_SCHEMA"):  # a worker or responder of a run with --schema
        from evbench_agent.payloads import user_schema

        inherited = user_schema.from_environment()
        if inherited is not None:
            registry[inherited.name] = inherited
    return registry


PROFILES.update(_registry())


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UserError(
            f"unknown profile {name!r}", hint=f"available: {', '.join(PROFILES)}"
        ) from None


__all__ = [
    "DEFAULT_COUNT",
    "DEFAULT_SEED",
    "PROFILES",
    "Payload",
    "Profile",
    "get",
    "json_style",
    "samples",
    "user_schema",
]
