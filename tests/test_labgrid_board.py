"""`--board labgrid://...` and `evbench lab run` against a real labgrid 26 coordinator and
exporter on loopback (labgrid_rig.two_place_lab), driven by .venv-labgrid's labgrid-client.
Another lab user is another LG_USERNAME; the lab page opens in Chromium."""

import contextlib
import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import labgrid_rig
import process_tree
import pytest
from chromium import open_page
from sshd import free_port

from evbench_core import results

pytestmark = [pytest.mark.integration, pytest.mark.lab, pytest.mark.slow]

BOARD_PYTHON = "/usr/bin/python3"
EVBENCH = str(Path(sys.executable).parent / "evbench")
QUICK = ["--quick", "--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf"]
RUN_TIMEOUT = 600  # a quick run plus the place's labgrid calls, on a load of 15-25


@pytest.fixture(scope="module")
def lab(sshd, tmp_path_factory):
    switch = labgrid_rig.PowerSwitch()
    try:
        lab = labgrid_rig.two_place_lab(sshd, tmp_path_factory.mktemp("lab"), switch)
        lab.switch = switch
        yield lab
        lab.stop()
    finally:
        switch.stop()


@pytest.fixture(autouse=True)
def lab_env(lab, ssh_home, monkeypatch):
    """evbench's environment (every test here): the lab's coordinator, as user nightly."""
    lab.use(monkeypatch)
    return lab


def board_url(place: str, work: Path, **options: str) -> str:
    query = "&".join(
        [f"dir={work}", f"python={BOARD_PYTHON}"] + [f"{k}={v}" for k, v in options.items()]
    )
    return f"labgrid://{place}?{query}"


