"""`evbench lab run`: a two-place matrix on a real labgrid coordinator and exporter.

Both places export a NetworkService for the loopback sshd (tests/sshd.py); each
place's runs use a board work directory of their own. The two places run in parallel;
each entry is an ordinary run directory that verifies like any run, lab.json says what
ran where, and the lab report opens in headless Chromium without errors.
Timings on this machine (load 15-25 on 2 cores) are seconds per labgrid-client call.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import labgrid_rig
import pytest
from chromium import open_page
from test_labgrid_board import wait_while_running

from evbench_core import results

pytestmark = [pytest.mark.integration, pytest.mark.lab, pytest.mark.slow]

BOARD_PYTHON = "/usr/bin/python3"
EVBENCH = str(Path(sys.executable).parent / "evbench")
LAB_TIMEOUT = 1200


@pytest.fixture(scope="module")
def lab(sshd, tmp_path_factory):
    lab = labgrid_rig.two_place_lab(sshd, tmp_path_factory.mktemp("lab"))
    try:
        yield lab
    finally:
        lab.stop()


@pytest.fixture(autouse=True)
def client(ssh_home, monkeypatch):
    """evbench drives .venv-labgrid's labgrid-client (every test here)."""
    monkeypatch.setenv("EVBENCH_LABGRID_CLIENT", str(labgrid_rig.CLIENT))


def lab_run(plan: Path, out: Path) -> subprocess.CompletedProcess:
    argv = [EVBENCH, "lab", "run", str(plan), "--out", str(out)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=LAB_TIMEOUT)


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


def test_a_two_place_matrix_runs_in_parallel_and_reports(lab, tmp_path, monkeypatch):
    monkeypatch.setenv("LG_USERNAME", "nightly")
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
        run_dir = lab_dir / entry["run_dir"]
        # An ordinary run: complete, every checksum matches, on its own place.
        assert (run_dir / results.COMPLETE).exists()
        assert results.verify_checksums(run_dir) == []
        manifest = json.loads((run_dir / results.MANIFEST).read_text())
        assert manifest["board_identity"]["id"] == f"place:{name}"
        assert manifest["lab"]["place"] == name
        assert manifest["lab"]["tags"]["unit"] == name[-1]
        assert entry["comparison"]["baseline"] is None  # the first night of these boards
        spans[name] = (manifest["start_time"], manifest["end_time"])
    # In parallel: each board's run began before the other's ended.
    (a_start, a_end), (b_start, b_end) = spans["am62x-a"], spans["am62x-b"]
    assert a_start < b_end and b_start < a_end, spans
    assert lab.acquired_by("am62x-a") is None and lab.acquired_by("am62x-b") is None
    argv = [EVBENCH, "lab", "status", str(lab_dir)]
    status = subprocess.run(argv, capture_output=True, text=True, timeout=120)
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


def test_sigterm_stops_the_lab_frees_the_place_and_finishes_lab_json(lab, tmp_path, monkeypatch):
    monkeypatch.setenv("LG_USERNAME", "nightly")
    path = plan(tmp_path, lab.coordinator, units="a")
    # Two entries on one board, one after the other; the first long enough to stop.
    path.write_text(
        path.read_text()
        .replace("profiles: [seed]", "profiles: ['seed,ev-full,int,double', seed]")
        .replace("options: [--quick]\n", "")
    )
    lab_dir = tmp_path / "lab"

    def released() -> bool:
        # The entry's own "released place" line, written once labgrid-client release
        # returned: an upper bound on the freeing, where a labgrid-client check would add
        # its own seconds on a loaded machine (test_labgrid_board times it so too).
        logs = lab_dir.glob("logs/**/*.log")
        return any("released place am62x-a" in p.read_text(errors="replace") for p in logs)

    job = subprocess.Popen(
        [EVBENCH, "lab", "run", str(path), "--out", str(lab_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        measuring = lambda: any((tmp_path / "board-a").glob("runs/*/results/samples.jsonl"))  # noqa: E731
        wait_while_running(job, measuring, "the first entry never started measuring", 300, 0.5)
        job.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        wait_while_running(job, released, "the place was never released", 300, 0.05)
        freed_after = time.monotonic() - signalled
        _, err = job.communicate(timeout=300)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert freed_after < 10, f"the place was released {freed_after:.1f} s after the signal"
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
