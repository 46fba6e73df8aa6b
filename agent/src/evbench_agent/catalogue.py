"""What a run can measure, for `run --help`: the suites, payload profiles and codecs, each
with what it is, read from their registries (never a hand-kept list that drifts).

Built only when the help is printed (`add_to_help`): the registries import the codecs
and the suites, which a line that runs or fails earlier never needs.
"""

from __future__ import annotations

import argparse

#: The widest a line of the listing gets, whatever the terminal.
MAX_WIDTH = 100


def _first_line(module_name: str) -> str:
    """A suite's own summary: the first line of its module's docstring, after its name."""
    import importlib

    doc = (importlib.import_module(module_name).__doc__ or "").strip().splitlines()
    first = doc[0].rstrip(".") if doc else ""
    _name, colon, rest = first.partition(": ")
    return rest if colon else first


def _section(title: str, entries: list[tuple[str, str]], width: int) -> list[str]:
    import textwrap

    column = min(max(len(name) for name, _ in entries) + 4, 24)
    lines = [f"{title}:"]
    for name, what in entries:
        head = f"  {name}".ljust(column)
        if len(head) > column:  # a long name: its description starts on the next line
            lines.append(head)
            head = " " * column
        lines += textwrap.wrap(
            what, width, initial_indent=head, subsequent_indent=" " * column
        ) or [head.rstrip()]
    return lines


def text(width: int | None = None) -> str:
    """The listing: suites, profiles and codecs, each with what it is."""
    import shutil

    from evbench_agent import codecs, payloads, registry
    from evbench_agent.native.codec import CODECS as NATIVE_CODECS

    width = width or min(shutil.get_terminal_size().columns - 2, MAX_WIDTH)
    installed = set(codecs.installed())
    suites = [(name, _first_line(module)) for name, module in registry.REGISTRY.items()]
    profiles = [(name, profile.description) for name, profile in payloads.PROFILES.items()]
    python_codecs = [
        (name, codec.description + ("" if name in installed else " (not installed here)"))
        for name, codec in codecs.CODECS.items()
    ]
    native = [
        (name, codec.description + ("" if codec.available() else " (no harness here)"))
        for name, codec in NATIVE_CODECS.items()
    ]
    sections = [
        _section("suites (--suite)", suites, width),
        _section("payload profiles (--profile)", profiles, width),
        _section("codecs (--codecs)", python_codecs, width),
        _section("native codecs (--codecs, C and C++ harnesses)", native, width),
    ]
    return "\n\n".join("\n".join(lines) for lines in sections)


def add_to_help(parser: argparse.ArgumentParser) -> None:
    """Print the listing after the options of `parser`'s help, built only when asked."""
    show_help = parser.format_help

    def format_help() -> str:
        parser.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the columns
        parser.epilog = text()
        return show_help()

    # The listing is built only when help is printed: the one method of argparse to wrap.
    parser.format_help = format_help  # type: ignore[method-assign]
