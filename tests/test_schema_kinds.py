"""Every kind of field a team's schema has (tests/data/kinds/*.proto, by the real protoc):
well-known types, recursion, proto2 required fields, defaults, extensions and groups; and a
bounded generator. Expected values from the .proto, protobuf's json_format and the rules."""

import json
import math

import pytest
from conftest import ROOT
from google.protobuf import json_format
from test_decode_access import _check_profile
from test_user_schema import _document, _rules, _varint, compile_set

from evbench_agent import codecs
from evbench_agent.payloads import samples, user_schema
from evbench_core.errors import UserError

KINDS = ROOT / "tests" / "data" / "kinds"
EVERYTHING = "evbench.kinds.Everything"
CHASSIS = "evbench.legacy.Chassis"
FANOUT = "evbench.kinds.M"
DIAGNOSTICS = "evbench.legacy.Diagnostics"
#: A schema of every kind: well-known types and recursion; proto2 defaults, required
#: fields, extensions, groups; a repeated extension.
EVERY_KIND = [("well_known", EVERYTHING), ("legacy", CHASSIS), ("legacy", DIAGNOSTICS)]


@pytest.fixture(scope="module")
def sets(tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("kinds")
    names = ("well_known", "legacy", "fanout")
    return {name: compile_set(KINDS, f"{name}.proto", out) for name in names}


def _profile(serialized: bytes, message: str, **extra) -> user_schema.SchemaProfile:
    return user_schema.build_profile(_document(serialized, message, **extra))


def _as_json(message) -> dict:
    """A message's values, whatever order a runtime wrote the maps inside an Any in."""
    pool = message.DESCRIPTOR.file.pool
    return json.loads(json.dumps(json_format.MessageToDict(message, descriptor_pool=pool)))


@pytest.mark.parametrize("style", ["proto3", "fields"])
@pytest.mark.parametrize(("name", "message"), EVERY_KIND)
def test_every_kind_round_trips_and_reads_like_for_like(sets, name, message, style):
    profile = _profile(sets[name], message, json_style=style)
    assert _check_profile(profile, 20) > 0  # the same leaves on both sides, payload by payload
    for codec_name in ("json", "protobuf", "protobuf-json", "cbor2"):
        bound = codecs.get(codec_name).bind(profile)
        for item in profile.payloads(20, seed=3):
            decoded = bound.decode(bound.encode(bound.data(item)))
            back = decoded if bound.carries == codecs.MESSAGE else profile.to_message(decoded)
            assert _as_json(back) == _as_json(item.message), codec_name


def test_the_generator_reaches_every_field_packs_the_schemas_types_and_bounds_recursion(sets):
    profile = _profile(sets["well_known"], EVERYTHING)
    items = profile.payloads(200, seed=1)
    seen, packed = set(), set()
    for message in (item.message for item in items):
        seen.update(f.name for f, _ in message.ListFields())
        for any_value in [message.detail, *message.details, *message.by_name.values()]:
            if any_value.type_url:
                packed.add(any_value.type_url)
        for mask in [message.mask, *message.masks]:
            assert set(mask.paths) <= {f.name for f in message.DESCRIPTOR.fields}
    assert seen == {f.name for f in profile.message_type.DESCRIPTOR.fields}
    # the schema's own types, by full name; google.protobuf's are never packed by default
    assert packed == {
        f"type.googleapis.com/evbench.kinds.{n}" for n in ("Reading", "Node", "Everything", "M")
    } - {"type.googleapis.com/evbench.kinds.M"}
    # proto3 JSON of an Any goes through the schema's types, and parses back the same
    reading = next(item for item in items if item.message.detail.type_url)
    assert reading.plain["detail"]["@type"].startswith("type.googleapis.com/evbench.kinds.")
    pool = profile.message_type.DESCRIPTOR.file.pool
    again = json_format.ParseDict(reading.plain, profile.message_type(), descriptor_pool=pool)
    assert _as_json(again) == _as_json(reading.message) == reading.plain
    # a recursive type with fan-out 30 stays small by default
    items = _profile(sets["fanout"], FANOUT).payloads(200, seed=1)

    def depth(message) -> int:
        kids = [v for f, v in message.ListFields() if f.message_type is not None]
        flat = [c for v in kids for c in (v if isinstance(v, list) or hasattr(v, "add") else [v])]
        return 1 + max((depth(c) for c in flat), default=0)

    depths = [depth(i.message) for i in items]
    assert max(depths) <= 5  # the root and 4 levels below: the documented depth bound
    assert max(i.message.ByteSize() for i in items) < 64 * 1024
    assert any(d > 1 for d in depths)  # it does recurse


def test_proto2_required_fields_are_set_and_extensions_generated_and_carried(sets):
    profile = _profile(sets["legacy"], CHASSIS)
    pool = profile.message_type.DESCRIPTOR.file.pool
    soc = pool.FindExtensionByName("evbench.legacy.battery_soc")
    trailer = pool.FindExtensionByName("evbench.legacy.trailer_limits")
    with_soc = with_codes = with_lights = 0
    for item in profile.payloads(100, seed=5):
        message = item.message
        assert message.IsInitialized(), message.FindInitializationErrors()
        with_soc += message.HasExtension(soc)
        with_codes += message.HasExtension(trailer)
        with_lights += message.HasField("lights")
        assert item.message.SerializeToString()  # no EncodeError
    # optional extensions (a scalar, a message), an optional group: each sometimes
    assert 0 < with_soc < 100 and 0 < with_codes < 100
    assert with_lights == 100  # a group is a message field: always set by default
    # the fields style carries an extension under its full name
    fields = _profile(sets["legacy"], CHASSIS, json_style="fields")
    message = fields.message_type(sequence=1, gear=1)
    pool = fields.message_type.DESCRIPTOR.file.pool
    message.Extensions[pool.FindExtensionByName("evbench.legacy.battery_soc")] = 81.5
    plain = fields.to_plain(message)
    assert plain["[evbench.legacy.battery_soc]"] == 81.5
    assert fields.to_message(json.loads(json.dumps(plain))) == message


@pytest.mark.slow
def test_the_run_budget_stops_many_large_payloads(sets):
    # about 70,000 values a payload (a Reading is 7): under the payload's budget, not 200 times
    profile = _profile(sets["well_known"], EVERYTHING, **_rules({"readings": {"count": 10_000}}))
    with pytest.raises(UserError, match=r"payload [1-9]\d*: field 'readings[.a-z]*' takes the run"):
        profile.payloads(200)


def test_ranges_at_the_types_limits_do_not_crash_and_presence_and_empty_defaults_apply(sets):
    fields = {
        "readings.value": {"range": [0, 1.7976931348623157e308]},
        "wide": {"range": [-1.7976931348623157e308, 1.7976931348623157e308], "presence": 1},
        "readings": {"count": 3},
        "stamp.seconds": {"range": [0, 100]},
        "period.seconds": {"range": [-60, -1]},
    }
    for item in _profile(sets["well_known"], EVERYTHING, **_rules(fields)).payloads(30, seed=4):
        message = item.message
        assert all(0 <= r.value <= 1.7976931348623157e308 for r in message.readings)
        assert math.isfinite(message.wide)
        assert 0 <= message.stamp.seconds <= 100 and 0 <= message.stamp.nanos < 10**9
        assert -60 <= message.period.seconds <= -1 and message.period.nanos <= 0
        json.dumps(item.plain)  # the JSON mapping prints it (no negative nanos)
    # presence and empty: the defaults, and rules overriding them
    items = _profile(sets["well_known"], EVERYTHING).payloads(200, seed=8)
    wide = sum(i.message.HasField("wide") for i in items)
    assert 70 <= wide <= 130  # documented default 0.5 (binomial, 200 draws: about 4 sigma)
    rules = _rules({
        "wide": {"presence": 0.1}, "readings": {"empty": 1.0}, "details": {"empty": 0.0},
        "tree.number": {"presence": 1.0},  # a oneof member's: the chance it is the one set
    })  # fmt: skip
    tuned = _profile(sets["well_known"], EVERYTHING, **rules).payloads(200, seed=8)
    assert sum(i.message.HasField("wide") for i in tuned) <= 40
    assert all(len(i.message.readings) == 0 for i in tuned)
    assert all(len(i.message.details) >= 1 for i in tuned)
    assert all(i.message.tree.WhichOneof("payload") == "number" for i in tuned)


@pytest.mark.parametrize(
    ("name", "message", "fields", "expected"),
    [
        ("well_known", EVERYTHING, {"stamp.nanos": {"range": [-5, 10]}},
         r"impossible range \[-5, 10\]"),
        ("well_known", EVERYTHING, {"stamp.seconds": {"range": [0, 2**40]}}, "impossible range"),
        ("well_known", EVERYTHING, {"detail": {"choices": ["evbench.kinds.Nope"]}},
         "not a message type of the schema"),
        ("well_known", EVERYTHING, {"readings": {"empty": 2}},
         "empty must be a probability, 0 to 1, not 2"),
        ("well_known", EVERYTHING, {"wide": {"empty": 0.5}}, "empty applies to repeated"),
        ("well_known", EVERYTHING, {"tree.number": {"presence": 0.7},
                                    "tree.link": {"presence": 0.7}}, "add up to over 1"),
        ("legacy", CHASSIS, {"sequence": {"presence": 0.5}}, "required field is always set"),
        ("fanout", FANOUT, {"many": {"count": 100_000}}, "field 'many' takes the payload past"),
        # the node budget names the field path that blows it
        ("fanout", FANOUT, {"many": {"count": 60}, "many.many": {"count": 60},
                            "many.many.many": {"count": 60}},
         r"g\.yaml: payload 0: field 'many\.many\.many[^']*' takes .* budget per payload"),
    ],
)  # fmt: skip
def test_bad_rules_are_refused(sets, name, message, fields, expected):
    """Refused when the profile is made or, for a payload's size, when one is generated."""
    with pytest.raises(UserError, match=expected):
        _profile(sets[name], message, **_rules(fields)).payloads(1)


def test_samples_with_any_parse_through_the_schemas_types(sets, tmp_path):
    reading = {"@type": "type.googleapis.com/evbench.kinds.Reading", "sensor": "cell-7"}
    line = {
        "detail": reading | {"value": 3.712},
        "attributes": {"mode": "drive", "limits": [1, 2.5, None, True]},
        "anything": {"nested": {"deep": "yes"}},
        "mask": "readings,stamp",
        "period": "1.500s",
        "i64": "-9223372036854775808",
        "tree": {"name": "root", "children": [{"name": "a", "link": {"name": "b"}}]},
    }
    path = tmp_path / "everything.jsonl"
    path.write_text(json.dumps(line) + "\n")
    profile = _profile(sets["well_known"], EVERYTHING, samples=samples.source_from_file(path))
    (item,) = profile.payloads(5)
    assert item.message.detail.type_url.endswith("evbench.kinds.Reading")
    assert item.plain == line | {"period": "1.500s"}
    blob = item.message.SerializeToString()
    binary = tmp_path / "everything.bin"
    assert 128 <= len(blob) < 16384  # a two-byte length prefix
    binary.write_bytes(bytes([len(blob) & 0x7F | 0x80, len(blob) >> 7]) + blob)
    again = _profile(sets["well_known"], EVERYTHING, samples=samples.source_from_file(binary))
    (from_binary,) = again.payloads(5)
    assert from_binary.plain == item.plain  # binary samples print through the schema's pool


@pytest.mark.parametrize(("name", "message"), EVERY_KIND)
def test_generated_messages_read_back_as_json_and_binary_samples(sets, tmp_path, name, message):
    """What protobuf's own printer and serializer write of generated messages (every kind of
    field) reads back as the same messages."""
    generated = [i.message for i in _profile(sets[name], message).payloads(12, seed=6)]
    pool = generated[0].DESCRIPTOR.file.pool
    jsonl = tmp_path / "generated.jsonl"
    jsonl.write_text(
        "".join(json_format.MessageToJson(m, indent=None, descriptor_pool=pool) + "\n"
                for m in generated)
    )  # fmt: skip
    binary = tmp_path / "generated.ld"
    blobs = [m.SerializeToString() for m in generated]
    binary.write_bytes(b"".join(_varint(len(b)) + b for b in blobs))
    for path in (jsonl, binary):
        profile = _profile(sets[name], message, samples=samples.source_from_file(path))
        read = [i.message for i in profile.payloads(50)]
        assert [_as_json(m) for m in read] == [_as_json(m) for m in generated], path.name
        assert [m.ByteSize() for m in read] == [len(b) for b in blobs]
