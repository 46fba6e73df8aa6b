"""The link suite: 50 ms periodic messages over TCP to a responder, per codec.

For every profile, codec phases alternate (A B A B). A periodic phase opens a
connection, sends a warm-up that is not recorded, then `count` messages at the
rate, and records every message's RTT (end to end and transport) and send
lateness, and per phase the jitter, bandwidth, CPU per message, lost and late
counts. A saturation phase then keeps a window of messages in flight to find
the real capacity. Samples are written as each phase ends, so a run cut short
keeps every phase measured before it.

With `--peer loopback` (the default) the suite starts its own responder, a
separate `evbench-agent serve` process on this machine, as the seed app did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evbench_agent.errors import PartialRun, UserError
from evbench_agent.link import client, figures, messages, saturation, timing
from evbench_agent.link.address import parse_peer
from evbench_agent.link.service import ResponderProcess, start_responder
from evbench_agent.results import SampleSet
from evbench_agent.suites import RunContext

SUITE = "link"
#: The seed app's message. Not the run's `profiles`: a link phase takes real
#: seconds, so every profile and codec of a run would take many minutes.
DEFAULT_PROFILES = ("seed",)


@dataclass(frozen=True)
class LinkPlan:
    """Seconds per periodic phase, warm-up, repetitions per codec, saturation time."""

    duration_s: float
    warmup_s: float
    phases: int
    capacity_s: float


#: The seed app's 10 s at 20 Hz, five times per codec (n = 5 per-phase figures).
FULL_PLAN = LinkPlan(duration_s=10.0, warmup_s=1.0, phases=5, capacity_s=2.0)
#: A fixed small plan, recorded as quick: true.
QUICK_PLAN = LinkPlan(duration_s=2.0, warmup_s=0.5, phases=2, capacity_s=1.0)


@dataclass(frozen=True)
class Settings:
    peer: str
    mode: str
    rate_hz: float
    count: int
    warmup_count: int
    deadline_s: float
    phases: int
    window: int
    capacity_s: float
    capacity_warmup_s: float
    realtime: bool

    @classmethod
    def from_spec(cls, spec: Any) -> Settings:
        base = QUICK_PLAN if spec.quick else FULL_PLAN
        rate = spec.link_rate_hz
        duration = spec.link_duration_s or base.duration_s
        warmup = base.warmup_s if spec.link_warmup_s is None else spec.link_warmup_s
        return cls(
            peer=spec.link_peer,
            mode=spec.link_mode,
            rate_hz=rate,
            count=spec.link_count or max(1, round(duration * rate)),
            warmup_count=round(warmup * rate),
            deadline_s=spec.link_deadline_s or 1 / rate,
            phases=spec.link_phases or base.phases,
            window=spec.link_window,
            capacity_s=spec.link_capacity_s or base.capacity_s,
            capacity_warmup_s=warmup / 2,
            realtime=spec.link_realtime,
        )


class _Phases:
    """Runs the phases of one run against one responder; writes their samples."""

    def __init__(self, context: RunContext, settings: Settings, scheduling: timing.Scheduling):
        self.context, self.settings = context, settings
        self.responder: ResponderProcess | None = None
        self.phases_done = 0
        spec = context.spec
        common = {
            "peer": settings.peer,
            "mode": settings.mode,
            "phases": settings.phases,
            "payloads": spec.payloads,
            "seed": spec.seed,
            **scheduling.as_params(),
        }
        self.periodic_params = {
            **common,
            "rate_hz": settings.rate_hz,
            "count": settings.count,
            "warmup_count": settings.warmup_count,
            "deadline_s": settings.deadline_s,
        }
        self.capacity_params = {
            **common,
            "window": settings.window,
            "duration_s": settings.capacity_s,
            "warmup_s": settings.capacity_warmup_s,
        }

    def address(self) -> tuple[str, int]:
        if self.settings.peer != "loopback":
            return parse_peer(self.settings.peer)
        if self.responder is None:
            self.responder = start_responder(realtime=self.settings.realtime)
        return self.responder.address

    def connect(self, link: messages.LinkCodec) -> client.Connection:
        try:
            return client.Connection(self.address(), link, self.settings.mode)
        except UserError as error:
            if self.phases_done:  # the peer went away between phases: the run is cut short
                raise PartialRun(
                    f"{error}; the run is saved as partial with the "
                    f"{self.phases_done} phases measured so far"
                ) from error
            raise

    def periodic(
        self, profile: str, codec: str, phase: int, link: messages.LinkCodec, data: list[Any]
    ) -> int:
        settings = self.settings
        with self.connect(link) as connection:
            result = client.run_periodic(
                connection,
                data,
                settings.rate_hz,
                settings.count,
                settings.warmup_count,
                settings.deadline_s,
            )
        if result.sent:
            self._write_periodic(profile, codec, phase, result)
            self.phases_done += 1
        if result.error:
            raise PartialRun(
                f"{result.error}; the run is saved as partial with the "
                f"{len(result.replies)} messages of this phase answered so far"
            )
        return len(result.sent)

    def _write_periodic(
        self, profile: str, codec: str, phase: int, result: client.PhaseResult
    ) -> None:
        measured = figures.PhaseFigures(result, self.settings.rate_hz, self.settings.deadline_s)
        params = self.periodic_params
        sample_sets = [
            SampleSet(SUITE, profile, codec, metric, "s", params, values, phase)
            for metric, values in measured.per_message().items()
            if values
        ]
        for metric, (value, unit) in measured.per_phase().items():
            metric_params = (
                dict(params, wire=figures.WIRE_ASSUMPTIONS)
                if metric == "bandwidth_wire"
                else params
            )
            sample_sets.append(
                SampleSet(SUITE, profile, codec, metric, unit, metric_params, [value], phase)
            )
        self.context.writer.add(sample_sets)

    def capacity(
        self, profile: str, codec: str, phase: int, link: messages.LinkCodec, data: list[Any]
    ) -> int:
        settings = self.settings
        with self.connect(link) as connection:
            result = saturation.run_saturation(
                connection,
                data,
                settings.window,
                settings.capacity_s,
                settings.capacity_warmup_s,
                settings.deadline_s,
            )
        if result.error:
            raise PartialRun(f"{result.error}; the saturation phase is not recorded")
        self.phases_done += 1
        params = self.capacity_params
        self.context.writer.add(
            [
                SampleSet(
                    SUITE,
                    profile,
                    codec,
                    "capacity_msgs",
                    "messages/s",
                    params,
                    [result.messages / result.seconds],
                    phase,
                ),
                SampleSet(
                    SUITE,
                    profile,
                    codec,
                    "capacity_bytes",
                    "bytes/s",
                    params,
                    [result.payload_bytes / result.seconds],
                    phase,
                ),
            ]
        )
        return result.messages

    def close(self) -> None:
        if self.responder is not None:
            self.responder.stop()


def run(context: RunContext) -> None:
    spec, progress = context.spec, context.progress
    settings = Settings.from_spec(spec)
    profiles = spec.link_profiles or DEFAULT_PROFILES
    progress.start(SUITE, len(profiles) * settings.phases * len(spec.codecs) * 2)
    previous = timing.current()
    scheduling = timing.enter_realtime() if settings.realtime else previous
    phases = _Phases(context, settings, scheduling)
    try:
        phases.address()  # starts the loopback responder before any phase is timed
        for profile in profiles:
            bound = {codec: messages.bind(codec, profile) for codec in spec.codecs}
            data = {
                codec: link.sample_data(spec.payloads, spec.seed) for codec, link in bound.items()
            }
            for kind in (phases.periodic, phases.capacity):
                for phase in range(settings.phases):
                    for codec, link in bound.items():
                        where = {"suite": SUITE, "profile": profile, "codec": codec}
                        context.mark("start", **where, kind=kind.__name__, phase=phase)
                        messages_done = kind(profile, codec, phase, link, data[codec])
                        context.mark("end", **where, kind=kind.__name__, messages=messages_done)
                        progress.advance(f"{profile} {codec} {kind.__name__} {phase + 1}")
    finally:
        phases.close()
        if settings.realtime:
            timing.leave_realtime(previous)
    progress.finish()
