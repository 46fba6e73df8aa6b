"""evbench under LAVA (issue 20), checked with LAVA's own code.

Debian 12's lava-common, lava-dispatcher and lava-server (2023.01) are unpacked
by tests/setup_envs.py (apt-get download + dpkg -x, the system untouched) and
run in .venv-lava through tests/lava_check.py: the job schema
(`lava_common.schemas.validate`), the device-type templates with lava-dispatcher's
strategy selection, and the test shell's signal parsing (`handle_testcase`,
`SignalMatch`). Expected test cases come from summary.json read here, not from
evbench's LAVA module.
"""

from __future__ import annotations

import http.server
import json
import math
import re
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from conftest import ROOT, require

pytestmark = pytest.mark.integration  # LAVA's code, unpacked from Debian's packages

CHECKER = ROOT / "tests" / "lava_check.py"
LAVA_PYTHON = ROOT / ".venv-lava" / "bin" / "python"
LAVA_ROOT = ROOT / "tests" / "cache" / "lava" / "root"
CORE_RUN = ROOT / "tests" / "data" / "runs" / "core-v1"
RECORDED = ROOT / "tests" / "data" / "lava" / "results-core-v1.yaml"
BIN = Path(sys.executable).parent
#: What LAVA accepts in a test case id without surprises (no space, no '=').
LAVA_ID = re.compile(r"^[A-Za-z0-9._-]+$")
JOB_ARGS = {
    "k3-am625-sk": [
        "--kernel", "http://lab.example/am62x/Image",
        "--dtb", "http://lab.example/am62x/k3-am625-sk.dtb",
        "--rootfs", "http://lab.example/am62x/evbench-image-am62xx-evm.rootfs.tar.xz",
    ],
    "qemu": [
        "--kernel", "http://lab.example/qemuarm64/Image",
        "--rootfs", "http://lab.example/qemuarm64/evbench-image-qemuarm64.rootfs.ext4",
    ],
    "qemu-aarch64": [
        "--kernel", "http://lab.example/qemuarm64/Image",
        "--rootfs", "http://lab.example/qemuarm64/evbench-image-qemuarm64.rootfs.ext4",
    ],
}  # fmt: skip


def lava(command: str, path: Path) -> dict:
    require(LAVA_PYTHON.exists(), ".venv-lava (tests/setup_envs.py)")
    require((LAVA_ROOT / "usr").is_dir(), "LAVA's unpacked Debian packages (tests/setup_envs.py)")
    done = subprocess.run(
        [str(LAVA_PYTHON), str(CHECKER), command, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def evbench(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "evbench"), *args], capture_output=True, text=True, timeout=300, check=check
    )


def write_job(tmp_path: Path, device_type: str, *extra: str) -> Path:
    out = tmp_path / f"{device_type}.yaml"
    evbench(
        "lava", "job", "--device-type", device_type,
        "--repository", "https://git.example/evbench.git", "--revision", "main",
        *JOB_ARGS[device_type], "--quick", "--out", str(out), *extra,
    )  # fmt: skip
    return out


@pytest.mark.parametrize("device_type", sorted(JOB_ARGS))
@pytest.mark.parametrize("options", [[], ["--suite", "codec", "--criteria", "candidate-wins"]])
def test_jobs_pass_lavas_schema_and_the_device_type(
    tmp_path: Path, device_type: str, options: list[str]
) -> None:
    job = write_job(tmp_path, device_type, *options)
    assert lava("validate", job) == {"valid": True}
    chosen = lava("device-type", job)
    assert chosen["accepted"], chosen
    # LAVA's strategies for the methods each device type offers.
    expected = ("Tftp", "UBoot") if device_type == "k3-am625-sk" else ("DeployImages", "BootQEMU")
    assert (chosen["deploy"], chosen["boot"]) == expected
    definition = yaml.safe_load(job.read_text())["actions"][2]["test"]["definitions"][0]
    assert definition["path"] == "lava/evbench.yaml"
    assert (ROOT / definition["path"]).exists()


def test_a_broken_job_fails_lavas_schema(tmp_path: Path) -> None:
    job = yaml.safe_load(write_job(tmp_path, "qemu").read_text())
    job["actions"][2]["test"]["definitions"][0]["from"] = "ftp"  # not a source LAVA knows
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(job))
    assert lava("validate", broken)["valid"] is False


