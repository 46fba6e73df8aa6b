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

from evbench_core import interrupts

log = logging.getLogger(__name__)


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
def handled(process_ends: bool = False) -> Iterator[None]:
    """Handle the signals while the command runs, then put the previous handlers back
    (the command may run inside another program: a test, a script).

    With `process_ends` (the `evbench` program itself) SIGTERM and SIGHUP are ignored
    after the command instead: its work is done and the process is on its way out.
    Put back, Python's default would let a late one kill it on the way, exit 143 in
    place of the command's own: `timeout` signals the command and then its process
    group, and the second SIGTERM can arrive after a clean stop (`evbench serve`
    ended by the first, on a loaded machine: 2026-12-08).

    Only the main thread can set handlers (Python's rule): elsewhere nothing changes.
    """
    global _stopping
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _stopping = False
    previous = interrupts.handle(_on_signal)  # (one ignored on entry stays ignored)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _on_ctrl_c)
    try:
        yield
    finally:
        if process_ends:
            for number in interrupts.SIGNALS:
                previous.pop(number, None)
                signal.signal(number, signal.SIG_IGN)
        interrupts.restore(previous)
        _stopping = False
