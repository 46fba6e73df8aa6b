"""The signals that end a command as Ctrl-C does, for evbench and evbench-agent alike.

systemd stopping a service, a cancelled CI job and `timeout` send SIGTERM; a closed
terminal sends SIGHUP. Python's default for both is to die on the spot: no `finally`
runs, so a run is left marked "running" without its summary and checksums, and what a
command changed (a CPU governor, a labgrid place) is not put back. A command hands them
to a handler that raises KeyboardInterrupt, so its Ctrl-C path serves them too.

A signal the command was started with ignored stays ignored: `nohup ... &` asked to
survive the hangup, and a background job of a script was set to ignore it.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

#: The signals handled like Ctrl-C.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)

Handler = Callable[[int, FrameType | None], Any]


def handle(handler: Handler) -> dict[signal.Signals, Any]:
    """Point each of SIGNALS at `handler`, except one ignored on entry (see above); return
    the handlers they had, for `restore`. Only the main thread may call it (Python's rule)."""
    previous = {}
    for number in SIGNALS:
        if signal.getsignal(number) is not signal.SIG_IGN:
            previous[number] = signal.signal(number, handler)
    return previous


def restore(previous: dict[signal.Signals, Any]) -> None:
    """Put back the handlers `handle` (or the caller) replaced."""
    for number, handler in previous.items():
        signal.signal(number, handler)


__all__ = ["SIGNALS", "handle", "restore"]
