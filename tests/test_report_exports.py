"""The report's exports (report/exports/, one module each): a real render of the committed
run writes exactly the files docs/reports.md's table names (plots aside)."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from evbench.report import exports
from evbench.report.writer import write_report

CORE_V1 = ROOT / "tests" / "data" / "runs" / "core-v1"
REPORTS = ROOT / "docs" / "reports.md"
HOST = ROOT / "host_tools" / "src" / "evbench"


def table_files() -> list[str]:
    """The backticked file names in the first column of reports.md's `| file |` table."""
    text = REPORTS.read_text()
    table = text.split("| file | content |", 1)[1].split("\n\n", 1)[0]
    return [re.findall(r"`([^`]+)`", line.split("|")[1])[0] for line in table.splitlines()[2:]]


def test_the_docs_table_names_every_file_a_render_writes_each_registered_once(tmp_path):
    files = table_files()  # the reader finds the rows, as read by hand
    assert files[:2] == ["report.md", "report.html"] and "junit.xml" in files
    run = tmp_path / "core-v1"
    shutil.copytree(CORE_V1, run)
    written = write_report(run)
    names = sorted(path.name for path in written.files if path.parent == run)
    # The two renderings and the exports a CI dashboard reads are among them.
    assert {"report.md", "report.html", "summary.csv", "junit.xml"} <= set(names)
    assert sorted(files) == names
    assert {entry.file for entry in exports.registered()} <= set(names)
    # an export registered twice is a bug
    with pytest.raises(ValueError, match=r"'junit\.xml' is registered twice"):
        exports.export("junit.xml")(exports.junit_file)
    assert [entry.file for entry in exports.registered()].count("junit.xml") == 1


def test_export_modules_are_collected_and_one_declaring_nothing_is_refused(tmp_path):
    # In a copy of the host package: no list to extend, a module is found by its file.
    shutil.copytree(HOST, tmp_path / "evbench", ignore=shutil.ignore_patterns("__pycache__"))
    folder = tmp_path / "evbench" / "report" / "exports"
    (folder / "added_by_test.py").write_text(
        "from evbench.report.exports.registry import export\n\n"
        "@export('added-by-test.txt')\n"
        "def make(context, comparison):\n    return b'run ' + context.run_id.encode()\n"
    )
    # A helper module (its name starts with `_`) beside it declares nothing and is left.
    (folder / "_helper.py").write_text("HELPER = 1\n")
    code = (
        "from evbench.report import exports\nprint(' '.join(e.file for e in exports.registered()))"
    )
    argv, env = [sys.executable, "-c", code], {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split()
    assert sorted(listed) == sorted([*(e.file for e in exports.registered()), "added-by-test.txt"])
    (folder / "declares_nothing.py").write_text("HELPER = 1\n")
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1
    assert "report.exports.declares_nothing declares no export" in done.stderr
