"""The size of nlohmann::json's text against Python's json for the same values. Its Grisu2
writes most doubles in their shortest round-trip form, as repr does, but not all
(3.0303974248042582 where repr writes 3.030397424804258): such a number is as many bytes
longer as it has digits more; everything else is the same text."""

import json
import re

#: In JSON text: a string (skipped: its digits are no number), or a number (group 1).
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')


def nlohmann_sizes(python: list[bytes], nlohmann: list[bytes]) -> list[int]:
    """Python's sizes, plus the digits nlohmann::json wrote beyond the shortest form; the
    two texts must hold the same values."""
    sizes = []
    for ours, theirs in zip(python, nlohmann, strict=True):
        assert json.loads(ours) == json.loads(theirs)  # the same values
        numbers = [match.group(1) for match in _TOKEN.finditer(theirs.decode()) if match.group(1)]
        longer = sum(
            len(token) - len(repr(float(token)))
            for token in numbers
            if "." in token or "e" in token.lower()
        )
        sizes.append(len(ours) + longer)
    return sizes
