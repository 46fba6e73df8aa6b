"""Payload profiles: deterministic, seeded data as plain Python and as protobuf.

A profile makes payload number i from a seed, as plain data (dicts, lists,
numbers, strings) for the JSON-family codecs, and converts it to the protobuf
message that carries the same values. Two runs with the same seed measure the
same bytes, whatever the machine.
"""

from __future__ import annotations

import os

from evbench_agent.errors import UserError
from evbench_agent.payloads.profile import (
    DEFAULT_COUNT,
    DEFAULT_SEED,
    PROFILES,
    Payload,
    Profile,
)


def _registry() -> dict[str, Profile]:
    from evbench_agent.payloads import ev_full, seed, shapes

    profiles = [seed.PROFILE, ev_full.PROFILE, *shapes.PROFILES]
    registry = {profile.name: profile for profile in profiles}
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


__all__ = ["DEFAULT_COUNT", "DEFAULT_SEED", "PROFILES", "Payload", "Profile", "get"]
