"""Every installed codec round-trips every profile to the same values."""

from __future__ import annotations

import math

import pytest

from evbench_agent import codecs, payloads
from evbench_core.errors import UserError

#: float32 keeps 24 significant bits: a value read back differs by at most this ratio.
FLOAT32_RELATIVE = 2.0**-23

ALL_CODECS = list(codecs.CODECS)
#: dbc packs values at each signal's resolution, only for the profiles its DBC describes,
#: and leaves the VIN out: tests/test_dbc.py checks it within resolution.
EXACT_CODECS = [name for name in ALL_CODECS if name != "dbc"]
PROFILES = list(payloads.PROFILES)


def _same(expected, actual, rel: float) -> bool:
    if isinstance(expected, float) or isinstance(actual, float):
        return math.isclose(expected, actual, rel_tol=rel, abs_tol=0.0)
    if isinstance(expected, dict):
        return expected.keys() == actual.keys() and all(
            _same(expected[k], actual[k], rel) for k in expected
        )
    if isinstance(expected, list):
        return len(expected) == len(actual) and all(
            _same(e, a, rel) for e, a in zip(expected, actual, strict=True)
        )
    return expected == actual and type(expected) is type(actual)


def test_every_codec_is_available_here_and_the_backend_is_reported():
    # The always present ones, and the requirements of agent[fast]: the test
    # environment installs them all.
    assert {"protobuf", "json", "protobuf-json"} <= set(codecs.available()) == set(ALL_CODECS)
    assert codecs.protobuf_backend() in ("upb", "cpp", "python")


@pytest.mark.parametrize("profile_name", PROFILES)
@pytest.mark.parametrize("codec_name", EXACT_CODECS)
def test_round_trip_keeps_every_value(codec_name, profile_name):
    profile = payloads.get(profile_name)
    bound = codecs.get(codec_name).bind(profile)
    for item in profile.payloads(25):
        blob = bound.encode(bound.data(item))
        assert isinstance(blob, bytes) and blob
        decoded = bound.decode(blob)
        if bound.carries == codecs.MESSAGE:
            assert decoded == item.message  # exact: the message's own field types
        else:
            assert _same(item.plain, decoded, rel=0.0)  # doubles survive exactly


@pytest.mark.parametrize("profile_name", PROFILES)
def test_message_and_plain_forms_carry_the_same_values(profile_name):
    # The protobuf message may store readings as float32 (ev-full): equal within it.
    profile = payloads.get(profile_name)
    for item in profile.payloads(25):
        assert _same(item.plain, profile.to_plain(item.message), rel=FLOAT32_RELATIVE)


def _leaves(value) -> int:
    """The values plain data holds, counted here: each dict value and list item, down to
    what is neither (a number, a string, a bool, None)."""
    if isinstance(value, dict):
        return sum(_leaves(item) for item in value.values())
    if isinstance(value, list):
        return sum(_leaves(item) for item in value)
    return 1


def test_the_leaf_count_is_worked_out_by_hand():
    # a, then c and d (the empty list holds nothing), e (None is a value) and f: 5.
    assert _leaves({"a": 1, "b": [{"c": "x", "d": 2.0}, []], "e": None, "f": True}) == 5


@pytest.mark.parametrize("profile_name", PROFILES)
def test_decode_access_reads_every_leaf_of_the_payload_in_every_codec(profile_name):
    # Every leaf of the payload's plain data, or the one value the skipping profiles'
    # reader needs (their last field): the same count whatever the codec decoded to.
    profile = payloads.get(profile_name)
    item = profile.payloads(1)[0]
    expected = 1 if profile_name in ("skip-flat", "skip-nested") else _leaves(item.plain)
    counts = {}
    for name in EXACT_CODECS:
        bound = codecs.get(name).bind(profile)
        counts[name] = bound.access(bound.decode(bound.encode(bound.data(item))))
    assert counts == dict.fromkeys(EXACT_CODECS, expected)


def test_protobuf_json_prints_fields_without_presence():
    profile = payloads.get("ev-full")
    item = next(p for p in profile.payloads(50) if not p.plain["charger"]["plugged_in"])
    text = codecs.get("protobuf-json").bind(profile).encode(item.message).decode()
    assert '"pluggedIn":false' in text  # a default value, printed as the JSON codecs do


def test_unknown_and_missing_codecs_are_refused_naming_the_alternatives(monkeypatch):
    with pytest.raises(UserError, match="unknown codec 'nope'"):
        codecs.get("nope")
    missing = codecs.Codec("ghost", "evbench_ghost", "ghost", codecs.PLAIN, "", None, yocto=None)
    monkeypatch.setitem(codecs.CODECS, "ghost", missing)
    with pytest.raises(UserError, match="not installed") as caught:
        codecs.get("ghost")
    assert "json" in caught.value.hint


def test_an_aa_copy_is_the_same_codec_under_its_own_name():
    profile = payloads.get("seed")
    (item,) = profile.payloads(1, 7)
    original, copy = codecs.get("json"), codecs.get("json-aa")
    assert copy.name == "json-aa" and original.name == "json"
    bound, bound_copy = original.bind(profile), copy.bind(profile)
    assert bound_copy.encode(item.plain) == bound.encode(item.plain)
    # The same code, no wrapper (json's encode is a closure per binding, decode is
    # json.loads itself): nothing but the order can favour either name.
    assert bound_copy.encode.__code__ is bound.encode.__code__
    assert bound_copy.decode is bound.decode and bound_copy.access is bound.access
    assert codecs.original_name("protobuf-aa") == "protobuf"
    # a real codec whose name merely ends alike is left alone; so is an unknown original
    assert codecs.original_name("msgspec-json") == "msgspec-json"
    assert codecs.original_name("scratch-aa") == "scratch-aa"
    with pytest.raises(UserError, match="unknown codec 'scratch-aa'"):
        codecs.get("scratch-aa")
