"""Errors and exit codes shared by evbench-agent and evbench.

Library code raises; only the command-line front ends turn an error into an
exit code and a one-line message (with a traceback under --debug).
"""

from __future__ import annotations

import enum
import os
import select
import sys
from collections.abc import Callable


class ExitCode(enum.IntEnum):
    OK = 0
    INTERNAL = 1
    USAGE = 2
    CHECK_FAILED = 3
    PARTIAL = 4
    INTERRUPTED = 130
    #: Standard output's reader went away (`| head` read its fill): 128 + SIGPIPE, what
    #: a shell shows for a program that pipe stopped.
    OUTPUT_CLOSED = 141


class EvbenchError(Exception):
    """Base of every error evbench reports; `hint` says what to do next."""

    exit_code = ExitCode.INTERNAL

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class UserError(EvbenchError):
    """A wrong argument, spec, file or environment: the user can fix it."""

    exit_code = ExitCode.USAGE


class FormatError(UserError):
    """A results directory or file that this version cannot read."""


class CheckFailed(EvbenchError):
    """A verification, a regression or an asked-for significance test failed."""

    exit_code = ExitCode.CHECK_FAILED


class PartialRun(EvbenchError):
    """The run stopped early; what was measured is saved and marked partial."""

    exit_code = ExitCode.PARTIAL


def guarded(prog: str, command: Callable[[], int], debug: bool, interrupted: str) -> int:
    """Run a program's work; turn what it raises into one line, a hint and an exit code.

    User errors and failed checks say what to do; a bug says it is one. The
    traceback shows only with --debug (`debug`), where the error is re-raised.
    Output whose reader went away (`| head`) ends the program quietly.
    """
    try:
        return int(command())
    except KeyboardInterrupt:
        print(f"{prog}: {interrupted}", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except EvbenchError as error:
        if debug:
            raise
        print(f"{prog}: error: {error}", file=sys.stderr)
        if error.hint:
            print(f"{prog}: hint: {error.hint}", file=sys.stderr)
        return error.exit_code
    except Exception as error:
        if isinstance(error, BrokenPipeError) and _output_closed():
            # What is left to print goes nowhere, the interpreter's last flush too.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return ExitCode.OUTPUT_CLOSED
        if debug:
            raise
        print(f"{prog}: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        print(f"{prog}: hint: run again with --debug for a traceback", file=sys.stderr)
        return ExitCode.INTERNAL


def _output_closed() -> bool:
    """Whether standard output is a pipe or socket whose reader has gone (poll says POLLERR
    or POLLHUP), not another pipe of the program's (a child's, a peer's): that is a bug."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _fd, events in poller.poll(0))
    except (OSError, ValueError):  # no standard output at all
        return False


__all__ = ["CheckFailed", "EvbenchError", "ExitCode", "FormatError", "PartialRun", "UserError"]
