"""Decode + access reads the same leaves on the protobuf side as on the JSON side.

The expected count of every payload is worked out here, independently of the
module: the JSON text the json codec sends is parsed by the standard library
and its values counted (each dict value, each list item; anything else is
one leaf). Every codec's `access` on its own decoded value must give that
count, payload by payload (issue 29, item 4).
"""

from __future__ import annotations

import base64
import json

import pytest
from conftest import ROOT
from test_user_schema import _protoc

from evbench_agent import codecs, payloads
from evbench_agent.payloads import user_schema

DATA = ROOT / "tests" / "data" / "bms"
#: Codecs that carry every profile exactly (the others are optional or lossy here).
CODECS = ("json", "protobuf", "protobuf-json")
BUILT_IN = [name for name, p in payloads.PROFILES.items() if p.access is None]


def _leaves(value) -> int:
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


@pytest.fixture(scope="module")
def rich(tmp_path_factory) -> dict:
    """The schema document of tests/data/bms/rich.proto's Rich."""
    target = tmp_path_factory.mktemp("rich") / "rich.binpb"
    _protoc("--include_imports", f"--descriptor_set_out={target}", str(DATA / "rich.proto"))
    return {"descriptor_set": base64.b64encode(target.read_bytes()).decode(),
            "message": "evbench.test.Rich"}  # fmt: skip


#: Leave unset what can be: optional scalars, sub-messages, oneofs, empty lists.
SPARSE = {"fields": {
    "maybe": {"presence": 0.3}, "position": {"presence": 0.3}, "stamp": {"presence": 0.5},
    "reading": {"presence": 0.5}, "source": {"presence": 0.4}, "names": {"count": [0, 1]},
    "gauges": {"count": [0, 1]},
}}  # fmt: skip


@pytest.mark.parametrize("style", ["proto3", "fields"])
@pytest.mark.parametrize("rules", [None, SPARSE], ids=["dense", "sparse"])
def test_a_user_schema_reads_the_same_leaves(rich, style, rules):
    document = rich | {"json_style": style}
    document["generator"] = {"document": rules} if rules else None
    assert _check_profile(user_schema.build_profile(document), 40) > 0


def test_unset_sub_messages_are_not_read(rich):
    """A hand-made message: the leaves are counted by hand, not by either walker."""
    profile = user_schema.build_profile(rich)
    message = profile.message_type(i32=5, label="x")
    message.names.extend(["a", "b"])
    message.gauges["p"] = 1.5
    message.stamp.seconds = 1  # a Timestamp is one JSON value: "1970-01-01T00:00:01Z"
    reader = codecs.get("protobuf").bind(profile).access
    assert reader(message) == 1 + 1 + 2 + 1 + 1
