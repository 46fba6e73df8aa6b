"""evbench: the host side.

    evbench run --board local [--suite ...] [--profile ...] [--codecs ...] [--quick] [--out DIR]

Exit codes (the same as evbench-agent): 0 success, 1 internal error, 2 usage
or user error, 3 a check failed, 4 partial run, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evbench import __version__, commands
from evbench_agent.command_line import add_command, new_parser, run_program

PROG = "evbench"


def build_parser() -> argparse.ArgumentParser:
    parser, sub = new_parser(PROG, "evbench: Protobuf vs JSON on your own boards", __version__)
    for module in commands.load():
        module.setup_parser(add_command(sub, module.NAME, module.run, module.HELP))
    return parser


def evbench(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv`; return the exit code."""
    return run_program(PROG, build_parser, argv, "interrupted")


def main() -> None:
    sys.exit(evbench())
