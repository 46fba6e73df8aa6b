"""protobuf-json: JSON of the protobuf message, as protobuf's json_format writes and parses it."""

from __future__ import annotations

from types import ModuleType

from evbench_agent.codecs.registry import MESSAGE, Pair, codec
from evbench_agent.payloads import Profile


@codec(
    "protobuf-json",
    module="google.protobuf.json_format",
    distribution="protobuf",
    yocto="python3-protobuf",
    carries=MESSAGE,
    description="JSON of the protobuf message: json_format.MessageToDict + json, and Parse",
)
def bind(module: ModuleType, profile: Profile) -> Pair:
    from evbench_agent import protobuf_json

    return protobuf_json.bind(module, profile.message_type)