def test_a_method_the_device_type_lacks_is_refused(tmp_path: Path) -> None:
    job = yaml.safe_load(write_job(tmp_path, "k3-am625-sk").read_text())
    job["actions"][1]["boot"] = {"method": "qemu", "media": "tmpfs", "prompts": ["# "]}
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(yaml.safe_dump(job))
    assert lava("validate", wrong)["valid"] is True  # the schema ignores device types
    chosen = lava("device-type", wrong)
    assert chosen["accepted"] is False
    assert "qemu" in chosen["error"]


def _signals_of(run_dir: Path, tmp_path: Path, *extra: str) -> dict:
    done = subprocess.run(
        [str(BIN / "evbench-agent"), "lava", str(run_dir), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    console = tmp_path / "console.log"
    # Kernel lines between the signals, as on a real console.
    console.write_text("[   12.345678] random: crng init done\n" + done.stdout)
    return lava("signals", console)


def _records(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "summary.json").read_text())["records"]


def test_a_complete_run_gives_one_case_per_record_and_verdict(tmp_path: Path) -> None:
    parsed = _signals_of(CORE_RUN, tmp_path)
    assert parsed["errors"] == []
    cases = parsed["cases"]
    assert all(LAVA_ID.match(c["test_case_id"]) for c in cases)
    assert len({c["test_case_id"] for c in cases}) == len(cases)
    by_set: dict[str | None, list[dict]] = {}
    for case in cases:
        by_set.setdefault(case["set"], []).append(case)
    records = _records(CORE_RUN)
    record_cases = [c for s, cs in by_set.items() if s not in (None, "verdicts") for c in cs]
    assert len(record_cases) == len(records)
    # Every record's median arrives as its measurement, in its unit.
    medians = sorted((r["median"], r["unit"]) for r in records)
    measured = sorted((c["measurement"], c["units"]) for c in record_cases)
    assert [m for m, _ in measured] == pytest.approx([m for m, _ in medians], rel=1e-12)
    assert {u for _, u in measured} == {u for _, u in medians}
    assert all(c["result"] == "pass" for c in record_cases)
    # One verdict case per codec-suite metric both codecs measured (ratios, no NaN).
    tested = {r["metric"] for r in records if r["suite"] == "codec"} - {"size", "size_deflate"}
    verdict_cases = by_set["verdicts"]
    assert len(verdict_cases) == len(tested)
    assert all(c["result"] in ("pass", "skip") for c in verdict_cases)
    assert all(math.isfinite(c.get("measurement", 1.0)) for c in verdict_cases)
    assert by_set[None] == [{"test_case_id": "run.complete", "result": "pass", "set": None}]


def test_a_partial_run_fails_the_missing_records_and_a_nan_has_no_measurement(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "partial"
    shutil.copytree(CORE_RUN, run_dir)
    (run_dir / "complete").unlink()
    summary = json.loads((run_dir / "summary.json").read_text())
    records = summary["records"]
    dropped = next(r for r in records if r["codec"] == "protobuf" and r["metric"] == "encode")
    records.remove(dropped)
    nan_record = next(r for r in records if r["codec"] == "json" and r["metric"] == "decode")
    # A statistic that came out NaN is stored as null (the format holds finite numbers only).
    nan_record["median"] = None
    (run_dir / "summary.json").write_text(json.dumps(summary))
    parsed = _signals_of(run_dir, tmp_path)
    assert parsed["errors"] == []
    cases = {c["test_case_id"]: c for c in parsed["cases"]}
    missing = [i for i, c in cases.items() if i.startswith("codec.seed.protobuf.encode.")]
    assert len(missing) == 1
    assert cases[missing[0]]["result"] == "fail"
    assert "measurement" not in cases[missing[0]]
    nan_case = next(c for i, c in cases.items() if i.startswith("codec.seed.json.decode."))
    assert nan_case["result"] == "unknown"
    assert "measurement" not in nan_case
    assert cases["run.complete"]["result"] == "fail"


def test_recorded_lava_results_become_a_run_that_renders(tmp_path: Path) -> None:
    out = tmp_path / "from-cases"
    done = evbench("lava", "results", "4242", "--test-cases", str(RECORDED), "--out", str(out))
    assert "4242" in done.stdout
    records = _records(out)
    listed = [c for c in yaml.safe_load(RECORDED.read_text()) if c["suite"] != "lava"]
    record_cases = [c for c in listed if c["name"].split(".")[0] in ("codec", "link")]
    assert len(records) == len(record_cases)
    assert sorted(r["median"] for r in records) == pytest.approx(
        sorted(float(c["measurement"]) for c in record_cases)
    )
    assert (out / "complete").exists()
    assert json.loads((out / "lava.json").read_text())["job"] == "4242"
    report = evbench("report", str(out), check=False)
    assert report.returncode == 0, report.stderr
    assert (out / "report.html").exists()


def test_an_uploaded_run_is_verified_and_renders(tmp_path: Path) -> None:
    archive = tmp_path / "run.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(CORE_RUN, arcname=".")
    out = tmp_path / "uploaded"
    evbench("lava", "results", "4243", "--uploaded", str(archive), "--out", str(out))
    assert (out / "samples.jsonl").read_bytes() == (CORE_RUN / "samples.jsonl").read_bytes()
    report = evbench("report", str(out), check=False)
    assert report.returncode == 0, report.stderr

    damaged = tmp_path / "damaged.tar.gz"
    copy = tmp_path / "copy"
    shutil.copytree(CORE_RUN, copy)
    with open(copy / "samples.jsonl", "ab") as stream:
        stream.write(b"\n")
    with tarfile.open(damaged, "w:gz") as tar:
        tar.add(copy, arcname=".")
    refused = evbench(
        "lava", "results", "4244", "--uploaded", str(damaged), "--out", str(tmp_path / "bad"),
        check=False,
    )  # fmt: skip
    assert refused.returncode == 3
    assert "SHA256SUMS" in refused.stderr


def test_an_archive_climbing_out_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(outside, arcname="../outside-written.txt")
    refused = evbench(
        "lava", "results", "1", "--uploaded", str(archive), "--out", str(tmp_path / "o"),
        check=False,
    )  # fmt: skip
    assert refused.returncode == 2
    assert not (tmp_path / "outside-written.txt").exists()


class _UploadSink(http.server.BaseHTTPRequestHandler):
    """A lab's upload location on loopback: keeps what each PUT sends."""

    received: ClassVar[dict[str, bytes]] = {}

    def do_PUT(self) -> None:  # the name http.server calls
        length = int(self.headers["Content-Length"])
        self.received[self.path] = self.rfile.read(length)
        self.send_response(201)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.mark.slow
def test_the_test_definition_runs_the_agent_signals_and_uploads(tmp_path: Path) -> None:
    # The definition's step, as LAVA's test shell runs it: from the repository, with the
    # parameters as variables; the image's agent is this venv's.
    definition = yaml.safe_load((ROOT / "lava" / "evbench.yaml").read_text())
    step = definition["run"]["steps"][0]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _UploadSink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "SUITES": "codec",
        "PROFILES": "seed",
        "CODECS": "json,protobuf",
        "QUICK": "true",
        "OUT_DIR": str(tmp_path / "runs"),
        "UPLOAD_URL": f"http://127.0.0.1:{server.server_port}/job-7/run.tar.gz",
        "HOME": str(tmp_path),
    }
    try:
        done = subprocess.run(
            ["sh", "-c", step], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr[-2000:]
    # What the lab received is the run itself: it verifies and renders on the host.
    archive = tmp_path / "received.tar.gz"
    archive.write_bytes(_UploadSink.received["/job-7/run.tar.gz"])
    fetched = tmp_path / "fetched"
    evbench("lava", "results", "7", "--uploaded", str(archive), "--out", str(fetched))
    assert json.loads((fetched / "lava.json").read_text())["source"] == "uploaded run directory"
    console = tmp_path / "console.log"
    console.write_text(done.stdout)
    parsed = lava("signals", console)
    assert parsed["errors"] == []
    (run_dir,) = [path for path in (tmp_path / "runs").iterdir() if path.is_dir()]
    records = _records(run_dir)
    cases = {c["test_case_id"]: c for c in parsed["cases"]}
    assert cases["run.complete"]["result"] == "pass"
    for suite in {r["suite"] for r in records}:
        in_suite = [r for r in records if r["suite"] == suite]
        assert len([c for c in cases.values() if c["set"] == suite]) == len(in_suite)
