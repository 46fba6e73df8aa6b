"""Bad input: a partial run's first line is the manifest's reason made safe to print or what
the reader found instead; newer formats are refused; a run of the first agent (core-v1)
renders complete. Damaged fresh runs: test_report_compare.py; kills: test_run_local.py."""

import json
import logging
import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from report_helpers import evbench

from evbench.commands import run as run_command
from evbench.report import plots
from evbench.report.context import load_context
from evbench.report.headline import partial_headline
from evbench_core import results

OLD_RUN = ROOT / "tests" / "data" / "runs" / "core-v1"


def copy_run(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report.*", "plots", "*.csv"))
    return copy


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        # escapes and line breaks become spaces, runs of spaces one: nothing reaches a terminal
        ({"reason": "the sampler died\n\x1b[2J\x1b]0;owned\x07 (signal 9)\r"},
         "the sampler died [2J ]0;owned (signal 9)"),
        ({"reason": "x" * 10_000}, "x" * 497 + "..."),  # cut to 500 characters
        ({}, None),
        *(({"reason": odd}, None) for odd in (None, 9, ["died"], {"why": "x"}, "", " \n ")),
    ],
)  # fmt: skip
def test_a_manifests_reason_is_one_printable_line_or_none(manifest, expected):
    assert results.partial_reason(manifest) == expected


@pytest.mark.parametrize(
    ("manifest", "missing", "problems", "said"),
    [
        ({"status": "interrupted"}, [], [], "the run was interrupted"),
        ({"status": "running"}, [], [],
         "the manifest's status is 'running' and it gives no reason"),
        ({"status": "complete"}, ["complete"], [], "missing complete"),
        ({}, [], ["checksum: samples.jsonl: checksum mismatch"],
         "checksum: samples.jsonl: checksum mismatch"),
        ({}, [], [], "the run did not finish"),
        ({"status": "partial", "reason": "a codec worker was killed (signal 9, SIGKILL)"}, [], [],
         "a codec worker was killed (signal 9, SIGKILL)"),
    ],
)  # fmt: skip
def test_without_a_reason_the_first_line_says_what_was_found(manifest, missing, problems, said):
    assert partial_headline(manifest, missing, problems) == "PARTIAL: " + said


def test_newer_formats_non_runs_and_writes_outside_are_refused_an_older_run_renders(tmp_path):
    run = copy_run(OLD_RUN, tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps(manifest | {"version": 99}))
    done = evbench("report", str(run))
    assert done.returncode == 2
    assert "results format version 99" in done.stderr and "update evbench" in done.stderr
    assert not (run / "report.md").exists()
    (empty := tmp_path / "not-a-run").mkdir()
    done = evbench("report", str(empty))
    assert done.returncode == 2 and "holds no evbench results" in done.stderr
    run = tmp_path / "old"
    shutil.copytree(OLD_RUN, run)
    done = evbench("report", str(run))
    assert done.returncode == 0, done.stderr
    context = load_context(run)
    assert not context.partial
    assert [p.name for p in plots.plans(context)] == ["codec-times", "codec-sizes"]
    markdown = (run / "report.md").read_text()
    assert "| Sensors | no telemetry in this run |" in markdown
    # Two worker processes, two replicates. JSON's cell: the median of their medians
    # (samples.jsonl: 58.34 and 56.05 µs -> 57.2 µs). Protobuf's: JSON's times exp(HL of
    # the processes' log-ratios), each the median of 5 per-round log(protobuf / json),
    # -3.97402 and -3.87147, whose HL centre is their mean, -3.92275: 57.19 µs x 0.019787
    # = 1.13 µs; 1 / 0.019787 = 50.5, "51x faster". No interval across two, no verdict
    # reachable (the best exact signed-rank p with 2 pairs is 2 / 2**2 = 0.5).
    assert "| seed | Serialization | 57.2 µs | 1.13 µs | 51x faster |" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| seed | Serialization"))
    assert "| n too small |" in row and "| 2 processes |" in row
    # the report writes only inside the run, and a refused write is one line
    # The run's plots/ a link to a folder of the user's: refused before anything is written.
    run = copy_run(OLD_RUN, tmp_path / "inside")
    pictures = tmp_path / "inside" / "pictures"
    pictures.mkdir()
    (pictures / "holiday.png").write_bytes(b"not ours")
    (run / "plots").symlink_to(pictures, target_is_directory=True)
    done = evbench("report", str(run))
    assert done.returncode == 2, done.stderr
    assert f"{run / 'plots'} is not a directory of the run" in done.stderr
    assert [p.name for p in pictures.iterdir()] == ["holiday.png"]
    assert (pictures / "holiday.png").read_bytes() == b"not ours"
    assert not (run / "report.md").exists()
    # A file the report cannot write (a directory holds its name): the user's error, exit 2.
    (run / "plots").unlink()
    (run / "report.md").mkdir()
    done = evbench("report", str(run))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"evbench: error: cannot write the results in {run}: ")
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_a_failing_report_only_warns_after_a_run_and_a_terminal_one_says_partial(tmp_path, caplog):
    run = copy_run(OLD_RUN, tmp_path)
    (run / "manifest.json").write_text('{"format": "evbench-results", "version": 99}')
    with caplog.at_level(logging.WARNING, logger="evbench"):
        run_command._write_report(run)  # must not raise: the run is kept
    # a warning record (the CLI prints it as "evbench: warning: ..."; --quiet hides it)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("no report" in w and f"evbench report {run}" in w for w in warnings), warnings
    # A changed figure: the tables print and the checksum mismatch is said, PARTIAL, exit 4
    # (docs/reports.md), by `report --terminal` as by `report`.
    run = copy_run(OLD_RUN, tmp_path / "terminal")
    summary = json.loads((run / "summary.json").read_text())
    summary["records"][0]["median"] *= 10
    (run / "summary.json").write_text(json.dumps(summary))
    for argv in (["report", "--terminal", str(run)], ["report", str(run)]):
        done = evbench(*argv)
        assert done.returncode == 4, done.stderr
        assert "PARTIAL: checksum: summary.json: checksum mismatch" in done.stderr, done.stderr
