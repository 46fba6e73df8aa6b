"""The terminal's width, and text wrapped to it without breaking a word or a number from
its unit.

`width()`: the terminal's width when standard output is a terminal
(shutil.get_terminal_size: COLUMNS when set, else the terminal's own), else DEFAULT (120:
piped output and files keep one shape, whatever COLUMNS an environment carries); a table
wider than the terminal is split (`table_width()`), a piped one stays whole. Prose is
wrapped to at most MAX_PROSE columns even in a wider terminal (a line longer than that
reads badly); tables may use the whole width.

Wrapping never breaks a word (a word longer than the line, a path, gets a line of its own)
and never puts a number and its unit on different lines: "113 µs", "22 %", "20 Hz" and
"1.23k msg/s" are glued with a no-break space before wrapping, and the space is given back
after.
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from typing import TextIO

#: The width when standard output is not a terminal and COLUMNS is not set.
DEFAULT = 120
#: No prose line is wider than this, however wide the terminal.
MAX_PROSE = 120
#: Narrower terminals are treated as this wide (a line still never breaks a word).
MIN_WIDTH = 40

_NBSP = "\u00a0"
#: The units evbench.report.units and the answer's sentences write after a number.
_UNIT = (
    r"(?:%|min|bytes|°C|(?:[kMG]i?B|B)(?:/s)?|[kM]?bit/s|[kMG]?Hz|"
    r"(?:[num]|µ)?(?:s|J|W|V|A)(?:/msg)?|msg/s)"
)
_NUMBER_UNIT = re.compile(rf"(?:(?<=\d)|(?<=\dk)) (?={_UNIT}(?![\w/]))")


def width(stream: TextIO | None = None) -> int:
    """The columns output to `stream` (standard output by default) may take: the
    terminal's (shutil.get_terminal_size, which honours COLUMNS) when it is one, else
    DEFAULT."""
    out = sys.stdout if stream is None else stream
    try:
        is_terminal = out.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        is_terminal = False
    if not is_terminal:
        return DEFAULT
    columns = shutil.get_terminal_size((DEFAULT, 24)).columns
    return max(columns, MIN_WIDTH) if columns > 0 else DEFAULT


def table_width(stream: TextIO | None = None) -> int | None:
    """The width a wide table must fit (split into column groups beyond it): the
    terminal's; None when the output is not a terminal (a file or a pipe keeps each
    table whole, one line per row, for the tools that read it)."""
    out = sys.stdout if stream is None else stream
    try:
        is_terminal = out.isatty()
    except (AttributeError, ValueError):
        is_terminal = False
    return width(out) if is_terminal else None


def prose(columns: int) -> int:
    """The width prose takes in a terminal of `columns`."""
    return min(columns, MAX_PROSE)


def glue(text: str) -> str:
    """`text` with each number joined to its unit by a no-break space."""
    return _NUMBER_UNIT.sub(_NBSP, text)


def wrap(text: str, columns: int = DEFAULT, indent: str = "") -> list[str]:
    """`text` in lines of at most `columns` (a '- ' item's next lines indented under it,
    a line's own leading indent kept on its next lines, `indent` added to them), no word
    broken, no number split from its unit."""
    lines: list[str] = []
    for line in text.splitlines():
        lead = line[: len(line) - len(line.lstrip(" "))]
        more = lead + indent + ("  " if line[len(lead) :].startswith("- ") else "")
        wrapped = textwrap.wrap(
            glue(line),
            columns,
            initial_indent="",
            subsequent_indent=more,
            break_on_hyphens=False,
            break_long_words=False,
            drop_whitespace=True,
        )
        lines += [piece.replace(_NBSP, " ") for piece in wrapped] or [""]
    return lines


__all__ = ["DEFAULT", "MAX_PROSE", "MIN_WIDTH", "glue", "prose", "table_width", "width", "wrap"]
