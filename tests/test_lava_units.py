"""The one table of units between evbench's results and LAVA's test cases."""

from __future__ import annotations

import re

import pytest

from evbench_agent.integrations import lava_units
from evbench_core import results

#: What a LAVA signal parameter carries safely: LAVA splits on white space and '=',
#: and evbench keeps ids and units to these characters (docs/lava.md).
SIGNAL_SAFE = re.compile(r"^[A-Za-z0-9._-]+$")


@pytest.mark.parametrize("unit", sorted(results.UNITS | {"ratio"}))
def test_every_unit_has_a_lava_spelling_that_reads_back(unit: str) -> None:
    # Reading back to `unit` itself also means no two units share a spelling.
    spelling = lava_units.to_lava(unit)
    assert SIGNAL_SAFE.match(spelling), spelling
    assert lava_units.from_lava(spelling) == unit


@pytest.mark.parametrize(
    ("unit", "spelling"),
    [("bytes/s", "bytes-per-s"), ("messages/s", "messages-per-s"), ("°C", "degC")],
)
def test_rates_and_temperature_are_spelled_out(unit: str, spelling: str) -> None:
    assert lava_units.to_lava(unit) == spelling


@pytest.mark.parametrize(
    ("old", "unit"),
    [("B-s", "bytes/s"), ("msg-s", "messages/s"), ("B/s", "bytes/s"), ("msg/s", "messages/s")],
)
def test_what_older_agents_sent_still_reads(old: str, unit: str) -> None:
    assert lava_units.from_lava(old) == unit


def test_an_unknown_spelling_is_named() -> None:
    with pytest.raises(lava_units.UnknownUnit, match="furlongs"):
        lava_units.from_lava("furlongs")
