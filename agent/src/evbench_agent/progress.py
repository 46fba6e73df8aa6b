"""Progress of a run, as text for people or as JSON lines for the host.

The host (`evbench run`) asks for JSON lines and draws its own progress bar;
a person running the agent directly reads plain lines.
"""

from __future__ import annotations

import json
import sys
import time
from typing import TextIO


def duration_text(seconds: float) -> str:
    """`45 s`, `3 min 05 s`, `1 h 02 min`: a duration as a person reads it."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """Reports nothing; the base of the reporters below.

    Given the run's plan (`plan`: seconds per suite), each step also has an ETA: the
    time left at the pace the run has kept so far against its plan (the steps of a
    suite count alike), so a run slower than planned shows a later ETA at once.
    """

    _planned: dict[str, float] | None = None
    _started: float = 0.0
    suite, total, done = "", 0, 0

    def plan(self, planned: dict[str, float]) -> None:
        self._planned, self._started = dict(planned), time.monotonic()

    def start(self, suite: str, total: int) -> None:
        self.suite, self.total, self.done = suite, total, 0

    def advance(self, what: str) -> None:
        self.done += 1

    def eta_s(self) -> float | None:
        """Seconds left in the run, or None without a plan (or before it has a pace)."""
        planned = self._planned
        if not planned or self.suite not in planned or not self.total:
            return None
        suites = list(planned)
        before = sum(planned[s] for s in suites[: suites.index(self.suite)])
        reached = before + planned[self.suite] * min(1.0, self.done / self.total)
        total = sum(planned.values())
        if reached <= 0 or total <= 0:
            return None
        elapsed = time.monotonic() - self._started
        return elapsed * max(0.0, total - reached) / reached

    def eta_text(self) -> str:
        eta = self.eta_s()
        return "" if eta is None else f", about {duration_text(eta)} left"

    def finish(self) -> None:
        pass

    def message(self, text: str) -> None:
        pass


class TextProgress(Progress):
    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream

    def advance(self, what: str) -> None:
        super().advance(what)
        line = f"{self.suite} [{self.done}/{self.total}] {what}{self.eta_text()}"
        print(line, file=self.stream, flush=True)

    def message(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


class JsonProgress(Progress):
    def __init__(self, stream: TextIO = sys.stdout) -> None:
        self.stream = stream

    def _emit(self, **event: object) -> None:
        self.stream.write(json.dumps(event) + "\n")
        self.stream.flush()

    def start(self, suite: str, total: int) -> None:
        super().start(suite, total)
        self._emit(event="start", suite=suite, total=total)

    def advance(self, what: str) -> None:
        super().advance(what)
        event: dict[str, object] = {"done": self.done, "total": self.total, "what": what}
        eta = self.eta_s()
        if eta is not None:
            event["eta_s"] = round(eta, 1)
        self._emit(event="advance", suite=self.suite, **event)

    def finish(self) -> None:
        self._emit(event="finish", suite=self.suite)

    def message(self, text: str) -> None:
        self._emit(event="message", text=text)


REPORTERS = {"text": TextProgress, "json": JsonProgress, "none": Progress}
