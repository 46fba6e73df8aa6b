"""Errors and exit codes shared by evbench-agent and evbench.

Library code raises; only the command-line front ends turn an error into an
exit code and a one-line message (with a traceback under --debug).
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable


class ExitCode(enum.IntEnum):
    OK = 0
    INTERNAL = 1
    USAGE = 2
    CHECK_FAILED = 3
    PARTIAL = 4
    INTERRUPTED = 130


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
        if debug:
            raise
        print(f"{prog}: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        print(f"{prog}: hint: run again with --debug for a traceback", file=sys.stderr)
        return ExitCode.INTERNAL


__all__ = ["CheckFailed", "EvbenchError", "ExitCode", "FormatError", "PartialRun", "UserError"]
