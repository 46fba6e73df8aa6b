"""Energy from measured power, above the idle baseline taken before the run.

Power comes from hwmon (powerN, or currN x inN) summed over the monitored
rails; the board's idle power, the mean over the idle phase before the
suites, is subtracted, so the figures are what the work cost, not what the
board burns anyway. Nothing is computed where the board has no power monitor.

- Per message (a phase whose end marker gives `messages`): each power sample
  of the phase gives (P - P_idle) x phase duration / messages; their mean is
  the phase's energy above idle per message, and their spread shows how
  steady it was. The window runs from the phase's start marker to its end
  marker (connect, handshake, warm-up and drain included), so `messages` is
  every message the phase sent in it, warm-up included (the link suite marks
  that count), never only the measured ones.
- Per operation (a phase whose end marker gives `operations`): the same, per
  operation.
- Per operation in the codec suite: codecs alternate sample by sample inside a
  worker (milliseconds each), far faster than a power monitor can tell them
  apart, so the excess power of the profile's phase (all codecs together, one
  core busy) is multiplied by each codec's median time per operation. Codec
  differences in this figure therefore follow their time differences; the
  record's `method` says so.
"""

from __future__ import annotations

import statistics
from typing import Any

from evbench_agent import registry
from evbench_core.results import SampleSet

SUITE = registry.TELEMETRY
METHOD_PER_OP_CODEC = "excess power of the interleaved phase x median time per operation"
METHOD_PER_COUNT = "excess power per sample x phase duration / count"


def idle_power_w(samples: list[dict[str, Any]]) -> float | None:
    powers = [s["power_w"] for s in samples if s.get("power_w") is not None]
    return statistics.fmean(powers) if powers else None


def excess_powers(samples: list[dict[str, Any]], idle_w: float) -> list[float]:
    return [s["power_w"] - idle_w for s in samples if s.get("power_w") is not None]


def per_count(windows: list[tuple[list[dict[str, Any]], float, int]], idle_w: float) -> list[float]:
    """Values of energy per message or operation: one per power sample, in J.

    `windows` holds (samples, duration in s, count) for each time the phase ran.
    """
    values = []
    for samples, duration_s, count in windows:
        if count > 0:
            values += [excess * duration_s / count for excess in excess_powers(samples, idle_w)]
    return values


def codec_per_operation(
    profile: str,
    samples: list[dict[str, Any]],
    idle_w: float,
    timings: list[SampleSet],
    params: dict[str, Any],
) -> list[SampleSet]:
    """energy_per_op records of one codec-suite profile phase, one per codec and operation."""
    excess = excess_powers(samples, idle_w)
    if not excess:
        return []
    pooled: dict[tuple[str | None, str], list[float]] = {}
    for timing in timings:
        if timing.profile == profile and timing.unit == "s":
            pooled.setdefault((timing.codec, timing.metric), []).extend(timing.values)
    sample_sets = []
    for (codec, operation), times in sorted(pooled.items()):
        seconds = statistics.median(times)
        sample_sets.append(
            SampleSet(
                SUITE,
                profile,
                codec,
                "energy_per_op",
                "J",
                dict(
                    params, operation=operation, method=METHOD_PER_OP_CODEC, median_time_s=seconds
                ),
                [power * seconds for power in excess],
            )
        )
    return sample_sets
