"""SIGTERM and SIGHUP end an evbench command as Ctrl-C does.

systemd stopping a service, a CI job cancelled, `timeout` and a closed terminal
send SIGTERM or SIGHUP, not SIGINT. Python's default for both is to die on the
spot: no `finally`, so a labgrid place stays acquired, a child keeps running and
a run is left marked "running". Here they raise KeyboardInterrupt in the main
thread instead, so every command's Ctrl-C path (release the place, stop the
children, keep the partial run, exit 130) serves them too.

A signal the command was started with ignored stays ignored: `nohup evbench lab
run &` survives the hangup it asked to survive, and a background job of a script
keeps ignoring Ctrl-C as the shell arranged.

Once one interrupt is on its way, further SIGTERMs and SIGHUPs are noted and
ignored: the clean-up they would cut short is what frees the lab (each of its
steps has its own deadline). A second Ctrl-C still interrupts, as a user at a
terminal expects.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from types import FrameType

log = logging.getLogger(__name__)

#: The signals handled like Ctrl-C.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A signal other than SIGINT, stopping the command as Ctrl-C would."""


_stopping = False


def stopping() -> bool:
    """True once an interrupt (any of the signals, or Ctrl-C) has begun ending the command."""
    return _stopping


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    global _stopping
    name = signal.Signals(signum).name
    if _stopping:
        log.warning("%s received while already stopping: finishing the clean-up first", name)
        return
    _stopping = True
    raise Interrupted(name)


def _on_ctrl_c(signum: int, frame: FrameType | None) -> None:
    global _stopping
    _stopping = True
    signal.default_int_handler(signum, frame)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Handle the signals while the command runs, then put the previous handlers back
    (the command may run inside another program: a test, a script).

    Only the main thread can set handlers (Python's rule): elsewhere nothing changes.
    """
    global _stopping
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in (*SIGNALS, signal.SIGINT)}
    _stopping = False
    for number in SIGNALS:
        # Ignored on entry (nohup ignores SIGHUP): the caller asked to be left running.
        if previous[number] is not signal.SIG_IGN:
            signal.signal(number, _on_signal)
    if previous[signal.SIGINT] is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_ctrl_c)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        _stopping = False
