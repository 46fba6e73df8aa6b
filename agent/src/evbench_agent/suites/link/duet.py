"""A periodic pair over TCP as a duet: every codec's periodic phase at once, each on
its own connection, their messages interleaved at the rate."""

from __future__ import annotations

import threading
import time
from typing import Any

from evbench_agent.link import client, messages
from evbench_agent.suites.link.phases import Phases
from evbench_core.errors import PartialRun, UserError


def duet(
    phases: Phases,
    profile: str,
    phase: int,
    order: list[tuple[str, messages.LinkCodec]],
    data: dict[str, Any],
) -> int:
    """One periodic phase of every codec at once, each on its own connection, their
    messages interleaved at the rate (codec i starts i / n of a period after the
    first: duet benchmarking). What the machine does at a moment then hits every
    codec's messages alike, and the codecs' phases of one duet make a pair."""
    settings = phases.settings
    spacing = 1 / settings.rate_hz / len(order)
    outcomes: dict[str, Any] = {}

    def measure(index: int, codec: str, link: messages.LinkCodec) -> None:
        try:
            time.sleep(index * spacing)
            with phases.connect(link) as connection:
                result = client.run_periodic(
                    connection,
                    data[codec],
                    settings.rate_hz,
                    settings.count,
                    settings.warmup_count,
                    settings.deadline_s,
                )
            outcomes[codec] = (result, connection)
        except (UserError, PartialRun, OSError) as error:
            outcomes[codec] = error

    phases.prepare()  # the responder is up before either thread connects
    threads = [
        threading.Thread(target=measure, args=(i, codec, link), name=f"duet-{codec}")
        for i, (codec, link) in enumerate(order)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total, failure = 0, None
    for codec, _link in order:
        found = outcomes.get(codec)
        if isinstance(found, BaseException) or found is None:
            failure = failure or found or PartialRun(f"the {codec} duet thread ended early")
            continue
        result, connection = found
        if result.sent:
            phases.write_periodic(profile, codec, phase, result, connection)
            phases.phases_done += 1
        total += result.total_sent
        if result.error and failure is None:
            failure = PartialRun(
                f"{result.error}; the run is saved as partial with the "
                f"{len(result.replies)} messages of this phase answered so far"
            )
    if failure is not None:
        raise failure
    return total
