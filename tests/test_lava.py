"""evbench under LAVA (issue 20), checked with LAVA's own code: Debian 12's lava-common,
lava-dispatcher and lava-server (2023.01, unpacked by tests/setup_envs.py) run in .venv-lava
through tests/lava_check.py (job schema, device-type templates and strategy selection, the
test shell's signal parsing). Expected test cases come from summary.json, not evbench's code.
"""

import http.server
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
from decimal import Decimal
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from conftest import ROOT, require

pytestmark = pytest.mark.integration  # LAVA's code, unpacked from Debian's packages

CHECKER = ROOT / "tests" / "lava_check.py"
LAVA_PYTHON = ROOT / ".venv-lava" / "bin" / "python"
LAVA_ROOT = ROOT / "tests" / "cache" / "lava" / "root"
#: By hand, against a newer LAVA from its source tree: EVBENCH_LAVA_SOURCE=TREE and
#: EVBENCH_LAVA_PYTHON=an interpreter with that release's dependencies (docs/lava.md).
LAVA_SOURCE = os.environ.get("EVBENCH_LAVA_SOURCE")
if LAVA_SOURCE:
    LAVA_PYTHON = Path(os.environ["EVBENCH_LAVA_PYTHON"])
CORE_RUN = ROOT / "tests" / "data" / "runs" / "core-v1"
#: A real run with the link suite (loopback TCP, json and protobuf, quick plan, 2 s phases).
CODEC_LINK_RUN = ROOT / "tests" / "data" / "runs" / "codec-link-v1"
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
}  # fmt: skip
JOB_ARGS["qemu-aarch64"] = JOB_ARGS["qemu"]  # test_lava_tables: one per device type


