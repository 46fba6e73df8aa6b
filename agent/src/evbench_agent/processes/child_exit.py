"""How a child process ended, in the words a partial run's reason uses.

`subprocess` reports a process killed by signal N as returncode -N; the
manifest's reason and the report's first line say "signal 9" rather than
"exit -9", so a reader can tell a kill (the OOM killer, kill -9) from an error.
"""

from __future__ import annotations

import signal


def describe(returncode: int | None) -> str:
    """'signal 9, SIGKILL' for a kill, 'exit 3' for an exit, 'still running' for None."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
        return f"signal {-returncode}, {name}"
    return f"exit {returncode}"


def killed(returncode: int | None) -> bool:
    """True when the process was ended by a signal."""
    return returncode is not None and returncode < 0
