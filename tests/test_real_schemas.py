"""Public schemas no one here wrote (tests/data/vendor/README.md), measured like a team's own:
GTFS-realtime (proto2, extended by tests/data/kinds/gtfs_ev.proto), uProtocol UStatus
(repeated Any), ONNX ModelProto (recursive, large). Expected sizes from the real protoc's
`--encode`; the fields to reach from the .proto files and the documented depth bound."""

import json
from pathlib import Path

import pytest
from conftest import ROOT
from google.protobuf import text_format
from test_decode_access import _check_profile
from test_user_schema import _document, compile_set, protoc

from evbench_agent.payloads import samples, user_schema
from evbench_agent.payloads.convert import is_map, is_repeated, is_required

DATA = ROOT / "tests" / "data"
VENDOR = DATA / "vendor"
#: name -> (the .proto to compile, import directories, message, hand-written samples)
SCHEMAS = {
    "gtfs": (DATA / "kinds" / "gtfs_ev.proto", [DATA / "kinds", VENDOR / "gtfs-realtime"],
             "transit_realtime.FeedMessage", VENDOR / "gtfs-realtime" / "feed_samples.jsonl"),
    "uprotocol": (VENDOR / "uprotocol" / "uprotocol" / "v1" / "ustatus.proto",
                  [VENDOR / "uprotocol"], "uprotocol.v1.UStatus",
                  VENDOR / "uprotocol" / "status_samples.jsonl"),
    "onnx": (VENDOR / "onnx" / "onnx.proto", [VENDOR / "onnx"], "onnx.ModelProto",
             VENDOR / "onnx" / "model_samples.jsonl"),
}  # fmt: skip
DEPTH = 4  # docs/own-messages.md: message fields are set down to a depth of 4


def compiled(name: str, out: Path) -> bytes:
    """The descriptor set of SCHEMAS[name], compiled into `out`."""
    proto, include, _message, _samples = SCHEMAS[name]
    return compile_set(include[0], proto, out, *include[1:])


@pytest.fixture(scope="module")
def sets(tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("vendor")
    return {name: compiled(name, out) for name in SCHEMAS}


def _profile(sets, name: str, **extra) -> user_schema.SchemaProfile:
    return user_schema.build_profile(_document(sets[name], SCHEMAS[name][2], **extra))


def _protoc_sizes(name: str, messages) -> list[int]:
    """What protoc --encode makes of each message's text format, in bytes."""
    proto, include, message_name, _ = SCHEMAS[name]
    argv = [*[f"-I{d}" for d in include], f"--encode={message_name}", str(proto)]
    return [len(protoc(*argv, stdin=text_format.MessageToString(m).encode())) for m in messages]


@pytest.mark.parametrize("written", [True, False], ids=["hand-written", "generated"])
@pytest.mark.parametrize("name", list(SCHEMAS))
def test_payloads_are_valid_protoc_agrees_on_their_sizes_and_decode_access_reads_alike(
    sets, name, written
):
    written_file = SCHEMAS[name][3]
    extra = {"samples": samples.source_from_file(written_file)} if written else {}
    if written:  # every line of the samples file, each one payload
        items = _profile(sets, name, **extra).payloads(50)
        lines = [line for line in written_file.read_text().splitlines() if line.strip()]
        assert len(items) == len(lines)
    else:
        items = _profile(sets, name).payloads(4, seed=2)
    for item in items:  # every required field is there
        assert item.message.IsInitialized(), item.message.FindInitializationErrors()
    ours = [len(item.message.SerializeToString()) for item in items]
    assert ours == _protoc_sizes(name, [item.message for item in items])
    for style in ("proto3", "fields"):  # like for like in every codec, either JSON style
        profile = _profile(sets, name, json_style=style, **extra)
        assert _check_profile(profile, 10 if written else 6) > 0


def _settable(root) -> set[str]:
    """Fields the default rules can set: by the documented depth bound, worked out from
    the descriptors (a type's shallowest depth from the root; scalars there at depth <= 4,
    sub-messages only above it, required ones anywhere)."""
    depth, order, found = {root.full_name: 0}, [root], set()
    while order:
        descriptor = order.pop(0)
        level = depth[descriptor.full_name]
        fields = list(descriptor.fields)
        if descriptor.extension_ranges:
            fields += descriptor.file.pool.FindAllExtensions(descriptor)
        for field in fields:
            target = field.message_type
            if is_map(field):
                target = field.message_type.fields_by_name["value"].message_type
            if target is not None and level >= DEPTH and not is_required(field):
                continue
            found.add(field.full_name)
            if target is not None and target.full_name not in depth:
                depth[target.full_name] = level + 1
                order.append(target)
    return found


def _seen(message, into: set[str]) -> None:
    for field, value in message.ListFields():
        into.add(field.full_name)
        if is_map(field):  # a map of scalars has no messages below it
            scalar = field.message_type.fields_by_name["value"].message_type is None
            values = [] if scalar else value.values()
        else:
            values = [] if field.message_type is None else value if is_repeated(field) else [value]
        for item in values:
            _seen(item, into)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SCHEMAS))
def test_the_generator_reaches_every_field_it_can(sets, name):
    profile = _profile(sets, name)
    seen: set[str] = set()
    for item in profile.payloads(60, seed=4):
        _seen(item.message, seen)
    expected = _settable(profile.message_type.DESCRIPTOR)
    assert expected - seen == set()
    assert len(expected) >= 5


def test_the_vendored_files_are_the_sources_byte_for_byte():
    """The README names each file's source commit; the licence sits beside each."""
    readme = (VENDOR / "README.md").read_text()
    for directory in ("gtfs-realtime", "uprotocol", "onnx"):
        assert "Apache License" in (VENDOR / directory / "LICENSE").read_text()[:300]
        assert f"`{directory}/`" in readme
    for commit in ("4f108d9d2295bec7d77b3ddb576d004d04b258b9",
                   "a138264c04ecad2e9671f71ce4619b74e3bf3384",
                   "f7546912001bc31e92a238b17068a21b373d882e"):  # fmt: skip
        assert commit in readme
    assert json.loads(Path(SCHEMAS["gtfs"][3]).read_text().splitlines()[0])["header"]
