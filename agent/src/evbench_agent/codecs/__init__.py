"""Codecs: each turns a profile's data into bytes and back.

`protobuf`, `json` and `protobuf-json` are always present (the agent depends on
protobuf); the others are used when their library imports, and detected at run
time. Each codec is one module of this package, declared where it is implemented
with `@codec` (evbench_agent.codecs.registry); every module is collected here when
the package is first imported, so a new codec is one new module and no list to
extend (docs/contributing.md).
"""

from __future__ import annotations

from evbench_agent.codecs.registry import (
    AGENT_DEPENDENCIES,
    CODECS,
    COPY_SUFFIX,
    MESSAGE,
    PLAIN,
    BoundCodec,
    Codec,
    Pair,
    available,
    codec,
    copy_name,
    every,
    get,
    installed,
    original_name,
    path_reader,
    protobuf_backend,
)
from evbench_agent.codecs.registry import collect as _collect

_collect(__path__, __name__)

__all__ = [
    "AGENT_DEPENDENCIES",
    "CODECS",
    "COPY_SUFFIX",
    "MESSAGE",
    "PLAIN",
    "BoundCodec",
    "Codec",
    "Pair",
    "available",
    "codec",
    "copy_name",
    "every",
    "get",
    "installed",
    "original_name",
    "path_reader",
    "protobuf_backend",
]
