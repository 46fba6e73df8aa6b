"""Benchmark suites, by name. Each module has `SUITE` and `run(context)`.

A suite module is imported only when a run uses it, so the agent starts fast
and a suite whose optional parts are missing does not break the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from evbench_agent.progress import Progress
from evbench_agent.results import RunWriter

#: Suite name -> module, in the order a run takes them.
REGISTRY = {
    "codec": "evbench_agent.suites.codec",
    "link": "evbench_agent.suites.link",
}


@dataclass
class RunContext:
    """What a suite gets: the spec, where to write, whom to tell."""

    spec: Any  # evbench_agent.spec.Spec (not imported here: spec imports this module)
    writer: RunWriter
    progress: Progress
    #: Marks a moment on the run's monotonic timeline (telemetry lines up with it):
    #: mark("start" | "end", t_ns=None, suite=..., profile=..., codec=..., **fields).
    #: The runner writes these to markers.jsonl (evbench_agent.telemetry.timeline);
    #: a live "start" first waits for the cool-down guard. An "end" may carry
    #: messages=N or operations=N, from which energy per message/operation follows.
    mark: Callable[..., None] = field(default=lambda *_args, **_fields: None)


def load(name: str) -> ModuleType:
    return importlib.import_module(REGISTRY[name])
