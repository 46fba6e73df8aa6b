"""`evbench run --schema` measures real schemas (RUNS) in the codec and link suites, locally
and over SSH (a real sshd on loopback, Debian's python3 with protobuf 4.21); sizes measured
from samples equal what the real protoc makes of them (`protoc --encode`)."""

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT
from report_helpers import evbench
from test_real_schemas import SCHEMAS, _profile, compiled
from test_real_schemas import _protoc_sizes as protoc_sizes

from evbench_agent.payloads import samples

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KINDS = ROOT / "tests" / "data" / "kinds"
#: Short: the codec suite takes 20 payloads; the link suite sends all 20 in each phase,
#: at 100 Hz (0.2 s a phase; 1 s at the default 20 Hz).
SHORT = ["--quick", "--suite", "codec,link", "--codecs", "json,protobuf,protobuf-json",
         "--payloads", "20", "--count", "20", "--rate", "100"]  # fmt: skip


def _schema_args(name: str) -> list[str]:
    proto, include, message, _ = SCHEMAS[name]
    return ["--schema", str(proto), *[f"-I{d}" for d in include], "--message", message]


#: name: (over SSH, the schema's arguments, its profile). gtfs: proto2 with required fields
#: and extensions, from samples; everything: Any, Struct and recursion, generated; uprotocol:
#: recursive through Any, from samples; onnx: recursive proto2, generated.
RUNS = {
    "gtfs": (False, [*_schema_args("gtfs"), "--samples", str(SCHEMAS["gtfs"][3])],
             "schema:transit_realtime.FeedMessage"),
    "everything": (False, ["--schema", str(KINDS / "well_known.proto"), "--message",
                           "evbench.kinds.Everything"], "schema:evbench.kinds.Everything"),
    "uprotocol": (True, [*_schema_args("uprotocol"), "--samples", str(SCHEMAS["uprotocol"][3])],
                  "schema:uprotocol.v1.UStatus"),
    "onnx": (True, _schema_args("onnx"), "schema:onnx.ModelProto"),
}  # fmt: skip


def _evbench_run(name: str, board: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """`evbench run` into tmp_path/NAME in its own process, as a person types it."""
    argv = ["run", "--board", board, *SHORT, *RUNS[name][1], "--out", str(tmp_path / name)]
    env = {**os.environ, "EVBENCH_HISTORY": str(tmp_path / f"{name}.sqlite")}
    return evbench(*argv, env=env, timeout=900)


def _check_measured(out: Path, profile: str) -> dict[str, dict]:
    assert (out / "complete").exists()
    records = json.loads((out / "summary.json").read_text())["records"]
    suites = {r["suite"] for r in records if r.get("profile") == profile}
    assert {"codec", "link"} <= suites, suites
    link = [r for r in records if r["suite"] == "link" and r["metric"] == "rtt"]
    assert link and all(r["n"] > 0 for r in link)
    return {r["codec"]: r for r in records if r["metric"] == "size" and r["profile"] == profile}


def _protoc_sizes(name: str, count: int, tmp_path: Path) -> list[int]:
    """protoc --encode's sizes of the samples file's first `count` messages."""
    source = samples.source_from_file(SCHEMAS[name][3])
    profile = _profile({name: compiled(name, tmp_path)}, name, samples=source)
    return protoc_sizes(name, [item.message for item in profile.payloads(count)])


def test_real_schemas_are_measured_locally_and_over_ssh(sshd, ssh_home, tmp_path):
    """The four runs share nothing, so they run at once, and protoc works out sizes meanwhile."""

    def board(name: str) -> str:
        where = f"dir={tmp_path / (name + '-board')}&python=/usr/bin/python3"
        return f"ssh://{sshd.address}?{where}" if RUNS[name][0] else "local"

    with ThreadPoolExecutor(len(RUNS) + 1) as pool:
        runs = {name: pool.submit(_evbench_run, name, board(name), tmp_path) for name in RUNS}
        from_samples = ("gtfs", "uprotocol")
        protoc = pool.submit(lambda: {n: _protoc_sizes(n, 20, tmp_path) for n in from_samples})
        done = {name: run.result() for name, run in runs.items()}
    failed = {name: run.stderr[-4000:] for name, run in done.items() if run.returncode != 0}
    assert not failed, failed
    sizes = {name: _check_measured(tmp_path / name, RUNS[name][2])["protobuf"] for name in RUNS}
    for name, expected in protoc.result().items():  # from samples: exactly protoc's sizes
        assert sizes[name]["n"] == len(expected)
        assert (sizes[name]["min"], sizes[name]["max"]) == (min(expected), max(expected))
        assert sizes[name]["mean"] == pytest.approx(sum(expected) / len(expected), rel=1e-12)
    assert sizes["everything"]["n"] == 20 and sizes["everything"]["min"] > 0
    assert sizes["onnx"]["n"] == 20 and sizes["onnx"]["max"] > 1000
    manifest = json.loads((tmp_path / "uprotocol" / "manifest.json").read_text())
    assert manifest["platform"]["protobuf"] == "4.21.12"  # the board's own runtime
