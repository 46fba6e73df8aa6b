"""Decode + access reads the same leaves on the protobuf side as on the JSON side (issue 29,
item 4): each codec's `access` gives the count of the json codec's text, parsed by the
standard library, payload by payload; a user's schema in tests/test_user_schema.py."""

import json

import pytest

from evbench_agent import codecs, payloads

#: Codecs that carry every profile exactly (the others are optional or lossy here).
CODECS = ("json", "protobuf", "protobuf-json")
BUILT_IN = [name for name, p in payloads.PROFILES.items() if p.access is None]


def _leaves(value) -> int:
    """The values plain data holds: dict values and list items, down to neither's."""
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(_leaves(v) for v in value)
    return 1


def _check_profile(profile, count: int) -> int:
    bound = {name: codecs.get(name).bind(profile) for name in CODECS}
    total = 0
    for index, item in enumerate(profile.payloads(count, seed=11)):
        expected = _leaves(json.loads(bound["json"].encode(item.plain)))
        for name, codec in bound.items():
            decoded = codec.decode(codec.encode(codec.data(item)))
            if name == "protobuf-json":  # it prints defaults too: the protobuf count is its own
                assert codec.access(decoded) == bound["protobuf"].access(item.message)
                continue
            assert codec.access(decoded) == expected, (profile.name, index, name)
        total += expected
    return total


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_built_in_profile_reads_the_same_leaves(name):
    assert _check_profile(payloads.get(name), 20) > 0


def test_the_leaf_count_is_worked_out_by_hand():
    # a, then c and d (the empty list holds nothing), e (None is a value) and f: 5.
    assert _leaves({"a": 1, "b": [{"c": "x", "d": 2.0}, []], "e": None, "f": True}) == 5
