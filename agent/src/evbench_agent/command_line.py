"""The command-line runner both programs share: parser, dispatch, logging, error policy.

`evbench-agent` and `evbench` each describe their commands with `add_command`
on the parser `new_parser` gives, then call `run_program`. Every command is a
function of the parsed arguments that returns an `ExitCode`; what it raises
becomes one line and a hint (`errors.guarded`). Logging is set up here, once
per program: warnings by default, `-v` info, `-vv` debug, `--quiet` errors
only, on standard error as ``PROG: level: message`` (evbench_core.log_output,
imported once there is a command to run). Standard library only, nothing heavy:
both programs import this at start-up.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from evbench_core.errors import ExitCode, UserError, guarded

Handler = Callable[[argparse.Namespace], ExitCode]
TYPE_CHECKING = False  # start-up does without typing; what it guards is for type checkers
if TYPE_CHECKING:
    from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors raised as `UserError` (one message style, exit 2)."""

    def error(self, message: str) -> NoReturn:  # argparse would print and exit by itself
        raise UserError(message, hint=_suggestion(self, message) or f"see '{self.prog} --help'")


if TYPE_CHECKING:
    #: Where a program's subcommands go (argparse's own class, generic in its stub only).
    Commands = argparse._SubParsersAction[Parser]


def _parse(parser: argparse.ArgumentParser, arguments: list[str]) -> argparse.Namespace:
    """`parser.parse_args`, but arguments nobody knows are the chosen command's error:
    its help page and its options are the ones to name (argparse blames the program)."""
    parsed, unknown = parser.parse_known_args(arguments)
    if unknown:
        command = _chosen_command(parser, parsed) or parser
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    return parsed


def _chosen_command(
    parser: argparse.ArgumentParser, parsed: argparse.Namespace
) -> argparse.ArgumentParser | None:
    """The innermost subcommand's parser the arguments chose (`lab run`), if any."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(parsed, action.dest or "", None)
            found = action.choices.get(chosen) if isinstance(chosen, str) else None
            if isinstance(found, argparse.ArgumentParser):
                return _chosen_command(found, parsed) or found
    return None


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every option the parser and the commands it loaded know (a typo's candidates)."""
    found: list[str] = []
    pending = [parser]
    while pending:
        current = pending.pop()
        for action in current._actions:
            found.extend(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                pending.extend(action.choices.values())
    return found


def _suggestion(parser: argparse.ArgumentParser, message: str) -> str | None:
    """For an unknown option, the nearest one the program knows: "did you mean --quick?"."""
    prefix = "unrecognized arguments: "
    if not message.startswith(prefix):
        return None
    import difflib  # only on this error path: start-up stays light

    known = sorted(set(_option_strings(parser)))
    guesses = []
    for word in message[len(prefix) :].split():
        if not word.startswith("--"):
            continue
        close = difflib.get_close_matches(word.split("=", 1)[0], known, n=1, cutoff=0.6)
        if close:
            guesses.append(f"{close[0]} for {word}")
    if not guesses:
        return None
    return f"did you mean {', '.join(guesses)}? (see '{parser.prog} --help')"


def add_output_options(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=default,
        help="say more (-vv: debugging detail)",
    )
    parser.add_argument(
        "--quiet", action="store_true", default=default, help="errors only on standard error"
    )
    parser.add_argument("--debug", action="store_true", default=default, help="show tracebacks")


def new_parser(
    prog: str, description: str, version: str
) -> tuple[argparse.ArgumentParser, Commands]:
    """A program's parser and the subparsers its commands go into."""
    parser = Parser(prog=prog, description=description)
    parser.add_argument("--version", action="version", version=f"{prog} {version}")
    add_output_options(parser, None)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    return parser, commands


def add_command(
    commands: Commands,
    name: str,
    handler: Handler,
    help: str | None,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand that runs `handler`; -v, --quiet and --debug work after it too."""
    if help is None or help == argparse.SUPPRESS:
        command = commands.add_parser(name, description=description)
    else:
        command = commands.add_parser(name, help=help, description=description or help)
    # SUPPRESS: given only after the command, they do not reset what came before it.
    add_output_options(command, argparse.SUPPRESS)
    command.set_defaults(handler=handler)
    return command


def setup_logging(prog: str, verbose: int = 0, quiet: bool = False, debug: bool = False) -> None:
    """Send log records to standard error at the level the flags ask for (once per process)."""
    from evbench_core import log_output  # here: `logging` is costly and --help never logs

    log_output.setup_logging(prog, verbose, quiet, debug)


def run_program(
    prog: str,
    build_parser: Callable[[], argparse.ArgumentParser],
    argv: Sequence[str] | None,
    interrupted: str,
) -> int:
    """Parse `argv`, set up logging, run the chosen command under the error policy."""
    arguments = list(sys.argv[1:] if argv is None else argv)

    def dispatch() -> int:
        args = _parse(build_parser(), arguments)
        setup_logging(
            prog,
            getattr(args, "verbose", None) or 0,
            bool(getattr(args, "quiet", None)),
            bool(getattr(args, "debug", None)),
        )
        code = args.handler(args)
        if isinstance(code, bool) or not isinstance(code, int):
            raise TypeError(f"command {args.command!r} returned {code!r}, not an ExitCode")
        return ExitCode(code)  # every command ends in these terms; another number is a bug

    return guarded(prog, dispatch, "--debug" in arguments, interrupted)


__all__ = ["Parser", "add_command", "add_output_options", "new_parser", "run_program"]
