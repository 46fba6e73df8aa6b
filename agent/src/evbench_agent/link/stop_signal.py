"""A responder's stop: SIGTERM (or Ctrl-C) ends its serve loop cleanly, exit 0.

`timeout(1)` and shells stopping a job signal the process and then its process
group, so a responder may be sent SIGTERM twice. The first ends the loop; any
after it is the same request and is ignored, also once the loop has ended: the
process is on its way out, and the handler it had before (the host CLI's maps
SIGTERM to "interrupted", exit 130) must not turn a clean stop into an error.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any


class Stopped(BaseException):
    """Raised in the main thread by the first SIGTERM.

    Not an Exception: a handler that catches those (logging's, while it writes a
    line) must not swallow the stop and leave the process deaf to SIGTERM."""


@contextlib.contextmanager
def until_sigterm() -> Iterator[None]:
    """Run the block until SIGTERM or Ctrl-C; either ends it without an error."""
    stopping = False

    def stop(_signum: int, _frame: Any) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            raise Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except (Stopped, KeyboardInterrupt):
        stopping = True
    finally:
        # Stopped: a second SIGTERM may still be on its way (see above).
        signal.signal(signal.SIGTERM, signal.SIG_IGN if stopping else previous)


__all__ = ["Stopped", "until_sigterm"]
