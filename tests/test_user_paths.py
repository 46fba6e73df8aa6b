"""What a person meets following the docs with paths that are not quite runs (issue 44,
item 15): `evbench report` on a folder that is not a run, `history add results/*` over
what the documented workflow leaves in results/, and the `--arm` example without its
environment. The real commands, run as a person runs them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

BIN = Path(sys.executable).parent
RUNS = ROOT / "tests" / "data" / "runs"


def evbench(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    argv = [str(BIN / "evbench"), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=cwd)


def _listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def test_report_refuses_a_folder_that_is_not_a_run_and_writes_nothing(tmp_path):
    # A folder of someone else's data that happens to hold a samples.jsonl.
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "samples.jsonl").write_text("")
    (folder / "readme.txt").write_text("lab notes\n")
    before = _listing(folder)
    done = evbench("report", str(folder))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{folder} is not a run directory" in done.stderr
    assert "Traceback" not in done.stderr
    assert _listing(folder) == before  # not one file written


def test_history_add_over_results_skips_what_is_not_a_run_and_refuses_files_alone(tmp_path):
    # results/ as docs/reports.md leaves it: two runs, a criteria file, a JUnit file,
    # the store, a screenshots folder.
    results = tmp_path / "results"
    shutil.copytree(RUNS / "core-v1", results / "monday")
    shutil.copytree(RUNS / "codec-link-v1", results / "tuesday")
    (results / "criteria.json").write_text('{"default_percent": 25}')
    (results / "junit.xml").write_text("<testsuites/>")
    (results / "shots").mkdir()
    (results / "shots" / "report-1400.png").write_bytes(b"\x89PNG")
    store = results / "lab.sqlite"
    first = evbench("history", "add", "--history", str(store), str(results / "monday"))
    assert first.returncode == 0, first.stderr
    entries = sorted(str(p) for p in results.iterdir())  # results/*, the store among them
    done = evbench("history", "add", "--history", str(store), *entries)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "already in the store" in done.stdout and "added: " in done.stdout
    for name, why in [
        ("criteria.json", "a file"), ("junit.xml", "a file"), ("lab.sqlite", "a file"),
        ("shots", "no manifest.json"),
    ]:  # fmt: skip
        assert f"skipped {results / name}: not a run directory ({why})" in done.stderr
    listed = evbench("history", "list", "--history", str(store))
    assert listed.returncode == 0, listed.stderr
    assert "2 runs in" in listed.stderr
    # nothing but files: refused
    done = evbench("history", "add", "--history", str(store), str(results / "criteria.json"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "none of the paths given is a run directory" in done.stderr


def test_the_arm_example_without_its_environment_says_how_to_make_it(tmp_path):
    # The docs' --arm example, in a checkout where only `make run` ran (.venv, no
    # .venv-pb425): one line naming the missing environment and the make target.
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    done = evbench(
        "run", "--board", "local", "--arm", "pb425=.venv-pb425", "--arm", "newest=.venv",
        "--quick", "--profile", "seed", "--no-history", "--out", str(tmp_path / "arms"),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no interpreter or virtual environment '.venv-pb425'" in done.stderr
    assert "make setup" in done.stderr and "Traceback" not in done.stderr
