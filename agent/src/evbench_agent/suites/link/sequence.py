"""The link suite's run: the wake-up probe, then every profile's pairs of phases of
every kind in order (A B, then B A), each between telemetry's markers and measures of
the machine's state; over a bus (one port) or with one codec, the codecs in turn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evbench_agent.link import messages, placement, timing
from evbench_agent.suites import RunContext
from evbench_agent.suites.link.capacity import capacity
from evbench_agent.suites.link.duet import duet
from evbench_agent.suites.link.phases import Phases
from evbench_agent.suites.link.plan import (
    DEFAULT_PROFILES,
    SUITE,
    Settings,
    link_codecs,
    placement_of,
)
from evbench_agent.suites.link.tcp_phases import TcpPhases
from evbench_agent.telemetry import contention
from evbench_core.errors import PartialRun, UserError


def _run_pair(
    context: RunContext,
    phases: Phases,
    profile: str,
    phase: int,
    order: list[tuple[str, messages.LinkCodec]],
    data: dict[str, Any],
    kind: str,
) -> None:
    """One pair of every codec's phases run together: a periodic duet (every codec at
    once) or a capacity pair (the codecs' blocks interleaved). Telemetry's phase is
    every codec's (codec none; a lone codec's own); the machine's state around it is
    recorded for each."""
    where = {"suite": SUITE, "profile": profile, "codec": order[0][0] if len(order) == 1 else None}
    context.mark("start", **where, kind=kind, phase=phase)
    before = contention.take()
    if kind == "periodic":
        sent = duet(phases, profile, phase, order, data)
    else:
        sent = capacity(phases, profile, phase, order, data)
    after = contention.take()
    for codec, _link in order:
        phases.write_contention(profile, codec, phase, kind, before, after)
    context.mark("end", **where, kind=kind, messages=sent)
    how = "duet" if kind == "periodic" else "interleaved"
    for codec, _link in order:
        context.progress.advance(f"{profile} {codec} {kind} {phase + 1} ({how})")


def _phases(
    context: RunContext,
    settings: Settings,
    scheduling: timing.Scheduling,
    cpus: placement.Placement,
) -> Phases:
    """The run's phases: over the bus of --link-transport (its modules imported only
    then), else over TCP."""
    if settings.transport:
        from evbench_agent.suites.link.bus_phases import BusPhases

        return BusPhases(context, settings, scheduling, cpus)
    return TcpPhases(context, settings, scheduling, cpus)


def run(context: RunContext) -> None:
    spec, progress = context.spec, context.progress
    settings = Settings.from_spec(spec)
    profiles = spec.link_profiles or DEFAULT_PROFILES
    codecs = link_codecs(spec)
    previous = timing.current()
    scheduling = timing.enter_realtime() if settings.realtime else previous
    cpus = placement_of(spec)
    phases = _phases(context, settings, scheduling, cpus)
    kinds = {"periodic": settings.phases}
    if phases.pairs:
        kinds["capacity"] = settings.capacity_pairs
    progress.start(SUITE, len(profiles) * len(codecs) * sum(kinds.values()))
    try:
        # The responder first: started from a pinned thread it would inherit its CPU.
        phases.prepare()
        with placement.sender_on(cpus.client_cpu):
            _run_profiles(context, phases, profiles, codecs, kinds)
    except (PartialRun, UserError) as error:
        raise phases.cut_short(error) from error
    finally:
        phases.close()
        if settings.realtime:
            timing.leave_realtime(previous)
    progress.finish()


def _run_profiles(
    context: RunContext,
    phases: Phases,
    profiles: Sequence[str],
    codecs: Sequence[str],
    kinds: dict[str, int],
) -> None:
    """The probe, then every profile's pairs of every kind, in order."""
    spec, progress = context.spec, context.progress
    phases.wakeup()
    for profile in profiles:
        bound = {codec: messages.bind(codec, profile) for codec in codecs}
        data = {codec: link.sample_data(spec.payloads, spec.seed) for codec, link in bound.items()}
        phases.payload_digest(profile)  # now, not between timed phases
        for kind, pairs in kinds.items():
            for phase in range(pairs):
                order = list(bound.items())
                if phase % 2:  # A B, then B A: no codec always goes first
                    order.reverse()
                if phases.pairs and (kind == "capacity" or len(order) > 1):
                    _run_pair(context, phases, profile, phase, order, data, kind)
                    continue
                for codec, link in order:  # a bus (one port) or one codec: in turn
                    where = {"suite": SUITE, "profile": profile, "codec": codec}
                    context.mark("start", **where, kind=kind, phase=phase)
                    before = contention.take()
                    messages_done = phases.periodic(profile, codec, phase, link, data[codec])
                    phases.write_contention(profile, codec, phase, kind, before)
                    context.mark("end", **where, kind=kind, messages=messages_done)
                    progress.advance(f"{profile} {codec} {kind} {phase + 1}")
