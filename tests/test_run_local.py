"""`evbench run --board local` end to end, the agent a real separate process; memory figures
against /proc/meminfo and a bare interpreter's kernel-measured peak RSS."""

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from process_tree import read_proc

from evbench_agent.platform import memory
from evbench_core import results

EVBENCH = [sys.executable, "-m", "evbench"]
AGENT = [sys.executable, "-m", "evbench_agent"]
MiB = 1024 * 1024
PEAK_RSS = (
    "import re; print(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read())[1])"
)


def _run(argv, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)


def _mean(summary: dict, codec: str, metric: str = "size", profile: str = "seed") -> float:
    key = (codec, metric, profile)
    (record,) = [r for r in summary["records"] if (r["codec"], r["metric"], r["profile"]) == key]
    return record["mean"]


def _meminfo_bytes(field: str) -> int:
    match = re.search(rf"^{field}:\s+(\d+) kB$", Path("/proc/meminfo").read_text(), re.MULTILINE)
    assert match, field
    return int(match.group(1)) * 1024


def test_a_quick_run_of_every_profile_and_codec_prints_the_answer_and_records_memory(tmp_path):
    out = tmp_path / "run"
    argv = "run --board local --suite codec --profile all --codecs all --quick --details"
    available_before = _meminfo_bytes("MemAvailable")
    done = _run([*EVBENCH, *argv.split(), "--out", str(out)])
    available_after = _meminfo_bytes("MemAvailable")
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert _mean(summary, "protobuf") == pytest.approx(276.8, rel=0.03)  # the seed sizes
    assert _mean(summary, "json") == pytest.approx(995.2, rel=0.03)
    assert (out / "complete").exists()
    assert results.verify_checksums(out) == []
    profiles, codec_names = ({r[key] for r in summary["records"]} for key in ("profile", "codec"))
    assert {"seed", "ev-full", "skip-nested", "string-map"} <= profiles
    assert {"protobuf", "json", "protobuf-json", "orjson", "cbor2"} <= codec_names
    # The answer opens the output, in sentences, before the table.
    assert done.stdout.split("\n\n", 1)[1].startswith(
        "The answer (Protobuf against JSON, on this machine):"
    )
    lines = done.stdout.split("\nOne row per measurement")[0].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Profile "))
    for column in ("Metric", "JSON", "Protobuf (est.)", "Change (est.)", "Verdict"):
        assert column in lines[header]
    winners = [line.split("|")[5].strip() for line in lines[header + 2 :]]  # the table's rows
    assert set(winners) <= {"JSON", "Protobuf", "equal", "undecided", "n too small", "fact"}
    assert "Protobuf" in winners and "fact" in winners  # sizes are facts, not tested
    assert "Serialization" in done.stdout and "Medians per codec" in done.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["quick"] is True and manifest["status"] == "complete"
    assert manifest["platform"]["protobuf_backend"] in ("upb", "cpp", "python")
    records = {(r["codec"], r["metric"]): r for r in summary["records"]}
    encode = records[("json", "encode")]
    # The quick plan: 8 worker processes x 3 values each (the fewest processes whose
    # exact signed-rank test can reach p < 0.05 / 3 for a consistent effect).
    assert encode["unit"] == "s" and encode["n"] == 24 and encode["params"]["loops"] >= 1
    section = manifest["memory"]
    assert section["total_bytes"] == _meminfo_bytes("MemTotal")
    # Other processes come and go on this machine: a wide bound around this test's readings.
    for key, reading in (("available_before_bytes", available_before),
                         ("available_after_bytes", available_after)):  # fmt: skip
        assert 0 < section[key] <= section["total_bytes"], key
        assert 0.5 * reading <= section[key] <= 2 * reading, (key, section[key], reading)
    bare = int(_run([sys.executable, "-c", PEAK_RSS], timeout=60).stdout) * 1024
    # More than a bare interpreter (they import protobuf and run codecs), far below 1 GiB;
    # the telemetry sampler's own peak apart (it imports psutil, which a bare one does not).
    peaks = [section["manager_peak_rss_bytes"], section["worker_peak_rss_bytes"]]
    for peak in [*peaks, manifest["telemetry"]["sampler_peak_rss_bytes"]]:
        assert bare < peak < 1024 * MiB, (peak, bare)
    # The kernel's account of this test's children (ru_maxrss, which also counts what a
    # child had before exec): the largest was at least as big as the agent's processes.
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 >= max(peaks)


