"""The results format: atomic files, checksums, versions, partial runs."""

from __future__ import annotations

import json
import os
import stat

import pytest

from evbench_agent import results
from evbench_agent.errors import FormatError, UserError


def _sample(metric: str = "encode", values: tuple[float, ...] = (1.0, 2.0, 3.0), worker: int = 0):
    return results.SampleSet(
        "codec", "seed", "json", metric, "s", {"loops": 8}, list(values), worker
    )


def test_a_finished_run_is_complete_summarized_and_checksummed(tmp_path):
    writer = results.RunWriter(tmp_path / "run", "r1")
    writer.write_manifest({"spec": {}})
    writer.add([_sample(worker=0), _sample(values=(4.0, 5.0), worker=1)])
    records = writer.finish(complete=True)
    run = results.load_run(tmp_path / "run")
    assert run.complete
    assert run.records == records
    (record,) = records
    assert set(record) == set(results.RECORD_FIELDS)
    assert record["n"] == 5 and record["median"] == 3.0  # workers pooled
    assert record["p90"] is None  # n < 100
    assert results.verify_checksums(tmp_path / "run") == []
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["format"] == results.FORMAT and summary["partial"] is False


def test_files_are_readable_like_any_other_new_file(tmp_path):
    writer = results.RunWriter(tmp_path / "run", "r1")
    writer.write_manifest({})
    mode = stat.S_IMODE((tmp_path / "run" / "manifest.json").stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


def test_a_partial_run_keeps_its_samples_and_has_no_complete_marker(tmp_path):
    writer = results.RunWriter(tmp_path / "run", "r2")
    writer.write_manifest({})
    writer.add([_sample()])
    writer.finish(complete=False)
    run = results.load_run(tmp_path / "run")
    assert not run.complete
    assert not (tmp_path / "run" / "complete").exists()
    assert run.records[0]["n"] == 3
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["partial"] is True


def test_a_torn_last_line_is_skipped_and_the_summary_rebuilt(tmp_path):
    writer = results.RunWriter(tmp_path / "run", "r3")
    writer.write_manifest({})
    writer.add([_sample()])
    with open(tmp_path / "run" / "samples.jsonl", "a") as stream:
        stream.write('{"suite": "codec", "val')  # power cut mid-line
    run = results.load_run(tmp_path / "run")  # no summary.json: rebuilt from samples
    assert [r["n"] for r in run.records] == [3]
    assert not run.complete


def test_checksum_verification_finds_changed_and_missing_files(tmp_path):
    writer = results.RunWriter(tmp_path / "run", "r4")
    writer.write_manifest({})
    writer.add([_sample()])
    writer.finish(complete=True)
    (tmp_path / "run" / "samples.jsonl").write_text("tampered\n")
    (tmp_path / "run" / "manifest.json").unlink()
    problems = results.verify_checksums(tmp_path / "run")
    assert "samples.jsonl: checksum mismatch" in problems
    assert "manifest.json: missing" in problems


def test_an_unknown_version_is_refused_naming_it(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"format": results.FORMAT, "version": 99}))
    with pytest.raises(FormatError, match="version 99"):
        results.load_run(run)
    (run / "manifest.json").write_text(json.dumps({"format": "other", "version": 1}))
    with pytest.raises(FormatError, match="not an evbench results file"):
        results.load_run(run)


def test_a_non_empty_or_unwritable_output_directory_fails_before_the_run(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old").write_text("x")
    with pytest.raises(UserError, match="not empty"):
        results.RunWriter(tmp_path / "full", "r5")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="cannot create"):
        results.RunWriter(tmp_path / "file" / "run", "r6")


def test_units_outside_the_closed_list_are_refused():
    bad = results.SampleSet("codec", "seed", "json", "encode", "us", {}, [1.0])
    with pytest.raises(ValueError, match="unit 'us'"):
        results.summarize([bad])


def test_write_atomic_leaves_no_temporary_file_behind(tmp_path):
    results.write_atomic(tmp_path / "a.json", b"{}")
    results.write_atomic(tmp_path / "a.json", b"[]")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]
    assert (tmp_path / "a.json").read_bytes() == b"[]"
