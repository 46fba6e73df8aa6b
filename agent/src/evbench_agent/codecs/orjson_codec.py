"""orjson: JSON by orjson, a Rust extension."""

from __future__ import annotations

from types import ModuleType

from evbench_agent.codecs.registry import PLAIN, Pair, codec
from evbench_agent.payloads import Profile


# orjson's recipe arrives in whinlatter: none in scarthgap.
@codec(
    "orjson",
    module="orjson",
    distribution="orjson",
    yocto=None,
    carries=PLAIN,
    description="JSON, orjson (Rust extension)",
)
def bind(module: ModuleType, _profile: Profile) -> Pair:
    return module.dumps, module.loads
