"""What makes a run's numbers unrepresentative of a board in the field, said first.

Read from the run's manifest, so the terminal answer and the report say the same.
Today: protobuf timed on its pure-Python backend, which a board with the upb or
cpp backend never runs (issue 31 found "JSON is better" on every timed row of such
a run, with the backend shown in one table cell only).
"""

from __future__ import annotations

from typing import Any

#: The protobuf runtime implementation that is not compiled: far slower than upb or cpp.
PURE_PYTHON = "python"


def _protobuf_backends(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, backend) of what timed the codecs: each --arm's interpreter, or the run's."""
    arms = manifest.get("arms")
    if isinstance(arms, dict) and arms:
        return [
            (f"arm {name}", versions["protobuf_backend"])
            for name, versions in arms.items()
            if isinstance(versions, dict) and isinstance(versions.get("protobuf_backend"), str)
        ]
    platform = manifest.get("platform")
    if isinstance(platform, dict) and isinstance(platform.get("protobuf_backend"), str):
        return [("this run", platform["protobuf_backend"])]
    return []


def warnings(manifest: dict[str, Any]) -> list[str]:
    """One sentence per reason the figures do not stand for the board as deployed."""
    codecs = (manifest.get("spec") or {}).get("codecs") or []
    if not any(isinstance(name, str) and name.startswith("protobuf") for name in codecs):
        return []
    slow = [where for where, backend in _protobuf_backends(manifest) if backend == PURE_PYTHON]
    if not slow:
        return []
    return [
        f"protobuf ran on its pure-Python backend ({', '.join(slow)}): its timings are many "
        "times slower than the upb or cpp backend a board normally runs, so they do not "
        "stand for protobuf. Unset PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION or install a "
        "protobuf built with upb, check with 'evbench-agent info', and measure again."
    ]


def terminal_lines(manifest: dict[str, Any], width: int = 100) -> list[str]:
    """The warnings for the terminal, wrapped to `width`: 'WARNING: ...' and its lines."""
    import textwrap

    lines = []
    for said in warnings(manifest):
        lines += textwrap.wrap(
            f"WARNING: {said}", width, subsequent_indent="  ", break_on_hyphens=False
        )
    return lines
