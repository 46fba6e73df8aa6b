"""cbor2: CBOR binary (RFC 8949) by the cbor2 library."""

from __future__ import annotations

from types import ModuleType

from evbench_agent.codecs.registry import PLAIN, Pair, codec
from evbench_agent.payloads import Profile


@codec(
    "cbor2",
    module="cbor2",
    distribution="cbor2",
    yocto="python3-cbor2",
    carries=PLAIN,
    description="CBOR binary (RFC 8949), cbor2",
)
def bind(module: ModuleType, _profile: Profile) -> Pair:
    return module.dumps, module.loads
