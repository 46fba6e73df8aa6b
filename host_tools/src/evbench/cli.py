"""evbench: the host side.

    evbench run --board local [--suite ...] [--profile ...] [--codecs ...] [--quick] [--out DIR]

Exit codes (the same as evbench-agent): 0 success, 1 internal error, 2 usage
or user error, 3 a check failed, 4 partial run, 130 interrupted, 141 the output's
reader went away.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from evbench import __version__, commands, interrupts
from evbench_agent.command_line import add_command, new_parser, run_program

PROG = "evbench"


def _wanted(argv: Sequence[str] | None) -> tuple[str, ...]:
    """The commands to load: the one named on the line, or all (for --help, a typo).

    Only that command's module is imported, so `evbench flash ...` does not pay
    for the others' imports. The program's own options take no value, so the
    first word that is not an option is the command.
    """
    for word in argv or ():
        if not word.startswith("-"):
            return (word,) if word in commands.COMMANDS else commands.COMMANDS
    return commands.COMMANDS


def _not_loaded(args: argparse.Namespace) -> NoReturn:
    raise RuntimeError(f"command {args.command!r} was listed, not loaded")  # a bug if reached


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with every command, or only the one `argv` names.

    A line that names no command (`--help`, a typo) can only print the listing
    or an error, so the commands are listed from their summaries, not imported.
    """
    parser, sub = new_parser(PROG, "evbench: Protobuf vs JSON on your own boards", __version__)
    wanted = _wanted(argv)
    for name in wanted:
        if argv is not None and len(wanted) > 1:  # every command has a summary: one list
            add_command(sub, name, _not_loaded, commands.SUMMARIES[name])
            continue
        module = importlib.import_module(f"evbench.commands.{name}")
        module.setup_parser(add_command(sub, module.NAME, module.run, module.HELP))
    return parser


def evbench(argv: Sequence[str] | None = None, process_ends: bool = False) -> int:
    """Run the command line `argv`; return the exit code. `process_ends`: this is the
    program, which exits next (evbench.interrupts.handled)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM and SIGHUP end a command as Ctrl-C does
    with interrupts.handled(process_ends):
        return run_program(PROG, lambda: build_parser(arguments), arguments, "interrupted")


def main() -> None:
    sys.exit(evbench(process_ends=True))
