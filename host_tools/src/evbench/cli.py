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
from evbench_agent.errors import UserError, guarded

PROG = "evbench"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        raise UserError(message, hint=f"see '{self.prog} --help'")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="evbench: Protobuf vs JSON on your own boards")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in commands.load():
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.setup_parser(command)
        command.set_defaults(handler=module.run)
    return parser


def evbench(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv`; return the exit code."""

    def dispatch() -> int:
        args = build_parser().parse_args(argv)
        return args.handler(args)

    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    return guarded(PROG, dispatch, debug, "interrupted")


def main() -> None:
    sys.exit(evbench())
