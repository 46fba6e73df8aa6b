"""Payload profiles: deterministic, seeded data as plain Python and as protobuf.

A profile makes payload number i from a seed, as plain data (dicts, lists,
numbers, strings) for the JSON-family codecs, and converts it to the protobuf
message that carries the same values. Two runs with the same seed measure the
same bytes, whatever the machine.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import Message

from evbench_agent.errors import UserError
from evbench_agent.payloads.convert import fill, to_plain

#: Payloads per profile unless the spec says otherwise: the seed app's 10 s at 20 Hz.
DEFAULT_COUNT = 200
DEFAULT_SEED = 1


@dataclass(frozen=True)
class Payload:
    plain: Any
    message: Message


@dataclass(frozen=True)
class Profile:
    """A kind of payload: how to make it, and which protobuf type carries it."""

    name: str
    description: str
    message_type: type[Message]
    generate: Callable[[random.Random, int], dict[str, Any]]
    #: Plain keys that differ from the protobuf field names (plain -> field).
    rename: Mapping[str, str] = field(default_factory=dict)
    #: The path `decode_access` reads; None reads every leaf.
    access: tuple[str, ...] | None = None

    def to_message(self, plain: Mapping[str, Any]) -> Message:
        return fill(self.message_type(), plain, self.rename)

    def to_plain(self, message: Message) -> dict[str, Any]:
        return to_plain(message, self.rename)

    def payloads(self, count: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED) -> list[Payload]:
        made = []
        for index in range(count):
            rng = random.Random(f"{seed}:{self.name}:{index}")
            plain = self.generate(rng, index)
            made.append(Payload(plain, self.to_message(plain)))
        return made


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


PROFILES: dict[str, Profile] = _registry()


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UserError(
            f"unknown profile {name!r}", hint=f"available: {', '.join(PROFILES)}"
        ) from None
