"""msgpack: MessagePack binary by the msgpack library."""

from __future__ import annotations

from types import ModuleType

from evbench_agent.codecs.registry import PLAIN, Pair, codec
from evbench_agent.payloads import Profile


@codec(
    "msgpack",
    module="msgpack",
    distribution="msgpack",
    yocto="python3-msgpack",
    carries=PLAIN,
    description="MessagePack binary, msgpack",
)
def bind(module: ModuleType, _profile: Profile) -> Pair:
    return module.packb, module.unpackb
