"""A capacity pair over TCP: each codec keeps a window of messages in flight on its
own connection, the codecs taking turns in short interleaved blocks
(saturation.run_interleaved), and its records (`phase: capacity`)."""

from __future__ import annotations

import contextlib
from typing import Any

from evbench_agent.link import messages, saturation
from evbench_agent.suites.link.phases import Phases
from evbench_agent.suites.link.plan import SUITE
from evbench_core.errors import PartialRun
from evbench_core.results import SampleSet


def capacity(
    phases: Phases,
    profile: str,
    phase: int,
    order: list[tuple[str, messages.LinkCodec]],
    data: dict[str, Any],
) -> int:
    """One capacity pair: the codecs' blocks interleaved on their own connections
    (saturation.run_interleaved), one codec saturating at a time."""
    settings = phases.settings
    with contextlib.ExitStack() as stack:
        links = [(stack.enter_context(phases.connect(link)), data[codec]) for codec, link in order]
        results = saturation.run_interleaved(
            links,
            settings.window,
            settings.capacity_s,
            settings.capacity_warmup_s,
            settings.capacity_blocks,
            settings.deadline_s,
        )
    failed = next((r.error for r in results if r.error), None)
    if failed:
        raise PartialRun(f"{failed}; the saturation phase is not recorded")
    phases.phases_done += len(order)
    for (codec, _link), result in zip(order, results, strict=True):
        _write_capacity(phases, profile, codec, phase, result)
    return sum(result.total_sent for result in results)


def _write_capacity(
    phases: Phases, profile: str, codec: str, phase: int, result: saturation.CapacityResult
) -> None:
    params = dict(
        phases.capacity_params,
        **phases.payload_digest(profile),
        elapsed_s=result.seconds,
        messages=result.messages,
    )
    sample_sets = []
    if result.seconds > 0:
        for metric, unit, value in (
            ("capacity_msgs", "messages/s", result.messages / result.seconds),
            ("capacity_bytes", "bytes/s", result.payload_bytes / result.seconds),
        ):
            sample_sets.append(
                SampleSet(SUITE, profile, codec, metric, unit, params, [value], phase)
            )
    if result.rtt_transport:
        sample_sets.append(
            SampleSet(
                SUITE, profile, codec, "rtt_transport", "s", params, result.rtt_transport, phase
            )
        )
    phases.context.writer.add(sample_sets)
