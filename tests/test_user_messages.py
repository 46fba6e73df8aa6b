"""Messages that say what to do: the nearest flag, an option's range, counts and facts in
English, a progress line on a real pty; and, through the real commands, what a person meets
following the docs with paths that are not quite runs."""

import logging
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from evbench.boards.serial import board as serial_board
from evbench.report.answer import answer_lines
from evbench.report.units import counted
from evbench_core.comparison import compare
from evbench_core.results import SampleSet

BIN = Path(sys.executable).parent
RUNS = ROOT / "tests" / "data" / "runs"


def _evbench(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    argv = [str(BIN / "evbench"), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=cwd)


def test_a_mistyped_flag_gets_the_nearest_one_and_an_impossible_rate_its_range(tmp_path):
    done = _evbench("run", "--quik", "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "evbench: error: unrecognized arguments: --quik",
        "evbench: hint: did you mean --quick for --quik? (see 'evbench run --help')",
    ]
    assert not (tmp_path / "run").exists()
    # A command's command: its own help page is the one named.
    done = _evbench("history", "add", str(tmp_path / "store"), "--quik")
    assert done.returncode == 2
    assert done.stderr.splitlines()[1].endswith("(see 'evbench history add --help')")
    done = _evbench("run", "--rate", "0", "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    error, hint = done.stderr.splitlines()
    assert error.startswith("evbench: error: --rate: ") and "at least 0.01 and at most" in error
    assert hint == (
        "evbench: hint: give --rate 0.01 to 10000, or leave it out for the default (see --help)"
    )


COUNTS = [
    (1, "processes", "1 process"), (8, "processes", "8 processes"),
    (1, "phase pairs", "1 phase pair"), (1, "phases/codec", "1 phase/codec"),
    (1, "phases per codec", "1 phase per codec"), (0, "values", "0 values"),
]  # fmt: skip


@pytest.mark.parametrize(("n", "what", "said"), COUNTS)
def test_a_count_of_one_is_singular(n, what, said):
    assert counted(n, what) == said


def _sizes(profile: str, json_bytes: float, protobuf_bytes: float) -> list[SampleSet]:
    sizes = {"json": json_bytes, "protobuf": protobuf_bytes}
    return [
        SampleSet("codec", profile, codec, "size", "bytes", {"payloads": 3}, [size] * 3, worker)
        for codec, size in sizes.items()
        for worker in range(2)
    ]


def test_equal_sizes_are_said_equal_and_different_ones_by_how_much():
    lines = answer_lines(compare(_sizes("a", 100, 100) + _sizes("b", 100, 80), "json", "protobuf"))
    assert lines == [
        "a: Facts, exact: Protobuf's Size equal (100.0 B for both).",
        # (80 - 100) / 100 = -20 %, worked by hand
        "b: Facts, exact: Protobuf's Size smaller by 20.0 % (80.0 B against 100.0 B).",
    ]


def _screen(raw: str) -> str:
    """What a terminal shows on the last line after carriage returns overwrite it."""
    line = ""
    for segment in raw.replace("\r\n", "\n").split("\n")[-1].split("\r"):
        line = segment + line[len(segment) :]  # written from column 0 over what was there
    return line.rstrip()


def _drain(controller: int) -> str:
    """All the terminal has received (a pty hands it over one write at a time)."""
    chunks = []
    while select.select([controller], [], [], 0.5)[0]:
        chunks.append(os.read(controller, 4096))
    return b"".join(chunks).decode()


def test_a_shorter_progress_line_leaves_no_residue_of_the_longer_one(monkeypatch, caplog):
    caplog.set_level(logging.WARNING)  # not --quiet (an earlier test may have set it)
    controller, terminal = pty.openpty()
    with os.fdopen(terminal, "w", closefd=True) as stream:
        monkeypatch.setattr(sys, "stderr", stream)
        show = serial_board._show_progress("sending", "agent.tar")
        show(10, 100, 10.0)  # "... about 10 s left"
        time.sleep(0.25)  # lines on a terminal come at most every 0.2 s
        show(20, 100, 9.0)  # "... about 9 s left": one character shorter
        stream.flush()
        raw = _drain(controller)
    os.close(controller)
    assert _screen(raw) == "evbench: sending agent.tar: 20/100 bytes, about 9 s left"


def _listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def test_report_refuses_a_folder_that_is_not_a_run_and_writes_nothing(tmp_path):
    folder = tmp_path / "notes"  # someone else's data that happens to hold a samples.jsonl
    folder.mkdir()
    (folder / "samples.jsonl").write_text("")
    (folder / "readme.txt").write_text("lab notes\n")
    before = _listing(folder)
    done = _evbench("report", str(folder))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{folder} is not a run directory" in done.stderr
    assert "Traceback" not in done.stderr
    assert _listing(folder) == before  # not one file written


def test_history_add_over_results_skips_what_is_not_a_run_and_refuses_files_alone(tmp_path):
    # results/ as docs/reports.md leaves it: two runs, criteria, JUnit, the store, screenshots
    results = tmp_path / "results"
    shutil.copytree(RUNS / "core-v1", results / "monday")
    shutil.copytree(RUNS / "codec-link-v1", results / "tuesday")
    (results / "criteria.json").write_text('{"default_percent": 25}')
    (results / "junit.xml").write_text("<testsuites/>")
    (results / "shots").mkdir()
    (results / "shots" / "report-1400.png").write_bytes(b"\x89PNG")
    store = results / "lab.sqlite"
    first = _evbench("history", "add", "--history", str(store), str(results / "monday"))
    assert first.returncode == 0, first.stderr
    entries = sorted(str(p) for p in results.iterdir())  # results/*, the store among them
    done = _evbench("history", "add", "--history", str(store), *entries)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "already in the store" in done.stdout and "added: " in done.stdout
    for name, why in [
        ("criteria.json", "a file"), ("junit.xml", "a file"), ("lab.sqlite", "a file"),
        ("shots", "no manifest.json"),
    ]:  # fmt: skip
        assert f"skipped {results / name}: not a run directory ({why})" in done.stderr
    listed = _evbench("history", "list", "--history", str(store))
    assert listed.returncode == 0, listed.stderr
    assert "2 runs in" in listed.stderr
    done = _evbench("history", "add", "--history", str(store), str(results / "criteria.json"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "none of the paths given is a run directory" in done.stderr


def test_the_arm_example_without_its_environment_says_how_to_make_it(tmp_path):
    # The docs' --arm example where only `make run` ran (.venv, no .venv-pb425).
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    done = _evbench(
        "run", "--board", "local", "--arm", "pb425=.venv-pb425", "--arm", "newest=.venv",
        "--quick", "--profile", "seed", "--no-history", "--out", str(tmp_path / "arms"),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no interpreter or virtual environment '.venv-pb425'" in done.stderr
    assert "make setup" in done.stderr and "Traceback" not in done.stderr
