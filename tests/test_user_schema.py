"""A user's own message (tests/data/bms/*.proto, by the real protoc): classes, payloads, JSON
styles, samples, rules. Expected values come from hand-worked encodings, protobuf's json_format
and protoc's --python_out code, never from the module under test."""

import base64
import hashlib
import importlib
import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, require
from google.protobuf import json_format
from native_cross import varint as _varint
from test_decode_access import _check_profile

from evbench_agent import codecs, spec
from evbench_agent.payloads import samples, user_schema
from evbench_core.errors import UserError

DATA = ROOT / "tests" / "data" / "bms"
BMS = "evbench.example.BmsStatus"
RICH = "evbench.test.Rich"
BMS_SAMPLES = DATA / "bms_samples.jsonl"
#: Codecs bound to messages of their own (dbc: only what protos/ev_data.dbc describes):
#: a user's schema is refused with a clear error, not carried.
FIXED_SCHEMA = {"dbc"}


def protoc(*argv: str, stdin: bytes | None = None) -> bytes:
    """protoc from grpcio-tools (the host's compiler, and the generated code's): its output."""
    require(importlib.util.find_spec("grpc_tools") is not None, "grpcio-tools (protoc)")
    command = [sys.executable, "-m", "grpc_tools.protoc", *argv]
    done = subprocess.run(command, input=stdin, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def _protoc(*argv: str) -> bytes:
    return protoc(f"-I{DATA}", *argv)


def compile_set(directory: Path, proto: str | Path, out: Path, *include: Path) -> bytes:
    """The descriptor set, imports included, of `proto` (a path in `directory`, the first
    import directory of the `include` ones), compiled into `out`."""
    target = out / f"{Path(proto).name}.binpb"
    imports = [f"-I{d}" for d in (directory, *include)]
    protoc(*imports, "--include_imports", f"--descriptor_set_out={target}", str(directory / proto))
    return target.read_bytes()


@pytest.fixture(scope="module")
def descriptor_sets(tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("descriptors")
    return {name: compile_set(DATA, f"{name}.proto", out) for name in ("bms", "rich")}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The regular generated code of both schemas (protoc --python_out), imported."""
    out = tmp_path_factory.mktemp("generated")
    _protoc(f"--python_out={out}", *(str(DATA / f"{n}.proto") for n in ("bms", "units", "rich")))
    sys.path.insert(0, str(out))
    try:
        return {n: importlib.import_module(f"{n}_pb2") for n in ("bms", "rich")}
    finally:
        sys.path.remove(str(out))


def _document(serialized: bytes, message: str, **extra) -> dict:
    return {"descriptor_set": base64.b64encode(serialized).decode(), "message": message, **extra}


def _profile(descriptor_sets, name: str, message: str, **extra) -> user_schema.SchemaProfile:
    return user_schema.build_profile(_document(descriptor_sets[name], message, **extra))


def test_a_message_not_in_the_schema_or_its_imports_is_refused(descriptor_sets, tmp_path):
    """Naming the messages there, those of the imported file too."""
    with pytest.raises(UserError) as caught:
        user_schema.find_message(descriptor_sets["rich"], "evbench.test.Missing")
    assert "evbench.test.Missing" in str(caught.value)
    listed = caught.value.hint
    names = ["evbench.test.Rich", "evbench.test.Rich.Position", "evbench.test.Fault"]
    for name in [*names, "evbench.test.units.Quantity", "google.protobuf.Timestamp"]:
        assert name in listed
    target = tmp_path / "rich-alone.binpb"
    _protoc(f"--descriptor_set_out={target}", str(DATA / "rich.proto"))  # no --include_imports
    with pytest.raises(UserError, match=r"lacks imported files: .*units\.proto"):
        user_schema.find_message(target.read_bytes(), RICH)


def test_the_class_writes_the_hand_worked_wire_format_and_json_styles(descriptor_sets):
    cls = user_schema.find_message(descriptor_sets["bms"], BMS)
    fields = [f.name for f in cls.DESCRIPTOR.fields]
    assert fields[:4] == ["sequence", "timestamp_ms", "state", "cell_voltages_v"]
    state = cls.DESCRIPTOR.fields_by_name["state"].enum_type
    assert state.values_by_number[2].name == "BMS_STATE_DRIVE"
    message = cls(sequence=7, timestamp_ms=1764000000050, state=2, contactor_closed=True)
    message.cell_voltages_v.extend([3.712, 3.705])
    message.pack_current_a = -12.5
    expected = (
        b"\x08\x07"  # field 1 varint: sequence 7
        + b"\x10" + _varint(1764000000050)  # field 2 varint
        + b"\x18\x02"  # field 3 varint: BMS_STATE_DRIVE
        + b"\x22\x08" + struct.pack("<2f", 3.712, 3.705)  # field 4 packed floats
        + b"\x3d" + struct.pack("<f", -12.5)  # field 7 fixed32 float
        + b"\x48\x01"  # field 9 bool
    )  # fmt: skip
    assert message.SerializeToString() == expected

    def text(**settings) -> str:
        profile = _profile(descriptor_sets, "bms", BMS, **settings)
        return codecs.get("json").bind(profile).encode(profile.to_plain(message)).decode()

    assert text() == (
        '{"sequence":7,"timestampMs":"1764000000050","state":"BMS_STATE_DRIVE",'
        '"cellVoltagesV":[3.712,3.705],"packCurrentA":-12.5,"contactorClosed":true}'
    )
    assert text(json_style="fields") == (
        '{"sequence":7,"timestamp_ms":1764000000050,"state":2,"cell_voltages_v":[3.712,3.705],'
        '"cell_temperatures_c":[],"pack_voltage_v":0.0,"pack_current_a":-12.5,'
        '"soc_percent":0.0,"contactor_closed":true}'
    )
    mapped = text(json_map=json.loads((DATA / "bms_map.json").read_text()))
    assert mapped.startswith('{"seq":7,"ts":1764000000050,"bms_state":2,"cell_v":[3.712,')
    fields = _profile(descriptor_sets, "bms", BMS, json_style="fields")
    with pytest.raises(UserError, match="soc_percent is inf"):  # a number JSON cannot write
        fields.to_plain(fields.message_type(soc_percent=math.inf))


def test_generated_payloads_use_every_field_deterministically_and_unset_ones_are_not_read(
    descriptor_sets,
):
    profile = _profile(descriptor_sets, "rich", RICH)
    seen: set[str] = set()
    for item in profile.payloads(60, seed=3):
        seen.update(field.name for field, _value in item.message.ListFields())
        if item.message.HasField("stamp"):
            assert item.message.stamp.seconds >= 1_764_000_000
    # every field, every oneof member, set at least once
    assert seen == {f.name for f in profile.message_type.DESCRIPTOR.fields}

    def blobs(made: user_schema.SchemaProfile, seed: int) -> list[bytes]:
        return [i.message.SerializeToString(deterministic=True) for i in made.payloads(20, seed)]

    assert blobs(profile, 5) == blobs(profile, 5) != blobs(profile, 6)
    again = _profile(descriptor_sets, "rich", RICH)  # a new pool and classes: same bytes
    assert blobs(again, 5) == blobs(profile, 5)
    # unset sub-messages are not read; a hand-made message's leaves counted by hand
    message = profile.message_type(i32=5, label="x")
    message.names.extend(["a", "b"])
    message.gauges["p"] = 1.5
    message.stamp.seconds = 1  # a Timestamp is one JSON value: "1970-01-01T00:00:01Z"
    reader = codecs.get("protobuf").bind(profile).access
    assert reader(message) == 1 + 1 + 2 + 1 + 1


def test_generator_rules_shape_the_values_oneofs_and_maps_and_a_bad_path_names_fields(
    descriptor_sets,
):
    rules = yaml.safe_load((DATA / "bms_generate.yaml").read_text())
    for item in _profile(descriptor_sets, "bms", BMS, generator={"document": rules}).payloads(40):
        message = item.message
        assert len(message.cell_voltages_v) == 96 and len(message.cell_temperatures_c) == 24
        for volts in message.cell_voltages_v:
            millivolts = volts * 1000
            assert 3600 - 1e-3 <= millivolts <= 3950 + 1e-3
            assert abs(millivolts - round(millivolts)) < 1e-3  # on the 1 mV step (float32)
        assert message.state in (1, 2, 3)  # STANDBY, DRIVE, CHARGE by name in the rules
        assert 1764000000000 <= message.timestamp_ms <= 1764086400000
    # oneof and map rules
    rules = {"fields": {
        "source": {"choices": ["ecu_id"], "presence": 1}, "ecu_id": {"range": [16, 16]},
        "gauges": {"count": 3}, "gauges.value": {"range": [1.5, 1.5]}, "maybe": {"presence": 0},
    }}  # fmt: skip
    for item in _profile(descriptor_sets, "rich", RICH, generator={"document": rules}).payloads(10):
        message = item.message
        assert message.WhichOneof("source") == "ecu_id" and message.ecu_id == 16
        assert len(message.gauges) == 3 and set(message.gauges.values()) == {1.5}
        assert not message.HasField("maybe")
    # a bad path names the fields that exist
    rules = {"fields": {"position.altitude": {"range": [0, 1]}}}
    with pytest.raises(UserError) as caught:
        _profile(descriptor_sets, "rich", RICH, generator={"name": "g.json", "document": rules})
    assert "g.json" in str(caught.value) and "evbench.test.Rich.Position" in str(caught.value)
    assert caught.value.hint == "fields there: latitude, longitude"


@pytest.mark.parametrize("style", [{}, {"json_style": "fields"}], ids=["proto3", "fields"])
@pytest.mark.parametrize("codec_name", list(codecs.CODECS))
def test_round_trip_through_every_codec(descriptor_sets, codec_name, style):
    for name, message in (("rich", RICH), ("bms", BMS)):
        profile = _profile(descriptor_sets, name, message, **style)
        if codec_name in FIXED_SCHEMA:
            with pytest.raises(UserError, match="cannot carry profile 'schema:"):
                codecs.get(codec_name).bind(profile)
            continue
        bound = codecs.get(codec_name).bind(profile)
        for item in profile.payloads(25, seed=2):
            decoded = bound.decode(bound.encode(bound.data(item)))
            if bound.carries == codecs.MESSAGE:
                assert decoded == item.message
            else:
                assert decoded == item.plain  # every codec carries the same plain data
                assert profile.to_message(decoded) == item.message


def test_protobuf_is_the_generated_codes_and_proto3_json_is_json_formats(
    descriptor_sets, generated
):
    for name, message, class_name in (("rich", RICH, "Rich"), ("bms", BMS, "BmsStatus")):
        generated_cls = getattr(generated[name], class_name)
        profile = _profile(descriptor_sets, name, message)
        encode = codecs.get("protobuf").bind(profile).encode
        to_json = codecs.get("json").bind(profile).encode
        for item in profile.payloads(30, seed=9):
            regular = json_format.ParseDict(item.plain, generated_cls())
            assert len(encode(item.message)) == len(regular.SerializeToString())
            assert item.message.SerializeToString(deterministic=True) == (
                regular.SerializeToString(deterministic=True)
            )
            printed = json_format.MessageToJson(item.message, indent=None)
            # json_format prints ", " and ": "; the json codec writes compact separators.
            compact = json.dumps(json.loads(printed), separators=(",", ":"), ensure_ascii=False)
            assert to_json(item.plain) == compact.encode()


#: Leave unset what can be: optional scalars, sub-messages, oneofs, empty lists.
SPARSE = {"fields": {
    "maybe": {"presence": 0.3}, "position": {"presence": 0.3}, "stamp": {"presence": 0.5},
    "reading": {"presence": 0.5}, "source": {"presence": 0.4}, "names": {"count": [0, 1]},
    "gauges": {"count": [0, 1]},
}}  # fmt: skip


@pytest.mark.parametrize("style", ["proto3", "fields"])
@pytest.mark.parametrize("rules", [None, SPARSE], ids=["dense", "sparse"])
def test_a_user_schema_reads_the_same_leaves(descriptor_sets, style, rules):
    """Counted from the JSON text by the standard library (test_decode_access)."""
    generator = {"document": rules} if rules else None
    profile = _profile(descriptor_sets, "rich", RICH, json_style=style, generator=generator)
    assert _check_profile(profile, 40) > 0


def _rules(fields: dict) -> dict:
    """A generator file's settings: `fields` its document's fields."""
    return {"generator": {"name": "g.yaml", "document": {"fields": fields}}}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (_rules({"voltage": {"range": [0, 5]}}), "no field 'voltage' in evbench.example"),
        (_rules({"sequence": {"spread": 3}}), "unknown option spread"),
        (_rules({"soc_percent": {"range": [90, 10]}}), r"impossible range \[90, 10\]"),
        (_rules({"sequence": {"range": [-1, 10]}}), r"impossible range \[-1, 10\]"),
        (_rules({"sequence": {"range": [0.5, 10]}}), "two whole numbers"),
        (_rules({"cell_voltages_v": {"count": [5, 2]}}), r"impossible count \[5, 2\]"),
        (_rules({"state": {"choices": ["BMS_STATE_FLYING"]}}), "not a value of"),
        (_rules({"state": {"range": [0, 3]}}), "range applies to numbers"),
        (_rules({"soc_percent": {"presence": 0.5}}), "presence applies to fields with"),
        (_rules({"soc_percent": {"step": 0}}), "step must be a number above 0, not 0"),
        ({"generator": {"name": "g.yaml", "document": {"rules": {}}}}, "one key, 'fields'"),
        (_rules({}) | {"samples": samples.source_from_file(BMS_SAMPLES)}, "not both"),
        ({"json_map": {"voltage": "v"}}, "names no field of evbench.example.BmsStatus: voltage"),
        ({"json_map": {"sequence": "soc_percent"}}, "the same key 'soc_percent'"),
        ({"json_map": {"sequence": "seq"}, "json_style": "proto3"}, "goes with --json-style"),
        ({"json_style": "camel"}, "unknown JSON style 'camel'"),
        ({"profile_name": "a,b"}, "not usable"),
    ],
)
def test_bad_generator_samples_and_json_settings_are_refused(descriptor_sets, extra, expected):
    with pytest.raises(UserError, match=expected):
        _profile(descriptor_sets, "bms", BMS, **extra)


def test_samples_give_the_records_in_order_ship_what_a_run_takes_and_name_a_bad_one(
    descriptor_sets, generated, tmp_path
):
    path = BMS_SAMPLES
    source = samples.source_from_file(path)
    assert source["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert source["format"] == "jsonl"
    shipped = base64.b64decode(samples.source_from_file(path, limit=3)["data"]).decode()
    assert shipped == "".join(path.read_text().splitlines(True)[:3])
    profile = _profile(descriptor_sets, "bms", BMS, samples=source)
    items = profile.payloads(5)
    assert [i.message.sequence for i in items] == [4100, 4101, 4102, 4103, 4104]
    first = json.loads(path.read_text().splitlines()[0])
    assert items[0].plain == first  # written in the proto3 mapping, read back the same
    assert len(profile.payloads(500)) == 12  # all the file has
    # length-delimited samples, and a bad line or record
    cls = generated["bms"].BmsStatus
    blobs = [cls(sequence=n, soc_percent=50.5).SerializeToString() for n in range(1, 4)]
    path = tmp_path / "bms.ld"
    path.write_bytes(b"".join(_varint(len(b)) + b for b in blobs))
    profile = _profile(descriptor_sets, "bms", BMS, samples=samples.source_from_file(path))
    assert [i.message.SerializeToString() for i in profile.payloads(10)] == blobs
    # a bad line or record is named by file and place
    lines = BMS_SAMPLES.read_text().splitlines()
    lines[2] = lines[2].replace('"socPercent":71.3', '"socPercent":"full"')
    (tmp_path / "pack.jsonl").write_text("\n".join(lines) + "\n")
    blob = generated["bms"].BmsStatus(sequence=300).SerializeToString()
    (tmp_path / "cut.bin").write_bytes(_varint(len(blob)) + blob + _varint(40) + b"\x08")
    for name, says in [
        ("pack.jsonl", r"pack\.jsonl line 3: not a evbench\.example\.BmsStatus"),
        ("cut.bin", f"cut.bin: record 2 at byte {1 + len(blob)}: length 40"),
    ]:
        source = samples.source_from_file(tmp_path / name)
        with pytest.raises(UserError, match=says):
            _profile(descriptor_sets, "bms", BMS, samples=source)


def test_a_spec_with_a_schema_measures_its_profile_under_a_name_of_its_own(descriptor_sets):
    with pytest.raises(UserError, match="built-in profile"):
        user_schema.activate(_document(descriptor_sets["bms"], BMS, profile_name="seed"))
    document = _document(descriptor_sets["bms"], BMS, profile_name="our-bms")
    made = spec.from_dict({"schema": document, "codecs": "json,protobuf"})
    assert made.profiles == ("our-bms",)
    assert made.as_dict()["schema"]["message"] == BMS
    # a worker is a new interpreter: it finds the profile through the environment
    code = "from evbench_agent import payloads; print(len(payloads.get('our-bms').payloads(3)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "agent" / "src")}
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert child.stdout.strip() == "3", child.stderr
