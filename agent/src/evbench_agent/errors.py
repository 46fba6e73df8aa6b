"""Errors and exit codes shared by evbench-agent and evbench.

Library code raises; only the command-line front ends turn an error into an
exit code and a one-line message (with a traceback under --debug).
"""

from __future__ import annotations

import enum


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