def evbench(*argv, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess:
    argv = [EVBENCH, *map(str, argv)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def running(*argv: str, **popen) -> Iterator[subprocess.Popen]:
    """`evbench ARGV` started (output piped unless `popen` says otherwise), killed at the end."""
    popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **popen}
    job = subprocess.Popen([EVBENCH, *argv], **popen)
    try:
        yield job
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
        for pipe in (job.stdout, job.stderr):
            if pipe is not None:
                pipe.close()


def deploy(place: str, tmp_path: Path, *more: str) -> subprocess.CompletedProcess:
    return evbench("deploy", "--board", board_url(place, tmp_path / "board"), *more)


def place_run(run_dir: Path, place: str) -> dict:
    """The manifest of `run_dir`, asserted a complete, verified run on labgrid place `place`."""
    assert (run_dir / results.COMPLETE).exists(), run_dir
    assert results.verify_checksums(run_dir) == []
    manifest = json.loads((run_dir / results.MANIFEST).read_text())
    assert manifest["board_identity"]["id"] == f"place:{place}"
    assert manifest["lab"]["place"] == place
    return manifest


def wait_while_running(job: subprocess.Popen, done: Callable[[], bool], what: str,
                       within_s: float, every_s: float) -> None:  # fmt: skip
    """Until `done()`, the job still running; `what` failed if not within `within_s`."""
    deadline = time.monotonic() + within_s
    while not done():
        if job.poll() is not None:  # ended: fine if what it waits for came just before
            assert done(), job.communicate()
            return
        assert time.monotonic() < deadline, what
        time.sleep(every_s)


@contextlib.contextmanager
def held(lab, place: str, user: str) -> Iterator[None]:
    """`place` acquired by another lab `user` while the block runs."""
    lab.client("-p", place, "acquire", user=user)
    try:
        yield
    finally:
        lab.client("-p", place, "release", user=user, check=False)


def test_a_run_on_a_place_over_ssh_records_the_place_and_releases_it(lab, sshd, tmp_path):
    out = tmp_path / "run"
    done = evbench("run", "--board", board_url("am62x-a", tmp_path / "board"), *QUICK, "--out", out)
    assert done.returncode == 0, done.stderr
    assert "acquired place am62x-a as " in done.stderr
    assert "released place am62x-a" in done.stderr
    # The place, written by the agent into the manifest it checksums (not beside it).
    manifest = place_run(out, "am62x-a")
    assert manifest["board_identity"]["source"] == "lab place"
    place = manifest["lab"]
    assert not (out / "labgrid.json").exists()
    assert place["tags"] == {"board": "am62x", "site": "loop", "unit": "a"}
    assert place["exporters"] == ["exporter"]
    assert [r["class"] for r in place["resources"]] == ["NetworkService"]
    assert place["resources"][0]["params"]["port"] == sshd.port
    assert place["transport"].startswith(f"ssh://{sshd.user}@127.0.0.1:{sshd.port}?")
    # The job's own owner: the user, tagged with the evbench process.
    assert re.fullmatch(r"[^/]+/nightly\+evbench-\d+", place["owner"]), place["owner"]
    assert not place["held_by_user"]
    assert place["jump"] is None  # a plain exporter: reached directly
    assert place["coordinator"] == lab.coordinator
    # The service's password is in no file of the run, nor on the board, nor said.
    assert "password" not in place["resources"][0]["params"]
    secret = labgrid_rig.SERVICE_PASSWORD.encode()
    assert [f for f in tmp_path.rglob("*") if f.is_file() and secret in f.read_bytes()] == []
    assert labgrid_rig.SERVICE_PASSWORD not in done.stdout + done.stderr
    assert lab.acquired_by("am62x-a") is None  # released after the run
    assert "Reservation" not in lab.reservations()  # and its reservation cancelled


def test_a_place_the_user_holds_is_used_and_left_held(lab, tmp_path):
    with held(lab, "am62x-b", "nightly"):
        done = deploy("am62x-b", tmp_path)
        assert done.returncode == 0, done.stderr
        assert "which you hold" in done.stderr
        assert (tmp_path / "board" / "agent" / "evbench-agent.pyz").exists()
        assert lab.acquired_by("am62x-b").endswith("/nightly")  # still the user's


def test_a_place_held_by_someone_else_times_out_or_is_used_once_released(lab, tmp_path):
    url = board_url("am62x-b", tmp_path / "board")
    with held(lab, "am62x-b", "alice"):
        started = time.monotonic()
        done = deploy("am62x-b", tmp_path, "--place-timeout", "3")
        assert done.returncode == 2, done.stderr
        assert "gave up waiting for place am62x-b (acquired by " in done.stderr
        assert "/alice)" in done.stderr
        assert time.monotonic() - started < 120
        assert lab.acquired_by("am62x-b").endswith("/alice")  # untouched
        assert "nightly" not in lab.reservations()  # evbench's reservation cancelled
        with running("deploy", "--board", url) as job:
            # Without a timeout evbench waits in a reservation, under this job's owner.
            waiting = lambda: "state: waiting" in lab.reservations()  # noqa: E731
            wait_while_running(job, waiting, "evbench made no reservation", 180, 1)
            assert "+evbench-" in lab.reservations()
            lab.client("-p", "am62x-b", "release", user="alice")
            _, err = job.communicate(timeout=RUN_TIMEOUT)
        assert job.returncode == 0, err
        assert "acquired place am62x-b" in err and "released place am62x-b" in err
        assert (tmp_path / "board" / "agent" / "evbench-agent.pyz").exists()
        assert lab.acquired_by("am62x-b") is None


def test_a_reservation_cancelled_under_a_waiting_job_is_named_without_its_token(lab, tmp_path):
    # The lab's administrator cancels the reservation the job waits in: labgrid's `wait`
    # fails naming the token, and so does the job's own cancelling of it afterwards.
    url = board_url("am62x-b", tmp_path / "board")
    with held(lab, "am62x-b", "alice"), running("deploy", "--board", url) as job:
        owner = f"+evbench-{job.pid}"
        waiting = lambda: owner in lab.reservations()  # noqa: E731
        wait_while_running(job, waiting, "evbench made no reservation", 180, 1)
        (token,) = lab.cancel_reservations_of(owner)
        _, err = job.communicate(timeout=RUN_TIMEOUT)
    assert job.returncode == 2, err
    assert token not in err  # a token lets anyone cancel the reservation
    lines = err.splitlines()
    gone = "Reservation <token> does not exist"  # labgrid's reason names the token too
    assert f"evbench: error: labgrid-client wait <token>: {gone}" in lines, err
    assert f"evbench: warning: labgrid-client cancel-reservation <token>: {gone}" in lines, err


def test_tags_matching_no_place_and_a_coordinator_not_running_are_named(lab):
    done = evbench("deploy", "--board", "labgrid://?tags=board=imx8,site=loop")
    assert done.returncode == 2, done.stderr
    assert f"no labgrid place at {lab.coordinator} is tagged board=imx8,site=loop" in done.stderr
    nobody = f"127.0.0.1:{free_port()}"
    done = evbench("deploy", "--board", f"labgrid://am62x-a?coordinator={nobody}")
    assert done.returncode == 2, done.stderr
    assert f"the labgrid coordinator at {nobody} is not reachable" in done.stderr


def test_power_cycle_switches_off_then_on_through_labgrid_or_says_no_power(lab, tmp_path):
    lab.switch.seen.clear()
    done = deploy("am62x-a", tmp_path, "--power-cycle")
    assert done.returncode == 2, done.stderr
    assert "place am62x-a has no power resource: --power-cycle cannot work there" in done.stderr
    assert lab.switch.seen == []
    assert lab.acquired_by("am62x-a") is None  # released after the refusal
    board = board_url("am62x-p", tmp_path / "board")
    done = evbench("-vv", "deploy", "--board", board, "--power-cycle")
    assert done.returncode == 0, done.stderr
    assert "power-cycling place am62x-p (NetworkPowerPort)" in done.stderr
    # -vv: each labgrid-client call by its command and place alone (never the token).
    client = "[evbench.boards._labgrid_client]"
    calls = [line for line in done.stderr.splitlines() if client in line]
    shape = re.compile(
        r"evbench: debug: \[evbench\.boards\._labgrid_client\] labgrid-client ([a-z-]+)"
        r"( on place am62x-p)? -> exit 0, \d+ bytes out"
    )
    assert calls and all(shape.fullmatch(line) for line in calls), calls
    said = [shape.fullmatch(line).group(1) for line in calls]
    for step in ("reserve", "acquire", "cancel-reservation", "power", "release"):
        assert step in said, said
    assert said.index("acquire") < said.index("power") < said.index("release")
    # labgrid's own simplerest driver, run by labgrid-client: off, then on, outlet 1.
    assert lab.switch.seen == ["/outlet/1/0", "/outlet/1/1"]
    assert (tmp_path / "board" / "agent" / "evbench-agent.pyz").exists()  # it answered again
    assert lab.acquired_by("am62x-p") is None


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_signal_mid_run_frees_the_place_and_keeps_the_run_partial(lab, tmp_path, stop):
    # systemd, CI cancellations and `timeout` send SIGTERM; a user at a terminal, SIGINT.
    slow = ["--suite", "codec", "--profile", "seed,ev-full,int,double", "--codecs", "json,protobuf"]
    out, log = tmp_path / "run", tmp_path / "evbench.err"
    argv = ["run", "--board", board_url("am62x-a", tmp_path / "board"), *slow, "--out", str(out)]
    # evbench's "released" line comes after labgrid-client release returned: an upper bound
    # on the freeing (a labgrid-client check from here would add its own seconds).
    released = lambda: "released place am62x-a" in log.read_text(errors="replace")  # noqa: E731
    with log.open("w") as errors, running(*argv, stdout=subprocess.DEVNULL, stderr=errors) as job:
        # Acquired, the agent measuring on the board, and evbench showing its steps: the
        # check below needs a step shown (the board's samples file came before any, and an
        # idle fresh-clone run sent the signal there: no step to compare, 2026-12-08).
        step = re.compile(r"codec \[\d+/\d+\]")
        measuring = lambda: step.search(log.read_text(errors="replace"))  # noqa: E731
        wait_while_running(job, measuring, "the run never showed a step", 300, 0.05)
        assert "+evbench-" in (lab.acquired_by("am62x-a") or "")
        job.send_signal(stop)
        wait_while_running(job, released, "the place was never released", 300, 0.05)
        job.wait(timeout=300)
    err = log.read_text()
    assert lab.acquired_by("am62x-a") is None
    assert job.returncode == 130, err
    # Freed by stopping the run, not by waiting for its end or for a stop to time out: the
    # last step it showed is short of its plan. How soon, in seconds, is a figure of the
    # machine's load, measured by benchmarks/place_release.py, not bounded here.
    steps = [(int(done), int(of)) for done, of in re.findall(r"codec \[(\d+)/(\d+)\]", err)]
    assert steps and max(done for done, _ in steps) < steps[-1][1], steps
    assert "did not stop within" not in err
    assert "Reservation" not in lab.reservations()
    # The run came back as a partial run: what was measured, sealed and checksummed.
    assert not (out / results.COMPLETE).exists()
    assert results.verify_checksums(out) == []
    summary = json.loads((out / results.SUMMARY).read_text())
    assert summary["partial"] is True and summary["records"]
    assert json.loads((out / results.MANIFEST).read_text())["status"] == "interrupted"
    assert "PARTIAL run" in err
    # Nothing of the run goes on on the board (this machine).
    (launch,) = (tmp_path / "board").glob("runs/*/launch.json")
    assert process_tree.ended(json.loads(launch.read_text())["pid"], 10)


def test_after_sigkill_the_next_call_names_the_dead_holder_and_how_to_free_it(lab, tmp_path):
    # SIGKILL leaves no chance to release: the place stays acquired by the dead job.
    url = board_url("am62x-b", tmp_path / "board")
    killed = None
    try:
        with running("deploy", "--board", url) as job:
            killed = job.pid
            acquired = lambda: "+evbench-" in (lab.acquired_by("am62x-b") or "")  # noqa: E731
            wait_while_running(job, acquired, "the place was never acquired", 300, 0.2)
            job.kill()
            job.communicate(timeout=60)
        holder = lab.acquired_by("am62x-b")
        assert holder.endswith(f"+evbench-{job.pid}")
        done = deploy("am62x-b", tmp_path, "--place-timeout", "3")
        assert done.returncode == 2, done.stderr
        assert f"evbench job {job.pid} of nightly on " in done.stderr
        assert "no longer runs" in done.stderr
        (command,) = re.findall(r"free it with: (labgrid-client .*release --kick)", done.stderr)[:1]
        assert command == f"labgrid-client -x {lab.coordinator} -p am62x-b release --kick"
        # The command it names frees the place (as the lab's administrator would run it).
        lab.client(*command.split()[1:], user="lab-admin")
        assert lab.acquired_by("am62x-b") is None
    finally:
        if lab.acquired_by("am62x-b") is not None:
            lab.client("-p", "am62x-b", "release", "--kick", user="lab-admin")
        # Killed between its acquire and cancelling its reservation, the job left that
        # reservation: the next test on am62x-b would wait for it to expire (75 s).
        if killed is not None:
            lab.cancel_reservations_of(f"+evbench-{killed}")
    assert "Reservation" not in lab.reservations()


def test_a_reservation_left_by_a_dead_job_is_named_with_the_command_that_ends_it(lab, tmp_path):
    # The reservation a killed job leaves, made as it made it: under the owner evbench gives
    # a job, whose process has ended.
    ended = subprocess.Popen(["true"])
    ended.wait()
    owner = f"{socket.gethostname()}/nightly+evbench-{ended.pid}"
    made = lab.client("reserve", "--shell", "name=am62x-b", user=f"nightly+evbench-{ended.pid}")
    (token,) = re.findall(r"LG_TOKEN=(\w+)", made.stdout)
    try:
        assert f"reservation: {token}" in lab.client("-p", "am62x-b", "show").stdout
        done = deploy("am62x-b", tmp_path, "--place-timeout", "3")
        assert done.returncode == 2, done.stderr
        assert (
            f"reserved for {owner} (reservation {token}), an evbench job {ended.pid} of nightly "
            f"on {socket.gethostname()} that no longer runs"
        ) in done.stderr
        ends = r"end it now with: (labgrid-client \S+ \S+ \S+ \w+)"
        commands = set(re.findall(ends, done.stderr))
        assert commands == {f"labgrid-client -x {lab.coordinator} cancel-reservation {token}"}
        # The command it names frees the place, run by another lab user.
        lab.client(*commands.pop().split()[1:], user="lab-admin")
        assert "reservation:" not in lab.client("-p", "am62x-b", "show").stdout
    finally:
        lab.client("cancel-reservation", token, check=False)
    assert "Reservation" not in lab.reservations()


# `evbench lab run` on these places.
LAB_TIMEOUT = 1200


def lab_run(plan: Path, out: Path) -> subprocess.CompletedProcess:
    return evbench("lab", "run", str(plan), "--out", str(out), timeout=LAB_TIMEOUT)


def plan(tmp_path: Path, coordinator: str, units: str = "ab") -> Path:
    boards = "\n".join(
        f"  - board: labgrid://am62x-{unit}?coordinator={coordinator}"
        f"&dir={tmp_path / ('board-' + unit)}&python={BOARD_PYTHON}\n"
        f"    name: am62x-{unit}"
        for unit in units
    )
    path = tmp_path / "LAB.yaml"
    path.write_text(
        f"boards:\n{boards}\n"
        "matrix:\n  suites: [codec]\n  profiles: [seed]\n  codecs: ['json,protobuf']\n"
        "options: [--quick]\nretries: 1\nplace_timeout: 300\n"
    )
    return path


def test_a_two_place_matrix_runs_in_parallel_and_reports(lab, tmp_path):
    lab_dir = tmp_path / "lab"
    done = lab_run(plan(tmp_path, lab.coordinator), lab_dir)
    assert done.returncode == 0, done.stderr
    index = json.loads((lab_dir / "lab.json").read_text())
    assert index["finished"]
    entries = {entry["board"]: entry for entry in index["entries"]}
    assert sorted(entries) == ["am62x-a", "am62x-b"]
    spans = {}
    for name, entry in entries.items():
        assert (entry["status"], entry["exit_code"], entry["attempts"]) == ("complete", 0, 1)
        manifest = place_run(lab_dir / entry["run_dir"], name)  # on its own place
        assert manifest["lab"]["tags"]["unit"] == name[-1]
        assert entry["comparison"]["baseline"] is None  # the first night of these boards
        spans[name] = (manifest["start_time"], manifest["end_time"])
    # In parallel: each board's run began before the other's ended.
    (a_start, a_end), (b_start, b_end) = spans["am62x-a"], spans["am62x-b"]
    assert a_start < b_end and b_start < a_end, spans
    assert lab.acquired_by("am62x-a") is None and lab.acquired_by("am62x-b") is None
    status = evbench("lab", "status", str(lab_dir), timeout=120)
    assert status.returncode == 0 and "2 of 2 entries done; the lab is finished" in status.stdout
    page = lab_dir / "lab.html"
    html = page.read_text()
    assert html.count('<tr class="complete">') == 2 and "run report" in html
    shown = open_page(page, tmp_path / "profile", "document.querySelectorAll('tr').length")
    assert (shown.value, shown.errors) == (3, [])  # the header and one row per entry


def test_a_failing_board_does_not_stop_the_other_and_the_next_night_compares(lab, tmp_path):
    lab_plan = plan(tmp_path, lab.coordinator, units="a")
    # The first night, a second board whose place does not exist: its entry fails, not the lab.
    first_plan = tmp_path / "FIRST.yaml"
    first_plan.write_text(
        lab_plan.read_text().replace(
            "matrix:",
            f"  - board: labgrid://am62x-gone?coordinator={lab.coordinator}\n    name: gone\n"
            "matrix:",
        )
    )
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first = lab_run(first_plan, first_dir)
    assert first.returncode == 4, first.stderr  # not every entry completed
    entries = {e["board"]: e for e in json.loads((first_dir / "lab.json").read_text())["entries"]}
    gone, first_entry = entries["gone"], entries["am62x-a"]
    assert (gone["status"], gone["exit_code"], gone["attempts"]) == ("failed", 2, 1)
    assert "place pattern am62x-gone matches nothing" in gone["error"]
    assert gone["run_dir"] is None  # refused before its run began: lab.json names no folder
    assert not list((first_dir / "runs").glob(f"{gone['id']}*"))
    assert (first_entry["status"], first_entry["exit_code"]) == ("complete", 0)
    assert results.verify_checksums(first_dir / first_entry["run_dir"]) == []
    assert '<tr class="failed">' in (first_dir / "lab.html").read_text()
    assert first_entry["comparison"]["baseline"] is None

    second = lab_run(lab_plan, second_dir)
    (second_entry,) = json.loads((second_dir / "lab.json").read_text())["entries"]
    comparison = second_entry["comparison"]
    # The baseline is the first night's run of the same place, found in the history store.
    assert Path(comparison["baseline"]) == first_dir / first_entry["run_dir"]
    assert second_entry["status"] == "complete"
    # Quick runs on a loaded machine may differ beyond 5 %: whichever way compare decided,
    # the lab's exit code and lab.json say the same (3 for a gain beyond --max-change too).
    assert comparison["exit_code"] in (0, 3)
    assert second.returncode == comparison["exit_code"], second.stderr
    failed = comparison["regressed"] or comparison["improved_beyond_max_change"]
    assert failed == (comparison["exit_code"] == 3)
    table = Path(comparison["table"]).read_text()
    assert str(first_dir / first_entry["run_dir"]) in table  # compare's own listing
    html = (second_dir / "lab.html").read_text()
    assert ("REGRESSED" in html) == comparison["regressed"]
    assert f"vs {comparison['baseline_run_id']}" in html


def test_sigterm_stops_the_lab_frees_the_place_and_finishes_lab_json(lab, tmp_path):
    path = plan(tmp_path, lab.coordinator, units="a")
    # Two entries on one board, one after the other; the first long enough to stop.
    path.write_text(
        path.read_text()
        .replace("profiles: [seed]", "profiles: ['seed,ev-full,int,double', seed]")
        .replace("options: [--quick]\n", "")
    )
    lab_dir = tmp_path / "lab"

    def released() -> bool:  # the entry's own "released place" line
        logs = lab_dir.glob("logs/**/*.log")
        return any("released place am62x-a" in p.read_text(errors="replace") for p in logs)

    with running("lab", "run", str(path), "--out", str(lab_dir)) as job:
        measuring = lambda: any((tmp_path / "board-a").glob("runs/*/results/samples.jsonl"))  # noqa: E731
        wait_while_running(job, measuring, "the first entry never started measuring", 300, 0.5)
        job.send_signal(signal.SIGTERM)
        wait_while_running(job, released, "the place was never released", 300, 0.05)
        _, err = job.communicate(timeout=300)
    # Freed by stopping the entry's run (interrupted, partial, below), not by waiting for it:
    # how soon is measured by benchmarks/place_release.py.
    assert lab.acquired_by("am62x-a") is None
    assert job.returncode == 130, err
    index = json.loads((lab_dir / "lab.json").read_text())
    assert index["finished"] and index["interrupted"] is True
    first, second = index["entries"]
    assert (first["status"], first["exit_code"]) == ("interrupted", 130)
    run_dir = lab_dir / first["run_dir"]
    assert not (run_dir / results.COMPLETE).exists()
    assert json.loads((run_dir / results.SUMMARY).read_text())["partial"] is True
    assert results.verify_checksums(run_dir) == []
    assert (second["status"], second["run_dir"], second["attempts"]) == ("not run", None, 0)
    page = (lab_dir / "lab.html").read_text()
    assert '<tr class="interrupted">' in page and '<tr class="not-run">' in page
