"""msgspec-json and msgspec-msgpack: JSON and MessagePack by msgspec, a C extension.

One library, two formats, bound alike: each format's module has its Encoder and Decoder.
"""

from __future__ import annotations

from types import ModuleType

from evbench_agent.codecs.registry import PLAIN, Pair, codec
from evbench_agent.payloads import Profile


# msgspec has no Yocto recipe at all (decorators apply bottom-up: json first).
@codec(
    "msgspec-msgpack",
    module="msgspec.msgpack",
    distribution="msgspec",
    yocto=None,
    carries=PLAIN,
    description="MessagePack binary, msgspec (C extension)",
)
@codec(
    "msgspec-json",
    module="msgspec.json",
    distribution="msgspec",
    yocto=None,
    carries=PLAIN,
    description="JSON, msgspec (C extension)",
)
def bind(module: ModuleType, _profile: Profile) -> Pair:
    return module.Encoder().encode, module.Decoder().decode
