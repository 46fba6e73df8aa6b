"""protobuf-json writes the same bytes on protobuf 4.21 (Debian 12), 4.25 (Yocto scarthgap)
and the newest, for proto2 and proto3 messages with defaults, Any and extensions (issue 29).

Each runtime's interpreter builds the classes from the same descriptor sets (compiled
here by grpcio-tools' protoc), generates the same payloads and prints each codec's
bytes; the test compares their digests across runtimes. A repeated extension, which
json_format before 5.26 cannot read back, must be refused there up front, by name.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess

import pytest
from conftest import AGENT_SRC, ROOT, require
from test_compat import _interpreters
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
    results = {}
    for runtime, python in _interpreters().items():
        require(os.access(python, os.X_OK), f"the interpreter for {runtime} ({python})")
        env = dict(os.environ, PYTHONPATH=str(AGENT_SRC), PYTHONNOUSERSITE="1")
        done = subprocess.run([python, "-c", SCRIPT % (MAPS,)], input=json.dumps(cases),
                              capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
        assert done.returncode == 0, f"{runtime}: {done.stderr}"
        results[runtime] = json.loads(done.stdout)
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
