"""How a codec is named to a reader: JSON, Protobuf, the native runtimes' own names."""

from __future__ import annotations

from evbench_agent.native import runtimes

DISPLAY_NAMES = {"json": "JSON", "protobuf": "Protobuf"}


def display_name(codec: str) -> str:
    return DISPLAY_NAMES.get(codec) or runtimes.display_name(codec) or codec


__all__ = ["DISPLAY_NAMES", "display_name"]
