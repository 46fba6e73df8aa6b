"""Flashing progress with rate and time left: a rich bar on a terminal, plain lines otherwise.

Silent under --quiet (log_output.quiet, as for every progress notice),
except for an interruption: that says how far the write got, which the user needs.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from evbench_core.log_output import quiet

MiB = 1024 * 1024
#: Plain-line mode prints at most this often, so logs stay readable.
PLAIN_INTERVAL = 5.0


class FlashProgress:
    def __init__(self, total: int | None, label: str, stream: TextIO | None = None) -> None:
        self.total = total
        self.label = label
        self.stream = stream = stream or sys.stderr
        self.done = 0
        self._start = time.monotonic()
        self._last_print = self._start
        self._bar = None
        self.quiet = quiet()
        if stream.isatty() and not self.quiet:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(binary_units=True),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=Console(file=stream),
            )
            self._task = self._bar.add_task(label, total=total)

    def __enter__(self) -> FlashProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, kind: type | None, *_exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
        if kind is KeyboardInterrupt:  # the CLI says "interrupted"; say how far it got
            print(
                f"{self.label}: interrupted after {self.done} bytes: the target is incomplete",
                file=self.stream,
                flush=True,
            )

    def advance(self, count: int) -> None:
        self.done += count
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
            return
        if self.quiet:
            return
        now = time.monotonic()
        if now - self._last_print >= PLAIN_INTERVAL:
            self._last_print = now
            print(self.line(now), file=self.stream, flush=True)

    def line(self, now: float) -> str:
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        text = f"{self.label}: {self.done / MiB:.1f}"
        if self.total:
            left = (self.total - self.done) / rate if rate else float("inf")
            text += f" of {self.total / MiB:.1f} MiB ({100 * self.done / self.total:.0f} %)"
            text += f", {rate / MiB:.1f} MiB/s, {left:.0f} s left"
        else:
            text += f" MiB, {rate / MiB:.1f} MiB/s"
        return text