def test_meminfo_fields_are_read_in_bytes_and_missing_ones_are_none(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(
        "MemTotal:        2048 kB\nMemAvailable:    1536 kB\nHugePages_Total:       4\n"
    )
    assert memory.meminfo_bytes("MemTotal", meminfo) == 2048 * 1024
    assert memory.meminfo_bytes("MemAvailable", meminfo) == 1536 * 1024
    assert memory.meminfo_bytes("HugePages_Total", meminfo) == 4  # a count, no unit
    assert memory.meminfo_bytes("SwapFree", meminfo) is None
    assert memory.meminfo_bytes("MemTotal", tmp_path / "absent") is None


def test_the_platform_listing_names_the_codecs_without_importing_them_and_info_gives_it():
    # Every manifest lists the installed codecs; only a run's own codecs are imported (RSS).
    code = (
        "import json, sys\nfrom evbench_agent.run import platform_info\n"
        "listed = platform_info.collect()['codecs']\n"
        "print(json.dumps([sorted(listed), sorted(m for m in sys.modules if '.' not in m)]))\n"
    )
    done = _run([sys.executable, "-c", code], timeout=60)
    assert done.returncode == 0, done.stderr
    listed, modules = json.loads(done.stdout)
    from evbench_agent import codecs

    # requirements-dev installs them all: the registry's optional codecs' libraries
    optional = {c.module.partition(".")[0] for c in codecs.CODECS.values() if c.optional}
    assert {"orjson", "cbor2", "cantools"} <= optional  # as worked out by hand
    assert optional & set(modules) == set()
    assert listed == sorted(codecs.available())  # every install of this venv is whole
    done = _run([*AGENT, "info", "--json"])  # the agent's own account of the platform
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["machine"] == os.uname().machine
    assert "protobuf" in info["codecs"] and info["results_format"] == results.VERSION
    assert info["clock"]["timer"] == "time.perf_counter_ns"


def test_usage_errors_exit_2_with_one_line_before_anything_runs(tmp_path):
    out = tmp_path / "run"
    done = _run([*EVBENCH, "run", "--codecs", "json,yaml", "--quick", "--out", str(out)])
    assert done.returncode == 2
    assert "unknown codec 'yaml'" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists() or not any(out.iterdir())
    (tmp_path / "keep.txt").write_text("precious")
    done = _run([*EVBENCH, "run", "--quick", "--out", str(tmp_path)])
    assert done.returncode == 2 and "not empty" in done.stderr
    assert (tmp_path / "keep.txt").read_text() == "precious"
    done = _run([*EVBENCH, "run", "--bogus"])
    assert done.returncode == 2
    assert "hint:" in done.stderr and "Traceback" not in done.stderr
    assert _run([*AGENT, "frobnicate"]).returncode == 2


@pytest.mark.parametrize(
    "run_id",
    ["../../escaped", "a" * 5000, ".hidden", "a/b", "x\x1b[2J", ""],
    ids=["climbs-out", "5000-characters", "hidden", "two-names", "escape-sequence", "empty"],
)
def test_the_agent_refuses_what_is_no_run_id_and_writes_nothing(tmp_path, run_id):
    # The id names the run's folder, results/RUN_ID: `../../escaped` wrote beside the
    # working directory, 5000 characters were taken until the file system refused them.
    work = tmp_path / "work"
    work.mkdir()
    done = _run([*AGENT, "run", "--quick", "--suite", "codec", "--run-id", run_id], cwd=work)
    assert done.returncode == 2, done.stderr[-1000:]
    first = done.stderr.splitlines()[0]
    assert first.startswith("evbench-agent: error: not a run id: ") and len(first) < 200
    assert [p.name for p in tmp_path.iterdir()] == ["work"] and not any(work.iterdir())


#: The full plan (about 8 s here): a signal sent on the first samples lands mid-run.
CODEC_RUN = ["run", "--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf"]


def _started(argv, ready: Callable[[], bool], act: Callable, what: str, poll=0.02, **popen):
    """Start `argv`; once `ready()`, try `act` on it until it succeeds. The process is never
    left behind, whatever the test finds."""
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    )
    deadline = time.monotonic() + 120
    try:
        while not (ready() and act(process)):
            assert time.monotonic() < deadline and process.poll() is None, f"never {what}"
            time.sleep(poll)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    return process.returncode, stdout, stderr


