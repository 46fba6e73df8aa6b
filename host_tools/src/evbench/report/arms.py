"""The answer of a run with arms (`evbench run --arm`): each codec under each arm.

The first arm given is the baseline; every other arm is compared with it, codec by
codec, with the within-run method (replicates: the arms' processes of one round
sequence, evbench_agent.suites.codec_arms). The arms' versions come first, since
they are what the answer is about.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from evbench_agent import arms
from evbench_core.comparison import Comparison, compare
from evbench_core.results import SampleSet

log = logging.getLogger(__name__)


def arm_names(manifest: dict[str, Any]) -> list[str]:
    """The run's arms in the order given (the first is the baseline); none without."""
    found = manifest.get("arms")
    return list(found) if isinstance(found, dict) else []


def pairs(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """(baseline, candidate) codec labels: each codec, the first arm against each other."""
    names = arm_names(manifest)
    codecs = manifest.get("spec", {}).get("codecs") or []
    return [
        (arms.label(codec, names[0]), arms.label(codec, other))
        for codec in codecs
        for other in names[1:]
    ]


def describe(manifest: dict[str, Any]) -> list[str]:
    """One line per arm: its name, Python, protobuf and backend, other codec libraries."""
    lines = []
    for name, arm in (manifest.get("arms") or {}).items():
        others = {
            codec: version
            for codec, version in (arm.get("codecs") or {}).items()
            if codec in (manifest.get("spec", {}).get("codecs") or []) and codec != "protobuf"
        }
        extra = "".join(f", {codec} {version}" for codec, version in others.items())
        lines.append(f"  {arms.describe(name, arm)}{extra} [{arm.get('interpreter', '?')}]")
    return lines


def comparisons(
    samples: Sequence[SampleSet], manifest: dict[str, Any]
) -> list[tuple[str, str, Comparison]]:
    """Every (baseline, candidate) pair's comparison."""
    return [(base, cand, compare(samples, base, cand)) for base, cand in pairs(manifest)]


def render(samples: Sequence[SampleSet], manifest: dict[str, Any]) -> tuple[str, Comparison | None]:
    """The terminal's answer for a run with arms, and the first comparison (for the report)."""
    from evbench.report import answer

    parts = [
        "Arms (one run, one board; each replicate's arm processes take turns within every round):",
        *describe(manifest),
    ]
    first = None
    for _base, _cand, comparison in comparisons(samples, manifest):
        first = first or comparison
        parts += ["", answer.render_comparison(comparison)]
    return "\n".join(parts), first
