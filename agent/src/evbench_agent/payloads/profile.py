"""What a payload profile is (Payload, Profile) and the registry of profiles by name.

Apart from the package so the profile modules (profiles/*, user_schema)
import this, never the package that lists them: no import circle.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import Message

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
    #: Which leaves the plain form holds, so the protobuf side reads the same ones
    #: (evbench_agent.payloads.access: "every-field" or "set-fields").
    leaves: str = "every-field"

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


#: Every profile by name; filled by the package, added to by user_schema.activate.
PROFILES: dict[str, Profile] = {}
