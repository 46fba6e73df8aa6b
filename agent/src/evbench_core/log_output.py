"""Log records on standard error as ``PROG: level: message``, at the level the flags ask for.

The design (docs/running.md, "How much evbench says"): every module logs
through its own ``logging.getLogger(__name__)``, so evbench's records come from
loggers under ``evbench.`` (host), ``evbench_agent.`` (agent) and ``evbench_core.``
(both), and no module sets a level or a handler. Only the programs do, here, once: `setup_logging`
puts one handler on the root logger, sets evbench's own loggers to the level of
-v/-vv/--quiet, and keeps every other library (paramiko, urllib3, matplotlib,
labgrid, asyncio, PIL...) at warnings unless --debug.

Apart from evbench_agent.command_line because `logging` (with traceback,
linecache and tokenize) is a good part of a program's start-up, and a line that
only prints help or a usage error never logs: run_program imports this module
once it has a command to run.
"""

from __future__ import annotations

import logging
import re
import sys

TYPE_CHECKING = False  # typing costs start-up time; what it guards is for type checkers
if TYPE_CHECKING:
    from typing import TextIO

#: The loggers evbench's own modules log under: everything else is a library's.
OWN = ("evbench", "evbench_agent", "evbench_core")
#: A line of a traceback a library logs record by record (paramiko's transport thread
#: does, after every failed connection), and the record that introduces it.
_TRACEBACK_LINE = re.compile(
    r"^(|Traceback \(most recent call last\):|\s.*|During handling of .*|The above exception .*"
    r"|[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)(: .*)?|Exception \(\w+\): .*)$"
)


class _Formatter(logging.Formatter):
    def __init__(self, prog: str) -> None:
        super().__init__()
        self.prog = prog

    def format(self, record: logging.LogRecord) -> str:
        level = record.levelname.lower()
        if record.levelno <= logging.DEBUG:  # -vv: which module says it
            return f"{self.prog}: {level}: [{record.name}] {record.getMessage()}"
        return f"{self.prog}: {level}: {record.getMessage()}"


def _own(record: logging.LogRecord) -> bool:
    return record.name.split(".", 1)[0] in OWN


if TYPE_CHECKING:
    _TextHandler = logging.StreamHandler[TextIO]
else:  # StreamHandler takes a type argument at run time only from Python 3.11
    _TextHandler = logging.StreamHandler


class _StandardError(_TextHandler):
    """Writes to whatever `sys.stderr` is at each record (tests and pipes replace it)."""

    @property
    def stream(self) -> TextIO:  # the attribute logging.StreamHandler reads
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass  # never hold on to a stream that may be closed by the time a record comes


class _ThirdPartyCap(logging.Filter):
    """Without --debug: a library's record shows only from a warning up (even when the
    library set its own logger's level lower), and at most as a warning; the exceptions
    its threads log line by line (a dropped SSH connection: some 20 lines from paramiko)
    are left out. evbench says once per attempt what failed and what it does next."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _own(record):
            return True
        if record.levelno < logging.WARNING or _TRACEBACK_LINE.match(record.getMessage()):
            return False
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_handler = _StandardError()
_third_party_cap = _ThirdPartyCap()
#: The program named at the start of every line (set by setup_logging).
_program = {"name": "evbench"}


def quiet() -> bool:
    """True under --quiet: the person asked for errors only (no progress, no tables)."""
    return not logging.getLogger().isEnabledFor(logging.WARNING)


def notice(text: str) -> None:
    """One line of progress on standard error (`PROG: ...`); none under --quiet.

    Progress is not a problem, so it is no log record; it follows the same flags.
    """
    if not quiet():
        print(f"{_program['name']}: {text}", file=sys.stderr, flush=True)


def setup_logging(prog: str, verbose: int = 0, quiet: bool = False, debug: bool = False) -> None:
    """Send log records to standard error at the level the flags ask for.

    The one place that configures logging (each program calls it once per command):
    evbench's own loggers (OWN) at warnings, -v info, -vv debug, --quiet errors; the
    root logger, which every library's logger inherits its level from, at warnings
    at most unless `debug`, and a filter that caps what a library sets for itself."""
    if quiet:
        level = logging.ERROR
    else:
        level = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    for name in OWN:
        logging.getLogger(name).setLevel(level)
    if debug:
        _handler.removeFilter(_third_party_cap)
    else:
        _handler.addFilter(_third_party_cap)
    root = logging.getLogger()
    if _handler not in root.handlers:
        root.addHandler(_handler)
    _handler.setFormatter(_Formatter(prog))
    _program["name"] = prog
    root.setLevel(level if debug else max(level, logging.WARNING))


__all__ = ["notice", "quiet"]
