"""Where a command writes what the user named (commands/_outputs.py): a path that cannot be
written is one error line naming the option (exit 2), and compare never writes into a run it
reads. Each case was an internal error, or a damaged run, found by an independent check."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from report_helpers import evbench

from evbench_core import results

RUN = ROOT / "tests" / "data" / "runs" / "core-v1"


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """Two copies of a committed run, and a plain file where a folder would go."""
    first, second = (shutil.copytree(RUN, tmp_path / name) for name in ("first", "second"))
    (tmp_path / "afile").write_text("a file, not a folder\n")
    return first, second


def _one_line_error(done, says: str) -> None:
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("evbench: error:")]
    assert len(errors) == 1 and errors[0].startswith(f"evbench: error: {says}"), done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_compare_never_writes_into_a_run_it_reads(runs):
    first, second = runs
    target = second / "summary.json"
    before = target.read_bytes()
    for option in ("--csv", "--junit"):
        done = evbench("compare", "--no-history", option, str(target), str(first), str(second))
        _one_line_error(done, f"{option} {target} is inside the run {second}")
        assert target.read_bytes() == before
    assert results.verify_checksums(second) == []


LAVA_JOB = ["lava", "job", "--device-type", "qemu", "--repository", "https://lab/evbench.git"]
LAVA_JOB += ["--kernel", "https://lab/Image", "--rootfs", "https://lab/rootfs.ext4"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["compare", "--no-history", "--csv", "TMP/afile/rows.csv", "FIRST", "SECOND"],
         "cannot write --csv TMP/afile/rows.csv: Not a directory"),
        (["compare", "--no-history", "--junit", "TMP/nowhere/j.xml", "FIRST", "SECOND"],
         "cannot write --junit TMP/nowhere/j.xml: No such file or directory"),
        (["history", "export", "--history", "TMP/h.sqlite", "--csv", "TMP/afile/x.csv"],
         "cannot write --csv TMP/afile/x.csv: Not a directory"),
        (["history", "report", "--history", "TMP/h.sqlite", "--out", "TMP/afile"],
         "cannot create --out TMP/afile: File exists"),
        (["diag", "--board", "local", "--out", "TMP/afile/diag"],
         "cannot create --out TMP/afile/diag: Not a directory"),
        (["lab", "run", "TMP/LAB.yaml", "--out", "TMP/afile/lab"],
         "cannot create --out TMP/afile/lab: Not a directory"),
        ([*LAVA_JOB, "--out", "TMP/afile/job.yaml"],
         "cannot create the folder of --out TMP/afile: File exists"),
    ],
    ids=["compare csv under a file", "compare junit in no folder", "history export",
         "history report", "diag", "lab run", "lava job"],
)  # fmt: skip
def test_an_output_that_cannot_be_written_is_one_line_naming_its_option(runs, argv, says):
    first, second = runs
    tmp = first.parent
    given = {"FIRST": str(first), "SECOND": str(second)}
    argv = [given.get(a, a.replace("TMP", str(tmp))) for a in argv]
    if argv[0] == "history":  # a store with a run in it, so the output has something to say
        added = evbench("history", "add", "--history", str(tmp / "h.sqlite"), str(first))
        assert added.returncode == 0, added.stderr
    (tmp / "LAB.yaml").write_text("boards: [local]\nmatrix: {}\n")
    _one_line_error(evbench(*argv), says.replace("TMP", str(tmp)))


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-m", "evbench", "report", "--terminal", "RUN"],
        [sys.executable, "-m", "evbench_agent", "info"],
    ],
    ids=["evbench", "evbench-agent"],
)
def test_output_whose_reader_went_away_ends_quietly_with_141(runs, argv):
    """`| head` that has read its fill: the pipe's read end is closed before the program
    writes, so its first write fails (EPIPE); 141 is 128 + SIGPIPE, as a shell shows it."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    argv = [str(runs[0]) if word == "RUN" else word for word in argv]
    with os.fdopen(write_end, "wb") as stdout:
        done = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 141, done.stderr
    assert "error" not in done.stderr and "Exception" not in done.stderr, done.stderr
