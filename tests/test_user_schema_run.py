"""`evbench run --schema`: a user's .proto from the command line to the table, and its refusals.

The agent runs as a real separate process on the local board. Bad input is
refused with exit 2 and a message naming what is wrong, and leaves no run
directory behind.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from google.protobuf import descriptor_pb2

DATA = ROOT / "tests" / "data" / "bms"
BMS = "evbench.example.BmsStatus"
EVBENCH = [sys.executable, "-m", "evbench"]
SCHEMA = ["--schema", str(DATA / "bms.proto"), "--message", BMS]
QUICK = ["--board", "local", "--quick", "--details", "--codecs", "json,protobuf"]


def _evbench(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*EVBENCH, *argv], capture_output=True, text=True, timeout=600, cwd=cwd)


def _records(out: Path, metric: str, codec: str) -> list[dict]:
    summary = json.loads((out / "summary.json").read_text())
    return [r for r in summary["records"] if (r["metric"], r["codec"]) == (metric, codec)]


@pytest.mark.slow
def test_a_user_schema_runs_every_suite_and_prints_its_table(tmp_path):
    out = tmp_path / "run"
    done = _evbench("run", *QUICK, *SCHEMA, "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith(f"schema:{BMS} ")]
    metrics = {row.split("|")[1].strip() for row in rows}
    assert {"Size", "Serialization", "Deserialization"} <= metrics
    assert any(m.startswith("RTT") for m in metrics)  # the link suite carried it too
    manifest = json.loads((out / "manifest.json").read_text())
    schema = manifest["spec"]["schema"]
    assert schema["message"] == BMS
    digest = hashlib.sha256((DATA / "bms.proto").read_bytes()).hexdigest()
    assert schema["files"] == [{"name": "bms.proto", "sha256": digest}]
    files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(schema["descriptor_set"]))
    assert [f.name for f in files.file] == ["bms.proto"]
    assert (out / "complete").exists()


@pytest.mark.slow
def test_samples_are_measured_in_file_order(tmp_path):
    """The protobuf sizes are those of the file's lines, encoded by json_format here."""
    from google.protobuf import json_format

    from evbench_agent.payloads import user_schema

    out = tmp_path / "run"
    samples = DATA / "bms_samples.jsonl"
    done = _evbench(
        "run", *QUICK, *SCHEMA, "--suite", "codec", "--samples", str(samples),
        "--payloads", "5", "--profile-name", "our-bms", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "our-bms" in done.stdout
    report = (out / "report.md").read_text()
    assert f"| Your message | {BMS} from bms.proto (SHA-256 " in report
    assert "| Its payloads / JSON | samples bms_samples.jsonl (jsonl) / proto3 |" in report
    manifest = json.loads((out / "manifest.json").read_text())
    shipped = manifest["spec"]["schema"]["samples"]
    assert shipped["sha256"] == hashlib.sha256(samples.read_bytes()).hexdigest()
    descriptor_set = base64.b64decode(manifest["spec"]["schema"]["descriptor_set"])
    cls = user_schema.find_message(descriptor_set, BMS)
    lines = samples.read_text().splitlines()[:5]
    expected = sorted(len(json_format.Parse(line, cls()).SerializeToString()) for line in lines)
    (size,) = _records(out, "size", "protobuf")
    assert size["n"] == 5
    assert size["min"] == expected[0] and size["max"] == expected[-1]
    compact = [json.dumps(json.loads(line), separators=(",", ":")).encode() for line in lines]
    json_sizes = sorted(len(text) for text in compact)
    (json_size,) = _records(out, "size", "json")
    assert json_size["min"] == json_sizes[0] and json_size["max"] == json_sizes[-1]


@pytest.mark.slow
def test_a_samples_file_shorter_than_the_rounds_goes_round_again(tmp_path):
    """12 lines, and the quick plan's workers take 8 x 4 rounds: the rounds wrap round
    the file (a worker once asked for line 13 of 12 and failed)."""
    out = tmp_path / "run"
    samples = DATA / "bms_samples.jsonl"
    done = _evbench(
        "run", *QUICK, *SCHEMA, "--suite", "codec", "--samples", str(samples), "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = len(samples.read_text().splitlines())
    (size,) = _records(out, "size", "protobuf")
    assert size["n"] == lines == 12
    (encode,) = _records(out, "encode", "protobuf")
    assert encode["n"] == 8 * 3  # every worker's values recorded


def _refused(tmp_path: Path, *argv: str) -> str:
    out = tmp_path / "run"
    done = _evbench("run", *QUICK, "--suite", "codec", *argv, "--out", str(out))
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert not out.exists(), "a refused run left a run directory behind"
    assert "Traceback" not in done.stderr
    return done.stderr


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        # a proto that does not compile: protoc's own message
        (["--schema", str(DATA / "broken.proto"), "--message", "x.Y"],
         ['broken.proto:7:3: "flaot" is not defined.']),
        # a message not in the schema: the ones there listed
        (["--schema", str(DATA / "bms.proto"), "--message", "BmsStatus"],
         ["no message 'BmsStatus'", f"messages there: {BMS}"]),
        # an import not found (TMP: the test's empty directory)
        (["--schema", str(DATA / "rich.proto"), "-I", "TMP", "--message", "evbench.test.Rich"],
         ["protoc cannot compile"]),
        (["--message", BMS, "--samples", str(DATA / "bms_samples.jsonl")],
         ["--message, --samples need --schema"]),
    ],
    ids=["does not compile", "no such message", "import not found", "options need a schema"],
)  # fmt: skip
def test_a_schema_that_cannot_be_used_is_refused_saying_why(tmp_path, argv, says):
    said = _refused(tmp_path, *(str(tmp_path) if arg == "TMP" else arg for arg in argv))
    assert all(part in said for part in says), said


def test_a_bad_samples_line_names_file_and_line(tmp_path):
    lines = (DATA / "bms_samples.jsonl").read_text().splitlines()
    lines[4] = lines[4].replace('"state":"BMS_STATE_DRIVE"', '"state":"BMS_STATE_FLYING"')
    bad = tmp_path / "pack.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    said = _refused(tmp_path, *SCHEMA, "--samples", str(bad))
    assert "pack.jsonl line 5:" in said and "BMS_STATE_FLYING" in said


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ("fields:\n  cell_voltage: {count: 96}\n", "no field 'cell_voltage'"),
        ("fields:\n  soc_percent: {range: [100, 0]}\n", "impossible range [100, 0]"),
        ("fields:\n  sequence: {range: [0, 4294967296]}\n", "impossible range [0, 4294967296]"),
    ],
)
def test_a_bad_generator_file_is_refused(tmp_path, rules, expected):
    path = tmp_path / "rules.yaml"
    path.write_text(rules)
    said = _refused(tmp_path, *SCHEMA, "--generate", str(path))
    assert "rules.yaml" in said and expected in said
