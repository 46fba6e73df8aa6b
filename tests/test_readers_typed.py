"""Typed readers beyond the report and history (issue 30's leftover): lab.json, LAB.yaml
and the history's change points. A field of the wrong type is named and ends in the
project's own error (exit 2), never in a traceback (exit 1) as each case below once did.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from evbench.history import run_differences
from evbench.lab import index, nightly_compare, plan
from evbench_core.errors import FormatError, UserError


def _evbench(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evbench", *argv], capture_output=True, text=True, timeout=120
    )


def _lab_index(entries: list) -> dict:
    """A lab.json as `LabIndex` writes it, with these entries."""
    return {"format": 1, "plan": "/l/LAB.yaml", "started": "2026-12-01T22:00:00Z",
            "finished": None, "interrupted": None, "entries": entries}  # fmt: skip


GOOD_ENTRY = {
    "id": "a/codec-seed-json+protobuf", "board": "a", "url": "local", "suite": "codec",
    "profile": "seed", "codecs": "json,protobuf", "options": [], "status": "complete",
    "exit_code": 0, "duration_s": 12.5, "attempts": 1, "error": None, "comparison": None,
    "run_dir": "runs/a/codec-seed-json+protobuf",
}  # fmt: skip


# --- lab.json ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "said"),
    [
        ([1], "entries[0] must be an object, not 1"),
        ([{**GOOD_ENTRY, "board": ["a"]}], "entries[0].board must be text, not ['a']"),
        ([{**GOOD_ENTRY, "duration_s": "long"}], "entries[0].duration_s must be a number"),
        ([{**GOOD_ENTRY, "status": "fine"}], "entries[0].status must be 'pending' or"),
        ([{**GOOD_ENTRY, "exit_code": 1.5}], "entries[0].exit_code must be a whole number"),
        ([{k: v for k, v in GOOD_ENTRY.items() if k != "suite"}], "entries[0]: 'suite' is missing"),
    ],
    ids=["entry", "board", "duration", "status", "exit_code", "missing"],
)
def test_lab_status_names_a_wrong_typed_field_of_lab_json(tmp_path, entries, said):
    (tmp_path / "lab.json").write_text(json.dumps(_lab_index(entries)), encoding="utf-8")
    done = _evbench("lab", "status", str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 2


def test_lab_status_reads_a_good_lab_json(tmp_path):
    (tmp_path / "lab.json").write_text(json.dumps(_lab_index([GOOD_ENTRY])), encoding="utf-8")
    done = _evbench("lab", "status", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "1 of 1 entries done; the lab is running" in done.stdout


def test_lab_json_that_is_not_utf8_is_a_format_error(tmp_path):
    (tmp_path / "lab.json").write_bytes(b'{"format": 1, "entries": [], "plan": "\xff"}')
    with pytest.raises(FormatError, match="cannot read"):
        index.read(tmp_path)


@pytest.mark.parametrize(
    ("content", "entry"),
    [("[1]", None), ('{"format": 1, "entries": {"a": 1}}', None), ("7", None),
     (json.dumps(_lab_index([GOOD_ENTRY])), GOOD_ENTRY)],
    ids=["list", "entries-object", "number", "good"],
)  # fmt: skip
def test_the_nightly_comparison_finds_its_entry_or_no_lab_in_a_damaged_lab_json(
    tmp_path, content, entry
):
    lab = tmp_path / "lab"
    run_dir = lab / "runs" / "a" / "codec-seed-json+protobuf"
    run_dir.mkdir(parents=True)
    (lab / "lab.json").write_text(content, encoding="utf-8")
    assert nightly_compare.lab_entry(run_dir) == entry


# --- LAB.yaml ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("boards: [local]\nmatrix: {}\nplace_timeout: .nan\n", "place_timeout must be a number"),
        ("boards: [local]\nmatrix: {}\nplace_timeout: .inf\n", "place_timeout must be a number"),
        (
            "boards: [{board: local, name: 5}]\nmatrix: {}\n",
            "boards[0].name must be a label of letters, digits, . _ -, not 5",
        ),
        ("boards: [local]\nmatrix: {suites: [1]}\n", "matrix.suites[0] must be text, not 1"),
        ("boards: [local]\nmatrix: {}\noptions: [{a: 1}]\n", "options[0] must be text or a"),
        ("boards: [local]\nmatrix: {}\n1: x\n", "has a key that is not text: 1"),
        ("boards: [local]\nmatrix: [suites]\n", "matrix must be an object"),
    ],
)
def test_lab_run_names_a_wrong_typed_field_of_lab_yaml(tmp_path, text, said):
    path = tmp_path / "LAB.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as raised:
        plan.load(path)
    assert said in str(raised.value) and str(raised.value).startswith("LAB.yaml: ")


def test_a_lab_yaml_that_is_not_utf8_is_refused_with_exit_2(tmp_path):
    path = tmp_path / "LAB.yaml"
    path.write_bytes(b"boards: [local]\nmatrix: {}\n# caf\xe9\n")
    done = _evbench("lab", "run", str(path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert "is not UTF-8 text (byte" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_lab_yaml_nested_too_deeply_is_refused(tmp_path):
    path = tmp_path / "LAB.yaml"
    path.write_text("boards: " + "[" * 5000 + "]" * 5000 + "\nmatrix: {}\n", encoding="utf-8")
    with pytest.raises(UserError):
        plan.load(path)


# --- history: change points ---------------------------------------------------------


def _row(run_id: str, manifest: object, codec_versions: object = "{}") -> dict:
    """A runs row as the history store returns it: JSON columns are text."""
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    versions = codec_versions if isinstance(codec_versions, str) else json.dumps(codec_versions)
    return {"run_id": run_id, "manifest": text, "codec_versions": versions}


@pytest.mark.parametrize(
    ("manifest", "versions", "said"),
    [
        ({"spec": [1]}, {}, "manifest.spec is not an object"),
        ({"spec": "quick"}, {}, "manifest.spec is not an object"),
        ({"spec": {"processes": "many"}}, {}, "manifest.spec.processes is not a number"),
        ({"spec": {"quick": "yes"}}, {}, "manifest.spec.quick is not true or false"),
        ([1], {}, "manifest is not a JSON object"),
        ("{", {}, "manifest is not a JSON object"),
        ({}, {"json": {"v": 1}}, "codec_versions.json is not text"),
        ({}, "[1]", "codec_versions is not a JSON object"),
    ],
)
def test_a_change_point_names_a_malformed_row_field(manifest, versions, said):
    good = _row("r1", {"spec": {"quick": True}}, {"json": "2.0"})
    bad = _row("r2", manifest, versions)
    with pytest.raises(FormatError) as raised:
        run_differences.version_changes(good, bad)
    assert said in str(raised.value) and "(run r2)" in str(raised.value)


def test_change_points_still_name_what_moved():
    before = _row("r1", {"spec": {"quick": True}, "gc": "enabled"}, {"json": "2.0"})
    after = _row("r2", {"spec": {"processes": 4}, "gc": "enabled"}, {"json": "2.1"})
    moved = run_differences.version_changes(before, after)
    assert moved == {"codec json": ("2.0", "2.1"), "plan": ("quick=True", "processes=4")}


@pytest.mark.slow  # real `evbench history` processes: seconds
def test_the_trend_page_names_a_stored_manifest_whose_spec_is_not_an_object(tmp_path):
    """A store edited by hand: the second night's manifest.spec is a list. The trend page
    compares consecutive nights' plans (run_differences.plan): FormatError, exit 2, never the
    AttributeError (exit 1) it once was."""
    import contextlib
    import sqlite3

    from history_runs import night

    runs = [night(tmp_path / "runs", number) for number in (1, 2)]
    store = tmp_path / "history.sqlite"
    added = _evbench("history", "add", *map(str, runs), "--history", str(store))
    assert added.returncode == 0, added.stderr
    run_id = json.loads((runs[1] / "manifest.json").read_text(encoding="utf-8"))["run_id"]
    with contextlib.closing(sqlite3.connect(store)) as db:
        spec_a_list = "UPDATE runs SET manifest = json_set(manifest, '$.spec', json('[1]'))"
        db.execute(spec_a_list + " WHERE run_id = ?", (run_id,))
        db.commit()
    done = _evbench("history", "report", "--out", str(tmp_path / "page"), "--history", str(store))
    assert done.returncode == 2, done.stderr
    malformed = f"a history row (run {run_id}) is malformed: manifest.spec is not an object"
    assert malformed in done.stderr
    assert "Traceback" not in done.stderr


def test_what_the_lab_writes_its_reader_reads(tmp_path):
    """lab.json as LabIndex writes it through a lab's life validates against its schema."""
    lab = plan.parse(
        {"boards": ["local", {"board": "local", "name": "b"}], "matrix": {"codecs": ["json"]}}
    )
    written = index.LabIndex(tmp_path, tmp_path / "LAB.yaml", lab.entries)
    first, second = (entry.id for entry in lab.entries)
    written.update(first, status="running", attempts=1, run_dir=f"runs/{first}")
    comparison = {"baseline": None, "regressed": False, "note": "no previous run of this board"}
    done = {"status": "complete", "exit_code": 0, "duration_s": 3.2, "error": None}
    written.update(first, **done, comparison=comparison)
    written.update(second, status="failed", exit_code=2, duration_s=0.4, error="bad")
    written.finish(interrupted=None)
    document = index.read(tmp_path)
    assert [entry["status"] for entry in document["entries"]] == ["complete", "failed"]
    assert document["finished"] is not None