def _mid_run(argv: list[str], out: Path, act: Callable[[subprocess.Popen], bool], what, **popen):
    """`_started` once the run's first samples are written (sizes come before the workers)."""
    samples = out / results.SAMPLES
    written = lambda: samples.exists() and samples.stat().st_size > 0  # noqa: E731
    return _started(argv, written, act, what, **popen)


def _sent(stop: int) -> Callable[[subprocess.Popen], bool]:
    return lambda process: process.poll() is None and process.send_signal(stop) is None


#: A lab's script starts `evbench run ... &` (a background job: SIGINT ignored, so is
#: SIGHUP under nohup), and its service manager sends SIGTERM: evbench stops its agent
#: with SIGINT, which the agent inherited ignored, so the old agent ran on to the end.
IGNORING = ["sh", "-c", "trap '' INT HUP; exec \"$@\"", "sh"]


@pytest.mark.parametrize(
    ("stop", "start", "code"),
    [
        (signal.SIGINT, EVBENCH, 130),
        # The same path as Ctrl-C (evbench.interrupts): kept out of the fast tier.
        pytest.param(signal.SIGTERM, EVBENCH, 130, marks=pytest.mark.integration),
        pytest.param(signal.SIGHUP, EVBENCH, 130, marks=pytest.mark.integration),
        pytest.param(signal.SIGTERM, [*IGNORING, *EVBENCH], 130, id="SIGTERM-with-SIGINT-ignored"),
        # `nohup evbench run &` asked to outlive its terminal: SIGHUP leaves it running
        # (the old code turned every SIGHUP into Ctrl-C), and the run completes.
        pytest.param(signal.SIGHUP, ["nohup", *EVBENCH], 0, id="SIGHUP-under-nohup"),
        pytest.param(signal.SIGTERM, AGENT, 130, id="SIGTERM-to-the-agent"),
        # The agent alone given a closed terminal's SIGHUP: it died on the spot, its run
        # left "running" without summary or checksums, the CPU governor not put back.
        pytest.param(signal.SIGHUP, AGENT, 130, id="SIGHUP-to-the-agent"),
    ],
)
def test_ctrl_c_sigterm_or_sighup_leaves_a_partial_run_and_exits_130(tmp_path, stop, start, code):
    # SIGTERM (systemd, CI, `timeout`) and SIGHUP (a closed terminal) go to evbench only,
    # not to its agent: evbench itself must stop the agent and keep the run.
    out = tmp_path / "run"
    argv = [*start, *CODEC_RUN, "--out", str(out)]
    returncode, _, stderr = _mid_run(
        argv, out, _sent(stop), f"sent {stop.name}", start_new_session=True
    )
    assert returncode == code, stderr
    if code == 0:
        assert (out / "complete").is_file()
        return
    assert not (out / "complete").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] is True and summary["records"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["end_time"]
    assert results.verify_checksums(out) == []
    # evbench's word; the agent alone says it in its own (evbench_agent.cli)
    assert ("interrupted; the run is kept as partial" if start == AGENT else "PARTIAL") in stderr


@pytest.mark.parametrize(
    "stop",
    [signal.SIGINT, signal.SIGTERM, pytest.param(signal.SIGHUP, marks=pytest.mark.integration)],
    ids=["SIGINT", "SIGTERM", "SIGHUP"],
)
def test_a_second_stop_while_the_agent_seals_its_run_is_ignored(tmp_path, stop):
    # The second signal made certain: a sitecustomize wraps the runner's seal so that the
    # agent (not its workers or sampler) sends it to itself as the seal begins. The old
    # agent had put its default handlers back by then: SIGTERM or SIGHUP killed it, and
    # Ctrl-C left the run "running" without summary or checksums while it said the run
    # was kept.
    (tmp_path / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if sys.orig_argv[1:4] == ['-m', 'evbench_agent', 'run']:\n"
        "    from evbench_agent.run import runner\n"
        "    seal = runner._seal\n"
        "    def sealing(*args):\n"
        f"        os.kill(os.getpid(), {int(stop)})\n"
        "        return seal(*args)\n"
        "    runner._seal = sealing\n"
    )
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    out = tmp_path / "run"
    argv = [*AGENT, *CODEC_RUN, "--out", str(out)]
    code, _, stderr = _mid_run(
        argv, out, _sent(stop), f"sent {stop.name}", env={**os.environ, "PYTHONPATH": path}
    )
    assert code == 130, stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["end_time"]
    assert json.loads((out / "summary.json").read_text())["partial"] is True
    assert results.verify_checksums(out) == []
    assert f"{stop.name} received while the run is being stopped and sealed: ignored" in stderr
    assert "interrupted; the run is kept as partial" in stderr


@pytest.mark.parametrize("late", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_arriving_as_evbench_exits_leaves_its_exit_code(late):
    # timeout(1) signals the command and then its process group: the second SIGTERM can
    # come once the command is over (docs/buses.md's `evbench serve`, stopped cleanly by
    # the first, exited 143 beside a CPU hog). Made certain: an atexit hook sends it as the
    # program exits. Python's default handler, put back after the command, killed it.
    script = (
        "import atexit, os, sys\n"
        f"atexit.register(lambda: (os.kill(os.getpid(), {int(late)}), print('after')))\n"
        "sys.argv = ['evbench', '--version']\n"
        "from evbench.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "after"), done


@pytest.mark.parametrize("start", [EVBENCH, AGENT], ids=["evbench", "agent"])
def test_ctrl_c_before_the_run_began_leaves_nothing_and_exits_130(tmp_path, start):
    # Ctrl-C as soon as the folder appears lands in the plan's probe (before the manifest):
    # it said "manifest.json is missing" (exit 2) or "the agent failed" (exit 1), and left
    # the folder with its hidden disk reserve.
    out = tmp_path / "run"
    argv = [*start, *CODEC_RUN, "--out", str(out)]
    code, _, stderr = _started(argv, out.exists, _sent(signal.SIGINT), "a run folder", 0.002)
    assert code == 130, stderr
    assert "Traceback" not in stderr and "error" not in stderr, stderr
    if (out / "manifest.json").exists():  # began all the same (a fast machine): kept
        assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    else:
        assert not out.exists(), sorted(p.name for p in out.iterdir())
        assert "interrupted" in stderr and "kept as partial" not in stderr, stderr


def test_an_aa_run_records_its_arms_and_plan_and_its_progress_carries_the_eta(tmp_path):
    out = tmp_path / "run"
    argv = "run --suite codec --profile seed --quick --processes 2 --aa json --aa-slowdown 0.2"
    done = _run([*AGENT, *argv.split(), "--progress", "json", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    # the plan is said second, after the run's directory and before anything runs
    assert events[1]["text"].startswith("planned duration: about"), events[:3]
    advances = [e for e in events if e.get("event") == "advance"]
    assert advances and all(e["eta_s"] >= 0 for e in advances), advances
    assert advances[-1]["eta_s"] == 0  # the codec suite is the whole run: nothing left
    manifest = json.loads((out / "manifest.json").read_text())
    found = manifest["aa"].pop("result")
    assert manifest["aa"] == {"codec": "json", "copy": "json-aa", "slowdown": 0.2}
    # encode, decode, decode_access of one profile are tested; with 2 processes the best
    # exact two-sided p is 2 / 2**2 = 0.5, so no row can name a winner: all "n too small".
    assert found == {"tested_rows": 3, "too_small": 3, "winners": []}
    assert manifest["spec"]["codecs"] == ["json", "json-aa"]
    planned = manifest["planned_seconds"]
    assert set(planned) == {"codec"} and planned["codec"] > 0
    timed = [
        s for s in results.read_samples(out) if s.metric in ("encode", "decode", "decode_access")
    ]
    # 2 processes x 2 arms x 3 operations, each set one process's 3 rounds (quick plan)
    assert sorted((s.codec, s.worker) for s in timed) == sorted(
        (codec, worker) for codec in ("json", "json-aa") for worker in (0, 1) for _ in range(3)
    )
    assert all(len(s.values) == 3 for s in timed)
    assert all(s.params["shortest_span_s"] >= 0.9 * s.params["min_time_s"] for s in timed)
    assert all(s.params["aa_slowdown"] == 0.2 for s in timed)


#: What is killed: its command line, the suite that starts it, and what the manifest's
#: reason (and so the first line of `evbench run` and of the report) must begin with.
KILLS = {
    "agent": ("evbench_agent run", "codec", "the agent was killed (signal 9)"),
    "sampler": ("evbench_agent.telemetry.sampler", "codec",
                "the telemetry sampler died (signal 9, SIGKILL)"),
    "worker": ("evbench_agent worker", "codec", "a codec worker was killed (signal 9, SIGKILL)"),
    "responder": ("evbench_agent serve", "link", "the link responder died (signal 9, SIGKILL): "),
}  # fmt: skip


def _killer(words: str, orphans: list[int]) -> Callable[[subprocess.Popen], bool]:
    """SIGKILL, as the OOM killer would, the run's child whose command line holds `words`
    (the agent once it has started workers and sampler: their PIDs go to `orphans`).
    A worker lives briefly: one found may end before the signal (a failed kill, or one a
    zombie ignores, then a run that completes), so the next one is tried."""

    def kill(host: subprocess.Popen) -> bool:
        try:
            children = psutil.Process(host.pid).children(recursive=True)
        except psutil.Error:
            return False
        for child in children:
            try:
                if words in " ".join(child.cmdline()) and child.status() != psutil.STATUS_ZOMBIE:
                    if words == KILLS["agent"][0]:
                        orphans[:] = [c.pid for c in child.children(recursive=True)]
                        if not orphans:
                            return False
                    child.kill()
                    return True
            except psutil.Error:  # it ended while we looked
                continue
        return False

    return kill


@pytest.mark.parametrize("victim", sorted(KILLS))
def test_a_run_whose_child_is_killed_is_partial_and_its_first_line_names_it(victim, tmp_path):
    command, suite, reason = KILLS[victim]
    out = tmp_path / "run"
    argv = f"run --board local --suite {suite} --profile seed --codecs json,protobuf --quick"
    # killed once measuring: there is something to keep
    orphans: list[int] = []
    code, stdout, stderr = _mid_run(
        [*EVBENCH, *argv.split(), "--out", str(out)],
        out,
        _killer(command, orphans),
        f"killed {victim}",
    )
    assert code == 4, stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "partial"
    assert manifest["reason"].startswith(reason), manifest["reason"]
    assert not (out / "complete").exists()
    assert list(results.read_samples(out))  # the samples measured so far are kept
    # What died comes first: on the terminal, in report.md, at the top of report.html.
    assert stdout.splitlines()[0] == f"PARTIAL: {manifest['reason']}"
    assert f"PARTIAL run ({manifest['reason']}): partial results in {out}" in stderr
    first = (out / "report.md").read_text().splitlines()[0]
    assert first == f"**PARTIAL: {manifest['reason']}**"
    html = (out / "report.html").read_text()
    assert f'<body><p class="partial" id="headline"><strong>PARTIAL: {reason}' in html
    if victim == "agent":  # evbench seals what the agent left; none of its workers goes on
        assert manifest["reason"] == reason and results.verify_checksums(out) == []
        assert json.loads((out / results.SUMMARY).read_text())["partial"] is True
        assert orphans and [pid for pid in orphans if read_proc(pid, "cmdline")] == []


def test_a_worker_killed_before_it_reads_its_task_is_a_partial_run(tmp_path, monkeypatch):
    # The test above's race made certain (it once gave an internal BrokenPipeError): the
    # worker kills itself (SIGKILL, from a sitecustomize) before it reads a task larger than
    # a pipe holds, so writing the task finds the pipe broken.
    from evbench_agent.processes import workers
    from evbench_core.errors import PartialRun

    (tmp_path / "sitecustomize.py").write_text("import os\nos.kill(os.getpid(), 9)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with pytest.raises(PartialRun, match=r"^a codec worker was killed \(signal 9, SIGKILL\)$"):
        workers.run_worker({"suite": "codec", "padding": "x" * (1 << 20)}, print)


@pytest.mark.parametrize("sealed", [True, False], ids=["after-its-complete-marker", "before"])
def test_an_agent_killed_after_sealing_its_run_leaves_it_complete(tmp_path, sealed):
    # A run the agent had sealed (marker, checksums) stays whole; killed before sealing,
    # what it wrote is kept and sealed partial. The run is a committed one (tests/data/runs).
    from evbench.commands import run as run_command

    out = tmp_path / "run"
    shutil.copytree(Path(__file__).parent / "data" / "runs" / "core-v1", out)
    if not sealed:
        (out / results.COMPLETE).unlink()
    status = run_command._after_a_killed_agent(out, signal.SIGINT)
    assert status == (0 if sealed else 4)  # OK, or PARTIAL (docs/running.md's exit codes)
    assert (out / results.COMPLETE).is_file() is sealed
    assert results.verify_checksums(out) == []
    manifest = json.loads((out / results.MANIFEST).read_text())
    assert manifest.get("reason") == (None if sealed else "the agent was killed (signal 2)")
