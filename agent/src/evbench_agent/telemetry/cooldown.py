"""The cool-down guard: before each phase, wait until the hottest zone is cool enough.

A fanless board that starts a phase hot throttles sooner, so phases that run
later would measure a slower machine. The guard waits, showing a countdown,
until the hottest thermal zone is below the threshold, or until its timeout:
then the phase runs anyway and the wait is recorded as timed out (the
telemetry of that phase shows the temperature it ran at).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from evbench_agent.progress import Progress

DEFAULT_TIMEOUT_S = 300.0
POLL_S = 1.0


class CoolDownGuard:
    def __init__(
        self,
        read_hottest_c: Callable[[], float | None],
        threshold_c: float,
        timeout_s: float,
        progress: Progress,
        poll_s: float = POLL_S,
    ) -> None:
        self.read_hottest_c = read_hottest_c
        self.threshold_c = threshold_c
        self.timeout_s = timeout_s
        self.progress = progress
        self.poll_s = poll_s
        #: One record per wait, for the manifest.
        self.waits: list[dict[str, Any]] = []

    def __call__(self, phase: dict[str, Any]) -> None:
        name = "/".join(str(phase[k]) for k in ("suite", "profile", "codec") if phase.get(k))
        start = time.monotonic()
        deadline = start + self.timeout_s
        first = temp = self.read_hottest_c()
        while temp is not None and temp >= self.threshold_c:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.progress.message(
                    f"cool-down before {name}: still {temp:.1f} °C after {self.timeout_s:g} s "
                    f"(target below {self.threshold_c:g} °C); running it anyway, recorded"
                )
                break
            self.progress.message(
                f"cool-down before {name}: {temp:.1f} °C, waiting for < {self.threshold_c:g} °C "
                f"({remaining:.0f} s left)"
            )
            time.sleep(min(self.poll_s, remaining))
            temp = self.read_hottest_c()
        if temp is None:
            outcome = "no reading"
        elif temp < self.threshold_c:
            outcome = "cool"
        else:
            outcome = "timeout"
        self.waits.append(
            {
                "phase": name,
                "start_c": first,
                "end_c": temp,
                "waited_s": round(time.monotonic() - start, 3),
                "outcome": outcome,
            }
        )
