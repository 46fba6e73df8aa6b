"""protobuf-json writes the same bytes on protobuf 4.21 (Debian 12, cpp backend), 4.25
(scarthgap) and the newest, for proto2/proto3 messages with defaults, Any and extensions,
and the agent measures a user's message alike on each (issue 29). A repeated extension,
which json_format before 5.26 cannot read back, is refused there up front, by name.
"""

from __future__ import annotations

import base64
import json

import pytest
from conftest import ROOT
from test_compat import on_each_runtime
from test_schema_kinds import compile_set

pytestmark = pytest.mark.compat

KINDS = ROOT / "tests" / "data" / "kinds"
CASES = {
    "proto2-defaults": ("legacy", "evbench.legacy.Chassis"),
    "proto2-required": ("legacy", "evbench.legacy.Limits"),
    "proto3-well-known": ("well_known", "evbench.kinds.Everything"),
    "recursive": ("fanout", "evbench.kinds.M"),
    "repeated-extension": ("legacy", "evbench.legacy.Diagnostics"),
}
#: Cases holding maps: protobuf does not define the order of a map's entries, and the
#: runtimes iterate them differently (protobuf binary too), so there the values and the
#: sizes are compared, not the order.
MAPS = ("proto3-well-known/",)
SCRIPT = r"""
import base64, hashlib, json, sys
from google.protobuf.json_format import MessageToDict
from evbench_agent import codecs
from evbench_core.errors import UserError
from evbench_agent.payloads import user_schema
cases = json.load(sys.stdin)
MAPS = %r
out = {}
for case, (serialized, message) in cases.items():
    for style in ("proto3", "fields"):
        profile = user_schema.build_profile(
            {"descriptor_set": serialized, "message": message, "json_style": style}
        )
        items = profile.payloads(40, 7)
        for name in ("protobuf", "json", "protobuf-json"):
            try:
                bound = codecs.get(name).bind(profile)
            except UserError as error:
                out[f"{case}/{style}/{name}"] = "refused: " + str(error)
                continue
            blobs = [bound.encode(bound.data(item)) for item in items]
            decoded = [bound.decode(blob) for blob in blobs]
            leaves = [bound.access(value) for value in decoded]
            if name == "json":
                canonical = [json.dumps(v, sort_keys=True).encode() for v in decoded]
            elif not case.startswith(MAPS):
                canonical = []  # the bytes themselves are compared
            else:  # through the JSON mapping: an Any's bytes hold maps in their order too
                pool = profile.message_type.DESCRIPTOR.file.pool
                canonical = [
                    json.dumps(MessageToDict(v, descriptor_pool=pool), sort_keys=True).encode()
                    for v in decoded
                ]
            out[f"{case}/{style}/{name}"] = {
                "bytes": hashlib.sha256(b"\0".join(blobs)).hexdigest(),
                "values": hashlib.sha256(b"\0".join(canonical)).hexdigest(),
                "size": sum(map(len, blobs)),
                "leaves": sum(leaves),
            }
print(json.dumps(out))
"""


def test_protobuf_json_is_byte_for_byte_the_same_on_every_runtime(tmp_path):
    names = ("legacy", "well_known", "fanout")
    sets = {n: base64.b64encode(compile_set(KINDS, f"{n}.proto", tmp_path)).decode() for n in names}
    cases = {case: (sets[proto], message) for case, (proto, message) in CASES.items()}
    printed = on_each_runtime(lambda _: ["-c", SCRIPT % (MAPS,)], json.dumps(cases))
    results = {runtime: json.loads(stdout) for runtime, stdout in printed.items()}
    newest = results["newest"]
    differ = []
    for runtime, found in results.items():
        for key, value in found.items():
            if key.startswith("repeated-extension/") and key.endswith("/protobuf-json"):
                continue
            expected = dict(newest[key])
            if key.startswith(MAPS):  # map order is the runtime's: same values, same size
                expected["bytes"] = value["bytes"]
            if value != expected:
                differ.append((runtime, key, value, newest[key]))
    assert not differ, differ
    # the newest carries a repeated extension; the older runtimes refuse it, by name
    assert isinstance(newest["repeated-extension/proto3/protobuf-json"], dict)
    for runtime in ("debian", "protobuf-4.25"):
        refusal = results[runtime]["repeated-extension/fields/protobuf-json"]
        assert refusal.startswith("refused: ") and "evbench.legacy.fault_codes" in refusal
    # and the sizes are not all alike: the printing options matter for proto2 defaults
    defaults = "proto2-defaults/proto3/"
    assert newest[defaults + "protobuf-json"]["size"] > newest[defaults + "json"]["size"]


def test_each_runtime_measures_the_same_user_message(tmp_path):
    """The rich test schema, from a spec holding only its descriptor set."""
    rich = compile_set(ROOT / "tests" / "data" / "bms", "rich.proto", tmp_path)
    spec = {
        "schema": {"descriptor_set": base64.b64encode(rich).decode(),
                   "message": "evbench.test.Rich"},
        "suites": ["codec"], "codecs": ["json", "protobuf", "protobuf-json"], "quick": True,
        "payloads": 40,
    }  # fmt: skip
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    run = ["-m", "evbench_agent", "run", "--spec", str(tmp_path / "spec.json"), "--out"]
    runtimes = on_each_runtime(lambda runtime: [*run, str(tmp_path / runtime)])
    sizes = {}
    for runtime in runtimes:
        assert (tmp_path / runtime / "complete").exists()
        summary = json.loads((tmp_path / runtime / "summary.json").read_text())
        sizes[runtime] = {
            r["codec"]: [r["min"], r["median"], r["max"], r["mean"]]
            for r in summary["records"]
            if r["metric"] == "size"
        }
        assert set(sizes[runtime]) == {"json", "protobuf", "protobuf-json"}
    first = next(iter(sizes.values()))
    assert all(value == first for value in sizes.values()), sizes
