"""Per-phase telemetry records: the samples of each marked phase, summarized.

A phase's samples are those taken between its start and end markers (a
temperature, clock or power reading is of its moment; CPU use is over the
interval before it). A phase shorter than the sampling interval gets the next
sample, which covers it along with its neighbours (use a shorter
--telemetry-interval for short phases); `interval_s` in the record's params
says which interval applied. Phases marked more than once (the codec suite
marks each profile in every worker process) pool their samples.

Records have suite `telemetry`; the phase's own suite is `params.phase` (and
its `kind`, where the suite marks one, `params.kind`); the phase's profile and
codec are the record's. A phase during which the kernel
throttled carries `throttled: true` and the reasons in its params.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evbench_agent import registry
from evbench_agent.telemetry import energy
from evbench_agent.telemetry.timeline import group_name, windows
from evbench_core.results import SampleSet

SUITE = registry.TELEMETRY
IDLE = "idle"


def read_telemetry(
    path: Path,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(header, samples, events) of a telemetry file; a torn last line is skipped."""
    header: dict[str, Any] = {}
    samples: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    if not Path(path).exists():
        return header, samples, events
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            if not line.endswith("\n"):
                break
            item = json.loads(line)
            kind = item.get("type")
            if kind == "header":
                header = item
            elif kind == "sample":
                samples.append(item)
            else:
                events.append(item)
    return header, samples, events


def _covering(samples: list[dict[str, Any]], start: int, end: int) -> list[dict[str, Any]]:
    """The samples taken during the phase; for a phase between two samples, the next one."""
    inside = [s for s in samples if start <= s["t_ns"] <= end]
    if inside:
        return inside
    after = [s for s in samples if s["t_ns"] > end]
    return after[:1]


def _series(samples: list[dict[str, Any]]) -> dict[str, tuple[str, list[float]]]:
    zones = [max(s["zones_c"].values()) for s in samples if s["zones_c"]]
    freqs = [
        min(f["cur"] for f in s["freq_hz"].values() if "cur" in f)
        for s in samples
        if any("cur" in f for f in s["freq_hz"].values())
    ]
    return {
        "cpu_util": ("percent", [s["cpu_percent"] for s in samples]),
        "agent_cpu": (
            "percent",
            [s["agent_cpu_percent"] for s in samples if s["agent_cpu_percent"] is not None],
        ),
        "temp_max": ("°C", zones),
        "freq_min": ("Hz", freqs),
        "power_mean": ("W", [s["power_w"] for s in samples if s["power_w"] is not None]),
        "rss_max": ("bytes", [s["agent_rss"] for s in samples if s["agent_rss"] is not None]),
    }


#: A phase's window: its samples, its duration in seconds and its marker (with counts).
Span = tuple[list[dict[str, Any]], float, dict[str, Any]]


def _group(
    markers: list[dict[str, Any]], samples: list[dict[str, Any]]
) -> dict[tuple[Any, ...], tuple[list[dict[str, Any]], list[Span]]]:
    """Phase name -> (samples, [(samples, duration s, marker with counts)] per window)."""
    last = samples[-1]["t_ns"] if samples else 0
    groups: dict[tuple[Any, ...], tuple[dict[int, dict[str, Any]], list[Span]]] = {}
    for marker, start, end in windows(markers):
        end = last if end is None else end
        name = group_name(marker)
        pooled, spans = groups.setdefault(name, ({}, []))
        chosen = _covering(samples, start, end)
        pooled.update({s["t_ns"]: s for s in chosen})
        spans.append((chosen, max(0, end - start) / 1e9, marker))
    return {
        name: ([pooled[t] for t in sorted(pooled)], spans)
        for name, (pooled, spans) in groups.items()
    }


#: A phase's name: (suite, profile, codec, kind), as timeline.group_name gives it.
Phase = tuple[Any, ...]


def build(
    telemetry_path: Path,
    markers: list[dict[str, Any]],
    timings: list[SampleSet],
) -> tuple[list[SampleSet], dict[str, Any]]:
    """The telemetry SampleSets of every phase, and facts for the manifest."""
    header, samples, events = read_telemetry(telemetry_path)
    interval = header.get("interval_s")
    groups = _group(markers, samples)
    idle = groups.get((IDLE, None, None, None))
    idle_w = energy.idle_power_w(idle[0]) if idle else None
    sample_sets: list[SampleSet] = []
    flagged = []
    for phase, (phase_samples, spans) in groups.items():
        params, throttled = _phase_params(phase, phase_samples, interval)
        if throttled is not None:
            flagged.append(throttled)
        _, profile, codec, _ = phase
        sample_sets += [
            SampleSet(SUITE, profile, codec, metric, unit, params, values)
            for metric, (unit, values) in _series(phase_samples).items()
            if values
        ]
        if idle_w is not None and phase[0] != IDLE:
            sample_sets += _energy_sets(phase, phase_samples, spans, params, idle_w, timings)
    facts = {
        "samples": len(samples),
        "idle_power_w": idle_w,
        "throttle_events": [e for e in events if e["type"].startswith("throttle")],
        "throttled_phases": flagged,
        "sensors_lost": [e for e in events if e["type"] == "sensor_lost"],
        # the error (and its traceback) the sampler died of, when it did
        "sampler_died": [e for e in events if e["type"] == "sampler_died"],
    }
    return sample_sets, facts


def _phase_params(
    phase: Phase, samples: list[dict[str, Any]], interval: Any
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The params of a phase's records, and the manifest's note of the phase when the
    kernel throttled during it (None: it did not)."""
    suite, profile, codec, kind = phase
    reasons = sorted({r for s in samples for r in s.get("throttle", [])})
    params = {"phase": suite, "interval_s": interval, "throttled": bool(reasons)}
    if kind is not None:
        params["kind"] = kind
    if not reasons:
        return params, None
    params["throttle_reasons"] = reasons
    said = {"phase": suite, "kind": kind, "profile": profile, "codec": codec, "reasons": reasons}
    return params, said


def _energy_sets(
    phase: Phase,
    samples: list[dict[str, Any]],
    spans: list[Span],
    params: dict[str, Any],
    idle_w: float,
    timings: list[SampleSet],
) -> list[SampleSet]:
    """A phase's energy above idle per message and per operation it counted; for the
    codec suite's phase of a profile, each codec's energy per operation from its
    timings."""
    suite, profile, codec, _ = phase
    energy_params = dict(params, idle_power_w=idle_w)
    sample_sets = []
    for count_name, metric in (("messages", "energy_per_msg"), ("operations", "energy_per_op")):
        counted = [(s, d, m[count_name]) for s, d, m in spans if m.get(count_name)]
        values = energy.per_count(counted, idle_w)
        if values:
            method = dict(energy_params, method=energy.METHOD_PER_COUNT)
            sample_sets.append(SampleSet(SUITE, profile, codec, metric, "J", method, values))
    if suite == "codec" and profile is not None and codec is None:
        sample_sets += energy.codec_per_operation(
            profile, samples, idle_w, [t for t in timings if t.suite == "codec"], energy_params
        )
    return sample_sets
