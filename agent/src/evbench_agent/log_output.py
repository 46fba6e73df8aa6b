"""Log records on standard error as ``PROG: level: message``, at the level the flags ask for.

Apart from evbench_agent.command_line because `logging` (with traceback,
linecache and tokenize) is a good part of a program's start-up, and a line that
only prints help or a usage error never logs: run_program imports this module
once it has a command to run.
"""

from __future__ import annotations

import logging
import sys


class _Formatter(logging.Formatter):
    def __init__(self, prog: str) -> None:
        super().__init__()
        self.prog = prog

    def format(self, record: logging.LogRecord) -> str:
        return f"{self.prog}: {record.levelname.lower()}: {record.getMessage()}"


class _StandardError(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is at each record (tests and pipes replace it)."""

    @property
    def stream(self) -> object:  # the attribute logging.StreamHandler reads
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass  # never hold on to a stream that may be closed by the time a record comes


_handler = _StandardError()
#: The program named at the start of every line (set by setup_logging).
_program = {"name": "evbench"}


def notice(text: str) -> None:
    """One line of progress on standard error (`PROG: ...`); none under --quiet.

    Progress is not a problem, so it is no log record; it follows the same flags.
    """
    if logging.getLogger().isEnabledFor(logging.WARNING):
        print(f"{_program['name']}: {text}", file=sys.stderr, flush=True)


def setup_logging(prog: str, verbose: int = 0, quiet: bool = False) -> None:
    """Send log records to standard error at the level the flags ask for (once per process)."""
    root = logging.getLogger()
    if _handler not in root.handlers:
        root.addHandler(_handler)
    _handler.setFormatter(_Formatter(prog))
    _program["name"] = prog
    if quiet:
        level = logging.ERROR
    else:
        level = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    root.setLevel(level)
