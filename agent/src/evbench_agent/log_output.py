"""Log records on standard error as ``PROG: level: message``, at the level the flags ask for.

Apart from evbench_agent.command_line because `logging` (with traceback,
linecache and tokenize) is a good part of a program's start-up, and a line that
only prints help or a usage error never logs: run_program imports this module
once it has a command to run.
"""

from __future__ import annotations

import logging
import re
import sys

#: Libraries whose records reach the user only as warnings, unless --debug: their
#: progress and their own view of a failure evbench reports in its own words.
THIRD_PARTY = ("paramiko", "urllib3", "matplotlib")
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
        return f"{self.prog}: {record.levelname.lower()}: {record.getMessage()}"


class _StandardError(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is at each record (tests and pipes replace it)."""

    @property
    def stream(self) -> object:  # the attribute logging.StreamHandler reads
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass  # never hold on to a stream that may be closed by the time a record comes


class _ThirdPartyCap(logging.Filter):
    """Without --debug: a library's record is at most a warning, and the exceptions its
    threads log line by line (a dropped SSH connection: some 20 lines from paramiko) are
    left out; evbench says once per attempt what failed and what it does next."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".", 1)[0] not in THIRD_PARTY:
            return True
        if _TRACEBACK_LINE.match(record.getMessage()):
            return False
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_handler = _StandardError()
_third_party_cap = _ThirdPartyCap()
#: The program named at the start of every line (set by setup_logging).
_program = {"name": "evbench"}


def notice(text: str) -> None:
    """One line of progress on standard error (`PROG: ...`); none under --quiet.

    Progress is not a problem, so it is no log record; it follows the same flags.
    """
    if logging.getLogger().isEnabledFor(logging.WARNING):
        print(f"{_program['name']}: {text}", file=sys.stderr, flush=True)


def setup_logging(prog: str, verbose: int = 0, quiet: bool = False, debug: bool = False) -> None:
    """Send log records to standard error at the level the flags ask for (once per process).

    Third-party libraries (THIRD_PARTY) are capped at WARNING unless `debug`."""
    for name in THIRD_PARTY:
        logging.getLogger(name).setLevel(logging.NOTSET if debug else logging.WARNING)
    if debug:
        _handler.removeFilter(_third_party_cap)
    else:
        _handler.addFilter(_third_party_cap)
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
