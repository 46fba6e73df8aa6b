"""The report's exports (report/exports/, one module each) against docs/reports.md.

A real render of the committed sample run writes the files; the table of
docs/reports.md must name exactly those (plots aside), so an export registered
without its row, or a row for a file nothing writes, fails.
"""

from __future__ import annotations

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


def test_the_docs_table_names_every_file_a_render_writes(tmp_path):
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


def test_an_export_registered_twice_is_a_bug():
    with pytest.raises(ValueError, match=r"'junit\.xml' is registered twice"):
        exports.export("junit.xml")(exports.junit_file)
    assert [entry.file for entry in exports.registered()].count("junit.xml") == 1


def _exports_of_copy(tmp_path, added: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The exports a copy of the host package lists, with the modules `added` (name ->
    text) in its report/exports/."""
    copy = tmp_path / "evbench"
    shutil.copytree(HOST, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in added.items():
        (copy / "report" / "exports" / name).write_text(text)
    code = (
        "from evbench.report import exports\nprint(' '.join(e.file for e in exports.registered()))"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


def test_an_export_module_is_collected_without_a_list_to_extend(tmp_path):
    # A helper module (its name starts with `_`) beside it declares nothing and is left.
    added = (
        "from evbench.report.exports.registry import export\n\n"
        "@export('added-by-test.txt')\n"
        "def make(context, comparison):\n    return b'run ' + context.run_id.encode()\n"
    )
    done = _exports_of_copy(tmp_path, {"added_by_test.py": added, "_helper.py": "HELPER = 1\n"})
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split()
    assert sorted(listed) == sorted([*(e.file for e in exports.registered()), "added-by-test.txt"])


def test_an_export_module_that_declares_nothing_is_refused(tmp_path):
    done = _exports_of_copy(tmp_path, {"added_by_test.py": "HELPER = 1\n"})
    assert done.returncode == 1
    assert "report.exports.added_by_test declares no export" in done.stderr
