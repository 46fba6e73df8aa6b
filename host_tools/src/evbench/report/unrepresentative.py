"""What makes a run's numbers unrepresentative of a board in the field, said first.

The one place that decides it, so the terminal answer and the report's environment
box say the same. Read from the run's manifest (and, for contention, its samples):

- protobuf timed on its pure-Python backend, which a board with the upb or cpp
  backend never runs (issue 31 found "JSON is better" on every timed row of such a
  run, with the backend shown in one table cell only);
- a debug build: Python built with --with-pydebug or run with -X dev, or a native
  harness the run measured compiled without optimisation;
- emulation: a native harness built for another architecture than the board's
  (binfmt_misc ran it under qemu-user: issue 44 measured nlohmann's decode at
  130 µs instead of 10.7);
- throttling: telemetry saw the kernel throttle during a phase;
- contention: replicates measured beyond contention's bound (the rows marked *),
  decided per replicate by evbench_agent.telemetry.contention. The terminal says
  this one under its answer (the busy line), so `terminal_lines` leaves it out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from evbench_agent.native import runtimes
from evbench_core.analysis import contention
from evbench_core.comparison import busy_replicates
from evbench_core.results import SampleSet

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


def _backend(manifest: dict[str, Any]) -> list[str]:
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


#: gcc and clang take the last -O: none, -O0 and -Og leave the code unoptimised.
_OPTIMISED = re.compile(r"-O(?:[1-3sz]|fast)?$")


def optimised(flags: str) -> bool:
    """Whether a compiler's flags (as a native harness states them) optimise the code."""
    levels = [flag for flag in flags.split() if flag.startswith("-O")]
    return bool(levels) and bool(_OPTIMISED.match(levels[-1]))


def _debug_builds(manifest: dict[str, Any]) -> list[str]:
    platform = manifest.get("platform") or {}
    said = []
    if platform.get("python_debug") or platform.get("python_dev_mode"):
        kind = "a debug build (Py_DEBUG)" if platform.get("python_debug") else "-X dev mode"
        said.append(
            f"Python ran as {kind}: its checks make every Python codec several times "
            "slower than a board's release Python. Measure with a release build, "
            "without -X dev or PYTHONDEVMODE."
        )
    used = set((manifest.get("spec") or {}).get("codecs") or [])
    native = platform.get("native_codecs") or {}
    slow = sorted(
        f"{name} ({about.get('flags') or 'no flags'})"
        for name, about in native.items()
        if name in used and isinstance(about, dict) and not optimised(about.get("flags") or "")
    )
    if slow:
        said.append(
            f"native harness built without optimisation: {', '.join(slow)}: its timings "
            "stand for a debug build. Build with -DCMAKE_BUILD_TYPE=Release "
            "(docs/native-codecs.md) and measure again."
        )
    return said


def _emulated(manifest: dict[str, Any]) -> list[str]:
    """Native harnesses the run measured that are built for another architecture than the
    board's (the manifest's platform.machine): binfmt_misc ran them under emulation."""
    platform = manifest.get("platform") or {}
    machine = platform.get("machine")
    if not isinstance(machine, str):
        return []
    used = set((manifest.get("spec") or {}).get("codecs") or [])
    native = platform.get("native_codecs") or {}
    foreign = sorted(
        f"{name} ({about['architecture']})"
        for name, about in native.items()
        if name in used
        and isinstance(about, dict)
        and isinstance(about.get("architecture"), str)
        and not runtimes.runs_natively(about["architecture"], machine)
    )
    if not foreign:
        return []
    return [
        f"native harness built for another architecture than this {machine} board: "
        f"{', '.join(foreign)}: it ran under emulation (qemu-user), so its timings are the "
        "emulator's, many times slower than on its own architecture. Build native/ for the "
        "board (docs/native-codecs.md) and measure again."
    ]


def _throttled(manifest: dict[str, Any]) -> list[str]:
    phases = (manifest.get("telemetry") or {}).get("throttled_phases") or []
    if not phases:
        return []
    named = sorted(
        {
            " ".join(str(p[k]) for k in ("phase", "profile", "codec", "kind") if p.get(k))
            + f" ({', '.join(p.get('reasons') or [])})"
            for p in phases
            if isinstance(p, dict)
        }
    )
    return [
        f"the kernel throttled the CPU during {len(phases)} phase(s): {'; '.join(named)}. "
        "A throttled clock slows whatever runs then; let the board cool (--cool-to) or "
        "cool it better, and measure again."
    ]


def _contention(sample_sets: Iterable[SampleSet]) -> list[str]:
    busy, measured = busy_replicates(sample_sets)
    if not busy:
        return []
    return [
        f"the machine was busy: {len(busy)} of {measured} replicates were measured beyond "
        f"the bound ({contention.bound_words()}); other work shifts the timings, so rows "
        "marked * may be unreliable. Measure on an otherwise idle board."
    ]


def warnings(manifest: dict[str, Any], sample_sets: Iterable[SampleSet] | None = None) -> list[str]:
    """One sentence per reason the figures do not stand for the board as deployed; with
    the run's `sample_sets`, contention too."""
    said = _backend(manifest) + _debug_builds(manifest) + _emulated(manifest)
    said += _throttled(manifest)
    return said + (_contention(sample_sets) if sample_sets is not None else [])


def terminal_lines(manifest: dict[str, Any], width: int = 100) -> list[str]:
    """The warnings for the terminal, wrapped to `width`: 'WARNING: ...' and its lines
    (contention aside: the answer's busy line says it)."""
    import textwrap

    lines = []
    for said in warnings(manifest):
        lines += textwrap.wrap(
            f"WARNING: {said}", width, subsequent_indent="  ", break_on_hyphens=False
        )
    return lines
