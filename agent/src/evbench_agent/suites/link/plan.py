"""The link suite's plan: how many pairs of phases of what length, the settings a
run's spec gives them, the codecs it measures, the time it should take, and where
its sender and loopback responder run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from evbench_agent import codecs as codec_registry
from evbench_agent.link import placement

SUITE = "link"
#: The seed app's message. Not the run's `profiles`: a link phase takes real
#: seconds, so every profile and codec of a run would take many minutes.
DEFAULT_PROFILES = ("seed",)
#: The table's two codecs: what the link suite measures unless told to take all.
DEFAULT_CODECS = ("json", "protobuf")
TRANSPORT = "tcp"


@dataclass(frozen=True)
class LinkPlan:
    """Seconds per periodic phase and its warm-up, periodic pairs (duets), capacity
    pairs, and each codec's capacity per pair: measured seconds, in how many blocks,
    each after what warm-up."""

    duration_s: float
    warmup_s: float
    phases: int
    capacity_pairs: int
    capacity_s: float
    capacity_blocks: int
    capacity_warmup_s: float


#: Verdicts rest on pairs: over TCP the periodic phases of the codecs run at once as a
#: duet (their messages interleaved at the rate, each codec on its own connection), and
#: in a capacity pair the codecs take turns saturating in short interleaved blocks
#: (A B B A ..., then B A A B ...). The link's ~10 tested rows form one Holm family, so
#: the exact signed-rank test needs n >= 9 pairs to reach 0.05 / 10 at all (2/512); more
#: pairs narrow the interval at that level (docs/link.md, "The plan").
#: Full: 30 duets of 1.2 s periodic phases (24 messages at 20 Hz each), 30 capacity
#: pairs of 4 blocks of 50 ms per codec; about 65 s with the probe.
FULL_PLAN = LinkPlan(
    duration_s=1.2,
    warmup_s=0.2,
    phases=30,
    capacity_pairs=30,
    capacity_s=0.2,
    capacity_blocks=4,
    capacity_warmup_s=0.01,
)
#: A fixed small plan, recorded as quick: true. 16 duets of 0.3 s phases (6 messages)
#: and 16 capacity pairs of 2 blocks of 25 ms per codec, in about 12 s.
QUICK_PLAN = LinkPlan(
    duration_s=0.3,
    warmup_s=0.05,
    phases=16,
    capacity_pairs=16,
    capacity_s=0.05,
    capacity_blocks=2,
    capacity_warmup_s=0.005,
)
#: The wake-up probe: samples at the link period (full, quick).
WAKEUP_SAMPLES = (100, 20)
#: Connecting, handshaking and draining a phase, as measured on a 2-core VM (s).
PHASE_OVERHEAD_S = 0.1
#: Starting the loopback responder (a Python process) (s).
RESPONDER_START_S = 0.5


@dataclass(frozen=True)
class Settings:
    peer: str
    mode: str
    #: The loopback responder: "python" or "c".
    responder: str
    rate_hz: float
    count: int
    warmup_count: int
    deadline_s: float
    phases: int
    window: int
    capacity_pairs: int
    capacity_s: float
    capacity_blocks: int
    capacity_warmup_s: float
    realtime: bool
    wakeup_samples: int
    #: A bus URL (--link-transport) instead of TCP; None: TCP to `peer`.
    transport: str | None
    #: Testing only: the A/A copy's replies are held this long by the responder (ns).
    aa_reply_delay_ns: int

    @classmethod
    def from_spec(cls, spec: Any) -> Settings:
        base = QUICK_PLAN if spec.quick else FULL_PLAN
        rate = spec.link_rate_hz
        duration = spec.link_duration_s or base.duration_s
        warmup = base.warmup_s if spec.link_warmup_s is None else spec.link_warmup_s
        return cls(
            peer=spec.link_peer,
            mode=spec.link_mode,
            responder=spec.link_responder,
            rate_hz=rate,
            count=spec.link_count or max(1, round(duration * rate)),
            warmup_count=round(warmup * rate),
            deadline_s=spec.link_deadline_s or 1 / rate,
            phases=spec.link_phases or base.phases,
            window=spec.link_window,
            capacity_pairs=spec.link_phases or base.capacity_pairs,
            capacity_s=spec.link_capacity_s or base.capacity_s,
            capacity_blocks=base.capacity_blocks,
            capacity_warmup_s=(
                base.capacity_warmup_s if spec.link_warmup_s is None else spec.link_warmup_s / 2
            ),
            realtime=spec.link_realtime,
            wakeup_samples=WAKEUP_SAMPLES[1] if spec.quick else WAKEUP_SAMPLES[0],
            transport=spec.link_transport,
            aa_reply_delay_ns=round(spec.aa_reply_delay_s * 1e9),
        )


def link_codecs(spec: Any) -> tuple[str, ...]:
    """The codecs the link suite measures: the table's two of the run's codecs
    (json, protobuf, and their A/A copies) unless `link_all_codecs`; the run's
    codecs where it has neither."""
    if spec.link_all_codecs:
        return tuple(spec.codecs)
    chosen = tuple(
        name for name in spec.codecs if codec_registry.original_name(name) in DEFAULT_CODECS
    )
    return chosen or tuple(spec.codecs)


def planned_seconds(spec: Any) -> float:
    """How long the suite's plan should take: phases, their overheads, the probe."""
    settings = Settings.from_spec(spec)
    profiles, codecs = len(spec.link_profiles or DEFAULT_PROFILES), len(link_codecs(spec))
    periodic = (settings.warmup_count + settings.count) / settings.rate_hz
    probe = settings.wakeup_samples / settings.rate_hz
    if settings.transport:  # no responder to start, no capacity phase
        return probe + profiles * codecs * settings.phases * (periodic + PHASE_OVERHEAD_S)
    start = RESPONDER_START_S if settings.peer == "loopback" else 0.0
    # the codecs' periodic phases of a pair at once (a duet), the second an offset later
    duets = profiles * settings.phases
    periodic_s = duets * (periodic + 1 / settings.rate_hz + PHASE_OVERHEAD_S)
    capacity = settings.capacity_blocks * settings.capacity_warmup_s + settings.capacity_s
    capacity_s = profiles * settings.capacity_pairs * codecs * (capacity + PHASE_OVERHEAD_S)
    return start + probe + periodic_s + capacity_s


def placement_of(spec: Any) -> placement.Placement:
    """Where this run's sender and loopback responder run, among this agent's CPUs."""
    return placement.choose(
        spec.link_cpus,
        os.sched_getaffinity(0),
        loopback=spec.link_peer == "loopback" and spec.link_transport is None,
        avoid=spec.telemetry_cpu,
    )
