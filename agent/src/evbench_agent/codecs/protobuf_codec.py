"""protobuf: Protocol Buffers binary, the message's own SerializeToString and FromString."""

from __future__ import annotations

from types import ModuleType

from evbench_agent.codecs.registry import MESSAGE, Pair, codec
from evbench_agent.payloads import Profile


@codec(
    "protobuf",
    module="google.protobuf",
    distribution="protobuf",
    yocto="python3-protobuf",
    carries=MESSAGE,
    description="Protocol Buffers binary, google.protobuf (its backend: upb, cpp or python)",
)
def bind(_module: ModuleType, profile: Profile) -> Pair:
    cls = profile.message_type
    return cls.SerializeToString, cls.FromString
