"""Progress for the person at the terminal: the agent's events (a bar on a terminal, plain
lines otherwise) and the host's own notices. Library modules log problems through
`logging`; what they report as progress goes through `notice`, which --quiet silences."""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING, TextIO

from evbench_core.log_output import notice, quiet

if TYPE_CHECKING:  # rich is imported only where a bar is drawn
    from rich.progress import Progress, TaskID

__all__ = ["ProgressView", "notice", "quiet"]

log = logging.getLogger(__name__)


class ProgressView:
    """Consumes the agent's JSON progress lines (`evbench-agent run --progress json`)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        # Looked up now, not at import: tests and wrappers replace sys.stderr.
        self.stream = stream or sys.stderr
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._quiet = quiet()
        if self.stream.isatty() and not self._quiet:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=False,
            )

    def __enter__(self) -> ProgressView:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def feed(self, line: str) -> bool:
        """Show one line of agent output; False when it is not a progress event."""
        try:
            event = json.loads(line)
        except ValueError:
            return False
        if not isinstance(event, dict) or "event" not in event:
            return False
        kind = event["event"]
        if kind == "start":  # -v: each suite as it begins and ends
            log.info("suite %s: started (%s steps)", event.get("suite"), event.get("total"))
        elif kind == "finish":
            log.info("suite %s: finished", event.get("suite"))
        if self._quiet:  # an event, consumed and not shown
            return True
        if self._bar is not None:
            if kind == "start":
                self._task = self._bar.add_task(event["suite"], total=event["total"])
            elif kind == "advance" and self._task is not None:
                self._bar.update(
                    self._task,
                    completed=event["done"],
                    description=f"{event['suite']}: {event['what']}{_eta(event)}",
                )
            elif kind == "message":
                self._bar.console.print(event["text"])
            return True
        if kind == "advance":
            print(
                f"{event['suite']} [{event['done']}/{event['total']}] {event['what']}{_eta(event)}",
                file=self.stream,
                flush=True,
            )
        elif kind == "message":  # wrapped: no line of the run's output is wider than 120
            print(_wrapped(str(event["text"])), file=self.stream, flush=True)
        return True


def _eta(event: dict) -> str:
    """`, about 3 min 05 s left` from the agent's ETA (an older agent sends none)."""
    eta = event.get("eta_s")
    if not isinstance(eta, (int, float)) or isinstance(eta, bool) or not 0 <= eta < 1e7:
        return ""
    seconds = round(eta)
    if seconds < 60:
        return f", about {seconds} s left"
    if seconds < 3600:
        return f", about {seconds // 60} min {seconds % 60:02d} s left"
    return f", about {seconds // 3600} h {seconds % 3600 // 60:02d} min left"


#: The widest line the plain progress prints (evbench.report.glance.MAX_LINE).
MAX_LINE = 120


def _wrapped(text: str) -> str:
    import textwrap

    lines = textwrap.wrap(text, MAX_LINE, subsequent_indent="  ", break_on_hyphens=False)
    return "\n".join(lines) or text
