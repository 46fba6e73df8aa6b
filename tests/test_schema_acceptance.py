"""`evbench run --schema` measures real schemas in the codec and link suites, on the local
board and over SSH (issue 29's acceptance).

- a proto2 message with required fields and extensions (GTFS-realtime FeedMessage,
  extended by tests/data/kinds/gtfs_ev.proto), from hand-written samples, locally;
- Any, Struct and a recursive type together (tests/data/kinds Everything), generated,
  locally;
- Any, recursive through it (uProtocol UStatus), from samples, over SSH;
- a recursive proto2 message (ONNX ModelProto), generated, over SSH.

The SSH "board" is this machine through a real OpenSSH sshd on loopback, running
Debian's /usr/bin/python3 with protobuf 4.21. Sizes measured from samples must equal
what the real protoc makes of the same messages (`protoc --encode`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from google.protobuf import text_format
from test_real_schemas import SCHEMAS, _protoc

from evbench_agent.payloads import samples, user_schema

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KINDS = ROOT / "tests" / "data" / "kinds"
#: Short: the codec suite takes 20 payloads; the link suite sends all 20 in each phase,
#: at 100 Hz (0.2 s a phase; 1 s at the default 20 Hz).
SHORT = ["--quick", "--suite", "codec,link", "--codecs", "json,protobuf,protobuf-json",
         "--payloads", "20", "--count", "20", "--rate", "100"]  # fmt: skip


def evbench(argv: list[str]) -> int:
    """`evbench ARGV` in its own process, as a person types it."""
    done = subprocess.run(
        [sys.executable, "-m", "evbench", *argv], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.returncode


def _schema_args(name: str) -> list[str]:
    proto, include, message, _ = SCHEMAS[name]
    return ["--schema", str(proto), *[f"-I{d}" for d in include], "--message", message]


def _records(out: Path) -> list[dict]:
    assert (out / "complete").exists()
    return json.loads((out / "summary.json").read_text())["records"]


def _check_measured(out: Path, profile: str) -> dict[str, dict]:
    records = _records(out)
    suites = {r["suite"] for r in records if r.get("profile") == profile}
    assert {"codec", "link"} <= suites, suites
    link = [r for r in records if r["suite"] == "link" and r["metric"] == "rtt"]
    assert link and all(r["n"] > 0 for r in link)
    return {r["codec"]: r for r in records if r["metric"] == "size" and r["profile"] == profile}


def _protoc_sizes(name: str, count: int, tmp_path: Path) -> list[int]:
    """protoc --encode's sizes of the samples file's first `count` messages."""
    import base64

    proto, include, message, path = SCHEMAS[name]
    target = tmp_path / f"{name}.binpb"
    _protoc(*[f"-I{d}" for d in include], "--include_imports",
            f"--descriptor_set_out={target}", str(proto))  # fmt: skip
    document = {
        "descriptor_set": base64.b64encode(target.read_bytes()).decode(),
        "message": message,
        "samples": samples.source_from_file(path),
    }
    messages = [p.message for p in user_schema.build_profile(document).payloads(count)]
    return [
        len(_protoc(*[f"-I{d}" for d in include], f"--encode={message}", str(proto),
                    stdin=text_format.MessageToString(m).encode()))
        for m in messages
    ]  # fmt: skip


def _same_as_protoc(size: dict, expected: list[int]) -> None:
    assert size["n"] == len(expected)
    assert (size["min"], size["max"]) == (min(expected), max(expected))
    assert size["mean"] == pytest.approx(sum(expected) / len(expected), rel=1e-12)


def test_proto2_required_and_extensions_from_samples_locally(tmp_path):
    out = tmp_path / "gtfs"
    argv = [*SHORT, *_schema_args("gtfs"), "--samples", str(SCHEMAS["gtfs"][3])]
    assert evbench(["run", "--board", "local", *argv, "--out", str(out)]) == 0
    sizes = _check_measured(out, "schema:transit_realtime.FeedMessage")
    _same_as_protoc(sizes["protobuf"], _protoc_sizes("gtfs", 20, tmp_path))


def test_any_struct_and_a_recursive_type_generated_locally(tmp_path):
    out = tmp_path / "everything"
    argv = [*SHORT, "--schema", str(KINDS / "well_known.proto"),
            "--message", "evbench.kinds.Everything"]  # fmt: skip
    assert evbench(["run", "--board", "local", *argv, "--out", str(out)]) == 0
    sizes = _check_measured(out, "schema:evbench.kinds.Everything")
    assert sizes["protobuf"]["n"] == 20 and sizes["protobuf"]["min"] > 0


def test_any_from_samples_over_ssh(sshd, ssh_home, tmp_path):
    out = tmp_path / "ustatus"
    url = f"ssh://{sshd.address}?dir={tmp_path / 'board'}&python=/usr/bin/python3"
    argv = [*SHORT, *_schema_args("uprotocol"), "--samples", str(SCHEMAS["uprotocol"][3])]
    assert evbench(["run", "--board", url, *argv, "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["platform"]["protobuf"] == "4.21.12"  # the board's own runtime
    sizes = _check_measured(out, "schema:uprotocol.v1.UStatus")
    _same_as_protoc(sizes["protobuf"], _protoc_sizes("uprotocol", 20, tmp_path))


def test_a_recursive_proto2_message_generated_over_ssh(sshd, ssh_home, tmp_path):
    out = tmp_path / "onnx"
    url = f"ssh://{sshd.address}?dir={tmp_path / 'board'}&python=/usr/bin/python3"
    argv = [*SHORT, *_schema_args("onnx")]
    assert evbench(["run", "--board", url, *argv, "--out", str(out)]) == 0
    sizes = _check_measured(out, "schema:onnx.ModelProto")
    assert sizes["protobuf"]["n"] == 20 and sizes["protobuf"]["max"] > 1000
