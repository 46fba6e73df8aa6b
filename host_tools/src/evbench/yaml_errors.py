"""PyYAML's errors said in one line, for every YAML file evbench reads (a LAB.yaml,
generator rules, a LAVA server's results): str(error) spreads one over several lines and
quotes the file, where an error is one line naming where and what."""

from __future__ import annotations

#: An error quoting more of the file than this is cut: one line of error, not the file.
MAX_PROBLEM_CHARS = 300


def one_line(error: Exception, text: str) -> str:
    """PyYAML's error in one line: where (1-based, as editors count), what, and the
    construct it was in. `text` is the document read: a refused character's error gives
    only its index in it."""
    problem, mark = getattr(error, "problem", None), getattr(error, "problem_mark", None)
    if problem is not None and mark is not None:
        said = f"{_where(mark.line, mark.column)}: {problem}"
        context, began = getattr(error, "context", None), getattr(error, "context_mark", None)
        if context and began and (began.line, began.column) != (mark.line, mark.column):
            said += f" ({context} that began at {_where(began.line, began.column)})"
        elif context:
            said += f" ({context})"
        return _flat(said)
    position = getattr(error, "position", None)
    if isinstance(position, int):  # a reader error, a character YAML refuses: no mark, an index
        line, line_start = text.count("\n", 0, position), text.rfind("\n", 0, position) + 1
        code = getattr(error, "character", None)  # a code point, written as PyYAML does
        character = f"#x{code:04x}" if isinstance(code, int) else repr(code)
        refused = f"unacceptable character {character}: {getattr(error, 'reason', '')}"
        return _flat(f"{_where(line, position - line_start)}: {refused}")
    return _flat(str(error))


def _where(line: int, column: int) -> str:
    # PyYAML counts from 0; editors, and people reading the error, from 1.
    return f"line {line + 1}, column {column + 1}"


def _flat(text: str) -> str:
    # The problem may quote the file (a tag, a character): no newline, and not a page of it.
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_PROBLEM_CHARS else f"{flat[:MAX_PROBLEM_CHARS]}..."


__all__ = ["one_line"]
