"""Progress of a run, as text for people or as JSON lines for the host.

The host (`evbench run`) asks for JSON lines and draws its own progress bar;
a person running the agent directly reads plain lines.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO


class Progress:
    """Reports nothing; the base of the reporters below."""

    def start(self, suite: str, total: int) -> None:
        self.suite, self.total, self.done = suite, total, 0

    def advance(self, what: str) -> None:
        self.done += 1

    def finish(self) -> None:
        pass

    def message(self, text: str) -> None:
        pass


class TextProgress(Progress):
    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream

    def advance(self, what: str) -> None:
        super().advance(what)
        print(f"{self.suite} [{self.done}/{self.total}] {what}", file=self.stream, flush=True)

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
        self._emit(event="advance", suite=self.suite, done=self.done, total=self.total, what=what)

    def finish(self) -> None:
        self._emit(event="finish", suite=self.suite)

    def message(self, text: str) -> None:
        self._emit(event="message", text=text)


REPORTERS = {"text": TextProgress, "json": JsonProgress, "none": Progress}