def lava(command: str, *paths: Path) -> dict:
    require(LAVA_PYTHON.exists(), ".venv-lava (tests/setup_envs.py)")
    if not LAVA_SOURCE:
        require((LAVA_ROOT / "usr").is_dir(), "LAVA's Debian packages (tests/setup_envs.py)")
    argv = [str(LAVA_PYTHON), str(CHECKER), command, *map(str, paths)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def evbench(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`evbench ARGS`; with `check`, it must succeed (its stderr is the failure's message)."""
    argv = [str(BIN / "evbench"), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert not check or done.returncode == 0, done.stderr
    return done


def write_job(tmp_path: Path, device_type: str, *extra: str) -> Path:
    out = tmp_path / f"{device_type}.yaml"
    evbench(
        "lava", "job", "--device-type", device_type,
        "--repository", "https://git.example/evbench.git", "--revision", "main",
        *JOB_ARGS[device_type], "--quick", "--out", str(out), *extra,
    )  # fmt: skip
    return out


def _dumped(path: Path, document: dict) -> Path:
    path.write_text(yaml.safe_dump(document))
    return path


def test_lavacli_submitting_a_job_is_not_given_the_board_password(tmp_path):
    # A stand-in for lavacli (it needs a LAVA server, and none runs here): it writes the
    # environment it was given and answers as `lavacli jobs submit` does, with the job id.
    lavacli = tmp_path / "bin" / "lavacli"
    lavacli.parent.mkdir()
    lavacli.write_text(f'#!/bin/sh\nenv > "{tmp_path}/lavacli.env"\necho 4711\n')
    lavacli.chmod(0o755)
    env = {**os.environ, "PATH": f"{lavacli.parent}:{os.environ['PATH']}",
           "EVBENCH_PASSWORD": "lava-sentinel-" + os.urandom(6).hex()}  # fmt: skip
    argv = [str(BIN / "evbench"), "lava", "job", "--device-type", "qemu",
            "--repository", "https://git.example/evbench.git", "--revision", "main",
            *JOB_ARGS["qemu"], "--out", str(tmp_path / "job.yaml"), "--submit"]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4711"  # lavacli's answer
    given = (tmp_path / "lavacli.env").read_text()
    assert f"PATH={lavacli.parent}:" in given and "EVBENCH_PASSWORD" not in given


@pytest.mark.parametrize("device_type", sorted(JOB_ARGS))
@pytest.mark.parametrize("options", [[], ["--suite", "codec", "--criteria", "candidate-wins"]])
def test_jobs_pass_lavas_schema_and_the_device_type(tmp_path, device_type, options):
    job = write_job(tmp_path, device_type, *options)
    checked = lava("job", job)
    chosen = checked["device-type"]
    assert checked["validate"] == {"valid": True} and chosen["accepted"], chosen
    # LAVA's strategies for the methods each device type offers (LAVA 2024+ calls its tmpfs
    # image deployment DeployPosixImages).
    qemu = {("DeployImages", "BootQEMU"), ("DeployPosixImages", "BootQEMU")}
    expected = {("Tftp", "UBoot")} if device_type == "k3-am625-sk" else qemu
    assert (chosen["deploy"], chosen["boot"]) in expected
    definition = yaml.safe_load(job.read_text())["actions"][2]["test"]["definitions"][0]
    assert definition["path"] == "lava/evbench.yaml"
    assert (ROOT / definition["path"]).exists()


@pytest.mark.parametrize(
    ("rootfs", "compression"),
    [("image.rootfs.tar.xz", "xz"), ("image.rootfs.tar.gz", "gz"), ("image.rootfs.tar", None)]
    + [(root, "refused") for root in ("image.rootfs.ext4", "image.rootfs.tar.zst", "image.wic.xz")],
)
def test_the_sk_jobs_root_compression_comes_from_its_name_or_the_root_is_refused(
    tmp_path, rootfs, compression
):
    out = tmp_path / "job.yaml"
    done = evbench(
        "lava", "job", "--device-type", "k3-am625-sk", "--repository", "https://git.example/e.git",
        "--kernel", "http://lab.example/Image", "--dtb", "http://lab.example/sk.dtb",
        "--rootfs", f"http://lab.example/{rootfs}", "--out", str(out), check=False,
    )  # fmt: skip
    if compression == "refused":  # a root the SK cannot boot over NFS
        assert done.returncode == 2
        assert rootfs in done.stderr and "NFS root" in done.stderr
        assert not out.exists()
        return
    assert done.returncode == 0, done.stderr
    nfs_root = yaml.safe_load(out.read_text())["actions"][0]["deploy"]["nfsrootfs"]
    assert nfs_root.get("compression") == compression
    checked = lava("job", out)
    assert checked["validate"] == {"valid": True} and checked["device-type"]["accepted"]


def test_a_broken_job_fails_lavas_schema_and_a_wrong_method_its_device_type(tmp_path):
    job = yaml.safe_load(write_job(tmp_path, "qemu").read_text())
    job["actions"][2]["test"]["definitions"][0]["from"] = "ftp"  # not a source LAVA knows
    assert lava("validate", _dumped(tmp_path / "broken.yaml", job))["valid"] is False
    job = yaml.safe_load(write_job(tmp_path, "k3-am625-sk").read_text())
    job["actions"][1]["boot"] = {"method": "qemu", "media": "tmpfs", "prompts": ["# "]}
    checked = lava("job", _dumped(tmp_path / "wrong.yaml", job))
    assert checked["validate"]["valid"] is True  # the schema ignores device types
    chosen = checked["device-type"]
    assert chosen["accepted"] is False
    # 2023.01 names the method it refused; later releases list the strategies' reasons.
    assert "qemu" in chosen["error"] or "None of the Base-boot strategies" in chosen["error"]


def _console(run_dir: Path, tmp_path: Path, prefix: str = "") -> Path:
    """The console of a board whose agent signals `run_dir`'s results to LAVA."""
    argv = [str(BIN / "evbench-agent"), "lava", str(run_dir)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    console = tmp_path / "console.log"
    console.write_text(prefix + done.stdout)
    return console


def _signals_of(run_dir: Path, tmp_path: Path) -> dict:
    # Kernel lines between the signals, as on a real console.
    return lava("signals", _console(run_dir, tmp_path, "[   12.345678] random: crng init done\n"))


def _records(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "summary.json").read_text())["records"]


def test_a_complete_run_gives_one_case_per_record_and_verdict(tmp_path):
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


def test_a_partial_run_fails_the_missing_records_and_a_record_without_a_median_is_refused(
    tmp_path,
):
    run_dir = tmp_path / "partial"
    shutil.copytree(CORE_RUN, run_dir)
    (run_dir / "complete").unlink()
    summary = json.loads((run_dir / "summary.json").read_text())
    records = summary["records"]
    records.remove(next(r for r in records if (r["codec"], r["metric"]) == ("protobuf", "encode")))
    (run_dir / "summary.json").write_text(json.dumps(summary))
    parsed = _signals_of(run_dir, tmp_path)
    assert parsed["errors"] == []
    cases = {c["test_case_id"]: c for c in parsed["cases"]}
    (missing,) = [i for i in cases if i.startswith("codec.seed.protobuf.encode.")]
    assert cases[missing]["result"] == "fail"
    assert "measurement" not in cases[missing]
    assert cases["run.complete"]["result"] == "fail"
    # The format holds finite numbers only: a record whose median is null is refused in
    # one line, never sent to LAVA (which reads measurements as decimal.Decimal).
    next(r for r in records if (r["codec"], r["metric"]) == ("json", "decode"))["median"] = None
    (run_dir / "summary.json").write_text(json.dumps(summary))
    argv = [str(BIN / "evbench-agent"), "lava", str(run_dir)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1].endswith("a record's median is a finite number, not None")


def test_recorded_lava_results_become_a_run_that_renders(tmp_path):
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
    evbench("report", str(out))  # check: it must succeed
    assert (out / "report.html").exists()
    # docs/lava.md: history add refuses it (one number per record, no replicates), saying so
    store = f"sqlite:///{tmp_path / 'h.sqlite'}"
    added = evbench("history", "add", "--history", store, str(out), check=False)
    assert added.returncode == 2, added.stderr
    assert "test cases: one number per record and no replicates" in added.stderr


def _stored(value: float) -> Decimal:
    """A measurement as a LAVA server keeps it: DecimalField(max_digits=30, decimal_places=10)."""
    return Decimal(repr(value)).quantize(Decimal("1e-10"))


def _grouped(records: list[dict], value) -> dict:
    """Each record identity and unit's values, sorted."""
    groups: dict[tuple, list] = {}
    for r in records:
        key = (r["suite"], r["profile"], r["codec"], r["metric"], r["unit"])
        groups.setdefault(key, []).append(value(r))
    return {key: sorted(values) for key, values in groups.items()}


def test_a_rest_export_brings_back_every_record_and_verdict_and_an_unknown_unit_is_refused(
    tmp_path,
):
    # What a LAVA server's REST API returns for the job's test cases, built from the cases
    # LAVA's own parser reads off the console.
    export = lava("export", _console(CODEC_LINK_RUN, tmp_path))
    exported = tmp_path / "tests.json"
    exported.write_text(json.dumps(export))
    out = tmp_path / "imported"
    evbench("lava", "results", "77", "--test-cases", str(exported), "--out", str(out))
    original = _records(CODEC_LINK_RUN)
    assert {r["unit"] for r in original} >= {"s", "bytes", "bytes/s", "messages/s"}
    imported = _records(out)
    assert len(imported) == len(original)
    # Each record's identity and unit come back, its median as LAVA stores it.
    assert _grouped(imported, lambda r: Decimal(repr(r["median"]))) == _grouped(
        original, lambda r: _stored(r["median"])
    )
    note = json.loads((out / "lava.json").read_text())
    verdict_cases = [c for c in export["results"] if c["name"].startswith("verdict.")]
    assert len(verdict_cases) == 13  # the run's TESTED rows: 3 codec metrics, 10 link ones
    assert note["verdicts"] == [
        {"name": c["name"], "result": c["result"], "measurement": c["measurement"]}
        for c in verdict_cases
    ]
    assert note["complete"] is True
    evbench("report", str(out))  # check: it must succeed
    # An export with a unit evbench does not know: named, and nothing written.
    case = {"name": "link.seed.json.throughput.abcdef12", "result": "pass", "suite": 2}
    case |= {"measurement": "12.5000000000", "unit": "furlongs-per-fortnight"}
    exported.write_text(json.dumps({"results": [case]}))
    argv = ["lava", "results", "78", "--test-cases", str(exported), "--out", str(tmp_path / "o")]
    refused = evbench(*argv, check=False)
    assert refused.returncode == 2
    assert "furlongs-per-fortnight" in refused.stderr
    assert not (tmp_path / "o").exists()


def _tar(archive: Path, source: Path, arcname: str = ".") -> Path:
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source, arcname=arcname)
    return archive


def _uploaded(tmp_path: Path, archive: Path, out: str, check: bool = False):
    argv = ["lava", "results", "4243", "--uploaded", str(archive), "--out", str(tmp_path / out)]
    return evbench(*argv, check=check)


def test_an_uploaded_run_is_verified_and_renders_and_a_bad_one_refused(tmp_path):
    out = tmp_path / "uploaded"
    _uploaded(tmp_path, _tar(tmp_path / "run.tar.gz", CORE_RUN), "uploaded", check=True)
    assert (out / "samples.jsonl").read_bytes() == (CORE_RUN / "samples.jsonl").read_bytes()
    evbench("report", str(out))  # check: it must succeed
    copy = tmp_path / "copy"
    shutil.copytree(CORE_RUN, copy)
    with open(copy / "samples.jsonl", "ab") as stream:
        stream.write(b"\n")
    refused = _uploaded(tmp_path, _tar(tmp_path / "damaged.tar.gz", copy), "bad")
    assert refused.returncode == 3
    assert "SHA256SUMS" in refused.stderr
    # Nothing of it is kept (no run with its `complete` marker for `report` to read), nor
    # the directory it was unpacked into to be verified.
    assert not (tmp_path / "bad").exists()
    assert [path.name for path in tmp_path.iterdir() if "bad" in path.name] == []
    # An archive whose member climbs out of the run's folder.
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    archive = _tar(tmp_path / "evil.tar.gz", outside, "../outside-written.txt")
    assert _uploaded(tmp_path, archive, "o").returncode == 2
    assert not (tmp_path / "outside-written.txt").exists()
    assert not (tmp_path / "o").exists()


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


def _definition_repository(tmp_path: Path) -> Path:
    """A git repository holding the test definition, as the job's `repository` names it."""
    repository = tmp_path / "evbench-repository"
    shutil.copytree(ROOT / "lava", repository / "lava")
    identity = ["-c", "user.name=evbench tests", "-c", "user.email=tests@evbench.invalid"]
    for command in (["init", "-q"], ["add", "lava"], [*identity, "commit", "-q", "-m", "lava"]):
        subprocess.run(["git", *command], cwd=repository, check=True, timeout=60)
    return repository


@pytest.mark.slow
def test_lava_dispatcher_writes_the_test_shell_and_the_run_measures_what_the_job_says(tmp_path):
    """lava-dispatcher writes the test shell of a QEMU job (its definition cloned, run.sh with
    the job's parameters) and LAVA's own lava-test-runner runs it, as on a board whose image
    carries the agent (this venv's)."""
    kernel, rootfs = tmp_path / "Image", tmp_path / "rootfs.ext4"
    for artifact in (kernel, rootfs):
        artifact.write_bytes(b"not booted: only the test shell runs here")
    job_file, runs = tmp_path / "job.yaml", tmp_path / "runs"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _UploadSink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upload = f"http://127.0.0.1:{server.server_port}/job-4242/run.tar.gz"
    try:
        evbench(
            "lava", "job", "--device-type", "qemu",
            "--repository", f"file://{_definition_repository(tmp_path)}",
            "--kernel", f"file://{kernel}", "--rootfs", f"file://{rootfs}",
            "--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf",
            "--criteria", "candidate-wins", "--upload-url", upload, "--out", str(job_file),
        )  # fmt: skip
        job = yaml.safe_load(job_file.read_text())
        # QUICK=1: issue 44 item 5 (only "true" counted, the full plan ran without a word).
        parameters = job["actions"][2]["test"]["definitions"][0]["parameters"]
        parameters.update({"QUICK": "1", "OUT_DIR": str(runs)})
        shell = lava("test-shell", _dumped(job_file, job), tmp_path / "dut")
        env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
        argv = ["/bin/sh", shell["runner"], shell["stage"]]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr[-2000:]
    (return_code,) = (Path(shell["stage"]) / "results").glob("*/return_code")
    assert return_code.read_text().strip() == "0", done.stdout[-2000:]
    (run_dir,) = [path for path in runs.iterdir() if path.is_dir()]
    # The QEMU command LAVA builds boots the image: the virt machine's console, and the
    # image, attached as the first virtio disk, as the root.
    qemu = " ".join(shell["qemu"])
    assert "-machine virt" in qemu or "-M virt" in qemu, qemu
    assert '-append "console=ttyAMA0,115200 root=/dev/vda rootfstype=ext4 rw"' in qemu
    assert "file={rootfs},if=virtio" in qemu
    (run_sh,) = shell["run_sh"]
    generated = Path(run_sh).read_text()
    # LAVA's own parameter block: plain assignments, nothing exported.
    submitted = generated.split("###test parameters from job submission###")[1].split("######")[0]
    assert "SUITES='codec'" in submitted.splitlines()
    assert "export" not in submitted
    spec = json.loads((run_dir / "manifest.json").read_text())["spec"]
    assert (spec["quick"], spec["suites"], spec["profiles"]) == (True, ["codec"], ["seed"])
    assert sorted(spec["codecs"]) == ["json", "protobuf"]
    records = _records(run_dir)
    assert {r["codec"] for r in records if r["codec"]} == {"json", "protobuf"}
    assert {r["suite"] for r in records} <= {"codec", "telemetry"}
    # (the machine's state around each worker is every profile's: codec and profile none)
    codec_records = [r for r in records if r["suite"] == "codec" and r["codec"]]
    assert {r["profile"] for r in codec_records} == {"seed"}
    # The upload is the run itself: it verifies against its SHA256SUMS on the host.
    archive = tmp_path / "received.tar.gz"
    archive.write_bytes(_UploadSink.received["/job-4242/run.tar.gz"])
    _uploaded(tmp_path, archive, "fetched", check=True)
    assert _records(tmp_path / "fetched") == records
    # The criteria reached the agent (the script says what it ran, for the job's log),
    # and the signals LAVA parsed are that run's.
    assert "--lava-criteria candidate-wins" in done.stdout
    console = tmp_path / "console.log"
    console.write_text(done.stdout)
    parsed = lava("signals", console)
    assert parsed["errors"] == []
    cases = {c["test_case_id"]: c for c in parsed["cases"]}
    assert cases["run.complete"]["result"] == "pass"
    codec_cases = [c for c in cases.values() if c["set"] == "codec"]
    assert len(codec_cases) == len([r for r in records if r["suite"] == "codec"])
    assert [c for c in cases.values() if c["set"] == "verdicts"]


def _script(tmp_path: Path, quick: str, **extra: str) -> subprocess.CompletedProcess:
    """lava/run-evbench.sh as the test definition's step runs it (its variables exported),
    the agent this venv's, a one-codec run; `extra`: more of its variables."""
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
        "SUITES": "codec", "PROFILES": "seed", "CODECS": "json", "QUICK": quick,
        "OUT_DIR": str(tmp_path / "runs"), **extra,
    }  # fmt: skip
    argv = ["/bin/sh", str(ROOT / "lava" / "run-evbench.sh")]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    ("spelling", "quick"),
    [("yes", True), ("On", True), ("TRUE", True), ("0", False), ("no", False), ("False", False)]
    + [(unknown, None) for unknown in ("maybe", "ture", "2", "quick")],
)
def test_quick_takes_the_usual_spellings_of_yes_and_no_and_refuses_others_before_running(
    tmp_path, spelling, quick
):
    done = _script(tmp_path, spelling)
    if quick is not None:
        assert done.returncode == 0, done.stderr[-2000:]
        (run_dir,) = [path for path in (tmp_path / "runs").iterdir() if path.is_dir()]
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["spec"]["quick"] is quick
        return
    assert done.returncode == 2
    assert f"QUICK='{spelling}'" in done.stderr and "true, 1, yes or on" in done.stderr
    assert "run --suite" not in done.stdout  # the agent never started
    assert not (tmp_path / "runs").exists()


def test_a_failed_upload_is_one_line_and_the_run_still_decides_the_step(tmp_path):
    with socket.socket() as closed:  # bound and never listening: the upload is refused
        closed.bind(("127.0.0.1", 0))
        upload = f"http://127.0.0.1:{closed.getsockname()[1]}/job/run.tar.gz"
        done = _script(tmp_path, "true", UPLOAD_URL=upload)
    assert "Traceback" not in done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if "upload" in line]
    assert len(said) == 1 and said[0].startswith("evbench: could not upload"), done.stderr
    assert "Connection refused" in said[0]
    assert done.returncode == 0, done.stderr[-2000:]  # the run was complete: so is the step


def test_an_agent_that_cannot_be_downloaded_is_one_line_and_exit_2(tmp_path):
    # No evbench-agent on PATH (the venv's left out): the script downloads the zipapp.
    done = _script(tmp_path, "true", PATH="/usr/bin:/bin", AGENT_ZIPAPP_URL="file:///nonexistent")
    assert "Traceback" not in done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("evbench: cannot download the agent from AGENT_ZIPAPP_URL:"), line
    assert "No such file or directory" in line
    assert done.returncode == 2
    assert "run --suite" not in done.stdout  # nothing ran
