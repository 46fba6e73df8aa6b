"""ujson: JSON by ujson, a C extension."""

from __future__ import annotations

from types import ModuleType

from evbench_agent.codecs.registry import PLAIN, Pair, codec
from evbench_agent.payloads import Profile


@codec(
    "ujson",
    module="ujson",
    distribution="ujson",
    yocto="python3-ujson",
    carries=PLAIN,
    description="JSON, ujson (C extension)",
)
def bind(module: ModuleType, _profile: Profile) -> Pair:
    dumps = module.dumps
    return (lambda value: dumps(value, ensure_ascii=False).encode()), module.loads
