"""Benchmark suites: one module per suite; `evbench_agent.registry` names them.

This package holds what every suite gets from the runner (`RunContext`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from evbench_agent.progress import Progress
from evbench_agent.spec import Spec
from evbench_core.results import RunWriter


@dataclass
class RunContext:
    """What a suite gets: the spec, where to write, whom to tell."""

    spec: Spec
    writer: RunWriter
    progress: Progress
    #: Marks a moment on the run's monotonic timeline (telemetry lines up with it):
    #: mark("start" | "end", t_ns=None, suite=..., profile=..., codec=..., **fields).
    #: The runner writes these to markers.jsonl (evbench_agent.telemetry.timeline);
    #: a live "start" first waits for the cool-down guard. An "end" may carry
    #: messages=N or operations=N, from which energy per message/operation follows.
    mark: Callable[..., None] = field(default=lambda *_args, **_fields: None)
