"""`evbench run --schema`: a user's .proto from the command line to the table.

The agent runs as a real separate process on the local board (the refusals:
tests/test_user_files_untrusted.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT
from google.protobuf import descriptor_pb2, json_format

from evbench_agent.payloads import user_schema

DATA = ROOT / "tests" / "data" / "bms"
BMS = "evbench.example.BmsStatus"
SAMPLES = DATA / "bms_samples.jsonl"
SCHEMA = ["--schema", str(DATA / "bms.proto"), "--message", BMS]
QUICK = ["--board", "local", "--quick", "--details", "--codecs", "json,protobuf"]
#: The runs the slow tests read: each suite; five samples; all 12 (fewer than the rounds:
#: the quick plan's eight workers). Two workers where the test reads no timing count.
RUNS = {
    "every suite": ["--processes", "2"],
    "five samples": ["--suite", "codec", "--samples", str(SAMPLES), "--payloads", "5",
                     "--profile-name", "our-bms", "--processes", "2"],
    "all samples": ["--suite", "codec", "--samples", str(SAMPLES)],
}  # fmt: skip


def _evbench(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evbench", *argv], capture_output=True, text=True, timeout=600,
        env=env,
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """The three runs at once: they share nothing (each has its own directory and history
    store), so the file waits for the longest, not for the sum."""
    base = tmp_path_factory.mktemp("runs")

    def run(name: str) -> tuple[subprocess.CompletedProcess, Path]:
        out = base / name.replace(" ", "-")
        env = {**os.environ, "EVBENCH_HISTORY": f"{out}.sqlite"}
        return _evbench("run", *QUICK, *SCHEMA, *RUNS[name], "--out", str(out), env=env), out

    with ThreadPoolExecutor(len(RUNS)) as pool:
        return dict(zip(RUNS, pool.map(run, RUNS), strict=True))


def _records(out: Path, metric: str, codec: str) -> list[dict]:
    summary = json.loads((out / "summary.json").read_text())
    return [r for r in summary["records"] if (r["metric"], r["codec"]) == (metric, codec)]


@pytest.mark.slow
def test_a_user_schema_runs_every_suite_and_prints_its_table(runs):
    done, out = runs["every suite"]
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith(f"schema:{BMS} ")]
    metrics = {row.split("|")[1].strip() for row in rows}
    assert {"Size", "Serialization", "Deserialization"} <= metrics
    assert any(m.startswith("RTT") for m in metrics)  # the link suite carried it too
    schema = json.loads((out / "manifest.json").read_text())["spec"]["schema"]
    assert schema["message"] == BMS
    digest = hashlib.sha256((DATA / "bms.proto").read_bytes()).hexdigest()
    assert schema["files"] == [{"name": "bms.proto", "sha256": digest}]
    files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(schema["descriptor_set"]))
    assert [f.name for f in files.file] == ["bms.proto"]
    assert (out / "complete").exists()


@pytest.mark.slow
def test_samples_are_measured_in_file_order(runs):
    """The protobuf sizes are those of the file's lines, encoded by json_format here."""
    done, out = runs["five samples"]
    assert done.returncode == 0, done.stderr
    assert "our-bms" in done.stdout
    report = (out / "report.md").read_text()
    assert f"| Your message | {BMS} from bms.proto (SHA-256 " in report
    assert "| Its payloads / JSON | samples bms_samples.jsonl (jsonl) / proto3 |" in report
    schema = json.loads((out / "manifest.json").read_text())["spec"]["schema"]
    assert schema["samples"]["sha256"] == hashlib.sha256(SAMPLES.read_bytes()).hexdigest()
    cls = user_schema.find_message(base64.b64decode(schema["descriptor_set"]), BMS)
    lines = SAMPLES.read_text().splitlines()[:5]
    expected = sorted(len(json_format.Parse(line, cls()).SerializeToString()) for line in lines)
    (size,) = _records(out, "size", "protobuf")
    assert size["n"] == 5
    assert size["min"] == expected[0] and size["max"] == expected[-1]
    compact = [json.dumps(json.loads(line), separators=(",", ":")).encode() for line in lines]
    json_sizes = sorted(len(text) for text in compact)
    (json_size,) = _records(out, "size", "json")
    assert json_size["min"] == json_sizes[0] and json_size["max"] == json_sizes[-1]


@pytest.mark.slow
def test_a_samples_file_shorter_than_the_rounds_goes_round_again(runs):
    """12 lines, and the quick plan's workers take 8 x 4 rounds: the rounds wrap round
    the file (a worker once asked for line 13 of 12 and failed)."""
    done, out = runs["all samples"]
    assert done.returncode == 0, done.stderr
    (size,) = _records(out, "size", "protobuf")
    assert size["n"] == len(SAMPLES.read_text().splitlines()) == 12
    (encode,) = _records(out, "encode", "protobuf")
    assert encode["n"] == 8 * 3  # every worker's values recorded
