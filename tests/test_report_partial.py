"""Bad input: partial runs render what exists, marked; newer formats are refused."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pytest
from report_helpers import evbench, local_run

from evbench.commands import run as run_command
from evbench.report import criteria
from evbench_core.errors import UserError


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("partial") / "run"
    local_run(out, "--suite", "codec")
    return out


def copy_run(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report.*", "plots", "*.csv"))
    return copy


def test_run_without_summary_and_complete_marker_renders_marked_partial(finished_run, tmp_path):
    run = copy_run(finished_run, tmp_path)
    (run / "complete").unlink()
    (run / "summary.json").unlink()
    done = evbench("report", str(run))
    assert done.returncode == 4, done.stderr
    assert "PARTIAL run rendered (summary.json, complete" in done.stderr
    # The manifest (copied from a complete run) gives no reason: the first line says what
    # the reader found missing; the title says PARTIAL too.
    assert done.stderr.splitlines()[0] == "PARTIAL: missing summary.json, complete"
    markdown = (run / "report.md").read_text()
    first, _blank, title = markdown.splitlines()[:3]
    assert first == "**PARTIAL: missing summary.json, complete**"
    assert title.startswith("# evbench run ") and "(PARTIAL)" in title
    assert "Missing files: summary.json, complete." in markdown
    # The summary is rebuilt from the raw samples: the figures are all there.
    assert re.search(r"\| seed \| Deserialization( \*)? \|", markdown)
    assert (run / "plots" / "codec-times.png").exists()
    assert 'class="partial"' in (run / "report.html").read_text()


def test_run_with_only_samples_still_renders(finished_run, tmp_path):
    run = copy_run(finished_run, tmp_path)
    for name in ("manifest.json", "summary.json", "SHA256SUMS", "complete"):
        (run / name).unlink()
    done = evbench("report", str(run))
    assert done.returncode == 4, done.stderr
    markdown = (run / "report.md").read_text()
    assert "Missing files: manifest.json, summary.json, SHA256SUMS, complete." in markdown
    assert "| codec | seed | protobuf | Serialization | 24 |" in markdown  # 8 processes x 3


def test_a_changed_file_is_reported(finished_run, tmp_path):
    run = copy_run(finished_run, tmp_path)
    samples = run / "samples.jsonl"
    samples.write_text(samples.read_text().replace('"values": [', '"values": [1e-3, ', 1))
    done = evbench("report", str(run))
    assert done.returncode == 4
    assert "checksum: samples.jsonl: checksum mismatch." in (run / "report.md").read_text()


def test_an_unreadable_sample_line_is_skipped_and_named(finished_run, tmp_path):
    run = copy_run(finished_run, tmp_path)
    (run / "summary.json").unlink()
    with open(run / "samples.jsonl", "a") as stream:
        stream.write("not json\n")
    done = evbench("report", str(run))
    assert done.returncode == 4, done.stderr
    markdown = (run / "report.md").read_text()
    lines = (run / "samples.jsonl").read_text().count("\n")
    assert f"samples.jsonl line {lines} cannot be read." in markdown
    # A row measured on a busy machine carries the contention mark, " *".
    assert re.search(r"\| seed \| Serialization( \*)? \|", markdown)


def test_newer_format_version_is_refused_naming_it(finished_run, tmp_path):
    run = copy_run(finished_run, tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["version"] = 99
    (run / "manifest.json").write_text(json.dumps(manifest))
    done = evbench("report", str(run))
    assert done.returncode == 2
    assert "results format version 99" in done.stderr and "update evbench" in done.stderr
    assert not (run / "report.md").exists()


def test_not_a_run_directory(tmp_path):
    done = evbench("report", str(tmp_path))
    assert done.returncode == 2
    assert "holds no evbench results" in done.stderr


def test_a_failing_report_only_warns_after_a_run(finished_run, tmp_path, caplog):
    run = copy_run(finished_run, tmp_path)
    (run / "manifest.json").write_text('{"format": "evbench-results", "version": 99}')
    with caplog.at_level(logging.WARNING, logger="evbench"):
        run_command._write_report(run)  # must not raise: the run is kept
    # A warning record (the CLI's handler prints it as "evbench: warning: ..."; --quiet hides it).
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("no report" in w and f"evbench report {run}" in w for w in warnings), warnings


def test_criteria_most_specific_key_wins(tmp_path):
    path = tmp_path / "criteria.json"
    metrics = {"decode": 3, "seed/json/decode": 2, "codec/seed/json/encode": 9}
    path.write_text(json.dumps({"default_percent": 7, "metrics": metrics}))
    limits = criteria.load(path)
    assert limits.threshold("codec", "seed", "json", "decode") == 2
    assert limits.threshold("codec", "seed", "protobuf", "decode") == 3
    assert limits.threshold("codec", "seed", "json", "encode") == 9
    assert limits.threshold("codec", "seed", "json", "size") == 7
    assert criteria.Criteria().threshold("codec", "seed", "json", "size") == 5
    path.write_text(json.dumps({"metrics": {"decode": "fast"}}))
    with pytest.raises(UserError, match="must be a number of percent"):
        criteria.load(path)
