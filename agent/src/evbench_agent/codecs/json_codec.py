"""json: JSON text by the standard library, compact separators and raw UTF-8."""

from __future__ import annotations

from types import ModuleType

from evbench_agent.codecs.registry import PLAIN, Pair, codec
from evbench_agent.payloads import Profile


@codec(
    "json",
    module="json",
    distribution=None,
    yocto="python3-json",
    carries=PLAIN,
    description="JSON, the standard library json module, compact separators",
)
def bind(module: ModuleType, _profile: Profile) -> Pair:
    # Dart's jsonEncode writes compact separators and raw UTF-8, as here.
    dumps = module.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    return (lambda value: dumps(value).encode()), module.loads
