"""The agent stops when the program that drives it goes away.

A host that is killed outright (SIGKILL, a crash, a dropped SSH session) cannot
stop the agent it started: the agent, reparented to init, would go on
measuring (or serving) for minutes with nobody to read it. So a command whose
standard output is a pipe or a socket (a program reads it: `evbench` on the
host, sshd for the host, the agent that started a responder or a worker)
watches two things every WATCH_INTERVAL_S: that reader (the pipe reports an
error once its last reader has closed it) and its parent process (a new parent
means the old one exited). When either is gone it logs one line, points its
standard output at /dev/null (later writes must not fail) and stops as on
SIGTERM: a run ends interrupted with its samples kept, a responder closes its
port. Detached runs (`launch`) write to a file, so they are never watched:
they are meant to outlive the connection that started them.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import stat
import threading

log = logging.getLogger(__name__)

#: How often the reader and the parent are looked at: the agent starts to stop
#: within this long of its host going away.
WATCH_INTERVAL_S = 0.5
_GONE = select.POLLERR | select.POLLHUP


def driven_by_a_program(fd: int = 1) -> bool:
    """True when `fd` is a pipe or a socket (not a terminal, a file or /dev/null)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def start(what: str) -> threading.Thread | None:
    """Watch this process's host (see the module's docstring); None when nothing drives it."""
    if not driven_by_a_program():
        return None
    thread = threading.Thread(
        target=_watch, args=(what, os.getppid()), name="host-watch", daemon=True
    )
    thread.start()
    return thread


def gone(parent: int, poller: select.poll, timeout_s: float) -> str | None:
    """Why the host is gone, or None while it is there (waits up to `timeout_s`)."""
    for _fd, events in poller.poll(timeout_s * 1000):
        if events & select.POLLNVAL:  # closed here: only the parent is left to watch
            poller.unregister(1)
            return None
        if events & _GONE:
            return "its reader closed standard output"
    if os.getppid() != parent:
        return f"its parent process {parent} exited"
    return None


def _watch(what: str, parent: int) -> None:
    poller = select.poll()
    poller.register(1, 0)  # no events asked for: poll reports only errors and hang-ups
    while (why := gone(parent, poller, WATCH_INTERVAL_S)) is None:
        pass
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass
    log.warning("the host went away (%s): the %s stops as on SIGTERM", why, what)
    os.kill(os.getpid(), signal.SIGTERM)
