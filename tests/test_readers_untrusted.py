"""Readers that cannot crash, on cases an independent attack found (each was a traceback, exit
1): a run's refused sample set or wrong-typed manifest field renders partial, named (exit 4);
lab.json, LAB.yaml and history change points (issue 30) name a wrong-typed field (exit 2)."""

import json
import math
import os
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from report_helpers import evbench

from evbench.history import run_differences
from evbench.lab import index, nightly_compare, plan
from evbench_core import results
from evbench_core.analysis import stats
from evbench_core.errors import FormatError, UserError

COMMITTED = Path(__file__).parent / "data" / "runs" / "core-v1"


def _copy(tmp_path: Path, name: str, edits: dict | None = None, extra: dict | None = None) -> Path:
    """The committed run with these manifest fields (dotted paths) replaced; with `extra`, as
    an interruption leaves it (no summary.json, no complete) plus that sample line."""
    run = tmp_path / name
    shutil.copytree(COMMITTED, run)
    if edits:
        manifest = json.loads((run / "manifest.json").read_text())
        for path, value in edits.items():
            *steps, last = path.split(".")
            field = manifest
            for step in steps:
                field = field[step]
            field[last] = value
        (run / "manifest.json").write_text(json.dumps(manifest))  # "\ud800" as JSON escapes it
    if extra is not None:
        (run / "summary.json").unlink()
        (run / "complete").unlink()
        with open(run / "samples.jsonl", "a", encoding="utf-8") as samples:
            samples.write(json.dumps(extra) + "\n")
    return run


def _run(*argv: object, code: int, said: str = "", timeout: float = 300):
    """`evbench ARGV`: exit `code`, `said` in its stderr, and no traceback nor internal error."""
    done = evbench(*map(str, argv), timeout=timeout)
    assert done.returncode == code, done.stderr
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    return done


def _sample_set(values: list) -> dict:
    return {"suite": "codec", "profile": "seed", "codec": "json", "metric": "encode", "unit": "s",
            "params": {"payloads": 200, "seed": 1, "operation": "extra"}, "worker": 9,
            "values": values}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("values", "params"),
    [
        ([], {}),
        ([1e308, -1e308, 1e308], {}),  # refused by the format (beyond 1e100)
        # params are plain values (and flat lists of them): an object in a replicate param
        # crashed report and compare (TypeError: unhashable type: 'dict')
        ([1e-6, 2e-6, 3e-6], {"process": {"x": 1}}),
        ([1e-6, 2e-6, 3e-6], {"process": [1, 2]}),
        ([1e-6, 2e-6, 3e-6], {"payloads": {"x": 1}}),
        ([1e-6, 2e-6, 3e-6], {"payloads": [200, {"x": 1}]}),
        ([1e-6, 2e-6, 3e-6], {"\ud800": 1}),
    ],
    ids=["no values", "values near the float range", "object replicate", "list replicate",
         "object", "object in a list", "surrogate key"],
)  # fmt: skip
def test_report_and_compare_of_a_run_without_summary_do_not_crash(tmp_path, values, params):
    extra = _sample_set(values)
    extra["params"] = {**extra["params"], **params}
    first = _copy(tmp_path, "a", extra=extra)
    second = _copy(tmp_path, "b", extra=extra)
    _run("report", first, code=4)  # partial, not 1 (a bug)
    markdown = (first / "report.md").read_text()
    assert "Missing files: summary.json, complete." in markdown
    if values:
        assert "samples.jsonl line 17 cannot be read" in markdown
    assert "| seed | Deserialization |" in markdown
    compared = evbench("compare", str(first), str(second), *(["--no-history"] if params else []))
    assert compared.returncode not in (1, 2), compared.stderr
    assert "Traceback" not in compared.stderr and "internal error" not in compared.stderr


def test_summarize_keeps_figures_finite_near_the_float_range_edge_and_plain_params_read():
    values = [1e308, -1e308, 1e308, 1.7e308]
    summary = stats.summarize(values)
    # worked exactly with fractions: mean = (1 - 1 + 1 + 1.7) e308 / 4
    exact = [Fraction(v) for v in values]
    mean = sum(exact) / 4
    variance = sum((v - mean) ** 2 for v in exact) / 3
    assert math.isclose(summary.mean, float(mean), rel_tol=1e-12)
    assert math.isclose(summary.stdev, math.sqrt(float(variance / Fraction(10) ** 600)) * 1e300)
    # the median of 4: (1e308 + 1e308) / 2, which overflows when added first
    assert summary.median == 1e308
    assert summary.min == -1e308 and summary.max == 1.7e308
    both_ends = stats.summarize([-1.7e308, 1.7e308])
    assert both_ends.median == 0.0 and both_ends.mean == 0.0
    # plain params and flat lists of them are read
    data = _sample_set([1.0])
    data["params"] = {**data["params"], "window": [1, 2.5, "x", None, True], "process": 3}
    assert results.SampleSet.from_dict(data).params == data["params"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "edits",
    [
        {"platform": [1], "spec": 5, "telemetry": "on"},
        {"platform.clock": [1], "spec.codecs": [1], "spec.link_rate_hz": int("9" * 400)},
    ],
    ids=["top-level fields", "nested fields"],
)
def test_a_manifest_with_fields_of_the_wrong_type_renders_naming_them(tmp_path, edits):
    run = _copy(tmp_path, "run", edits)
    _run("report", run, code=4)  # the checksum no longer matches, and the fields
    markdown = (run / "report.md").read_text().replace("\\", "")  # markdown escapes
    for path in edits:
        assert f"manifest.json: {path}" in markdown, path
    assert "(ignored)" in markdown


@pytest.mark.slow
def test_a_lone_surrogate_in_the_manifest_is_named_not_a_crash(tmp_path):
    """A lone surrogate ("\\ud800", valid JSON) no UTF-8 report holds: refused as not UTF-8."""
    run = _copy(tmp_path, "surrogate", {"platform.hostname": "board-\ud800-1"})
    before = {path.name: path.read_bytes() for path in run.iterdir()}
    expected = f"{run / 'manifest.json'} cannot be read: not UTF-8 text: a lone surrogate"
    assert '"board-\\ud800-1"' in _run("report", run, code=2, said=expected).stderr
    assert {path.name: path.read_bytes() for path in run.iterdir()} == before  # nothing lost
    _run("compare", run, COMMITTED, "--no-history", code=2, said=expected)
    # a pair of surrogates is one character (U+1F600): text like any other
    paired = _copy(tmp_path, "paired", {"platform.hostname": "board-\U0001f600"})
    assert "\\ud83d\\ude00" in (paired / "manifest.json").read_text()
    _run("report", paired, code=4)  # only the checksum no longer matches
    assert "board-\U0001f600" in (paired / "report.md").read_text()


def _lab_index(entries: list) -> dict:
    return {"format": 1, "plan": "/l/LAB.yaml", "started": "2026-12-01T22:00:00Z",
            "finished": None, "interrupted": None, "entries": entries}  # fmt: skip


GOOD_ENTRY = {
    "id": "a/codec-seed-json+protobuf", "board": "a", "url": "local", "suite": "codec",
    "profile": "seed", "codecs": "json,protobuf", "options": [], "status": "complete",
    "exit_code": 0, "duration_s": 12.5, "attempts": 1, "error": None, "comparison": None,
    "run_dir": "runs/a/codec-seed-json+protobuf",
}  # fmt: skip
NO_SUITE = {k: v for k, v in GOOD_ENTRY.items() if k != "suite"}


@pytest.mark.parametrize(
    ("entries", "code", "said"),
    [
        ([GOOD_ENTRY], 0, "1 of 1 entries done; the lab is running"),
        ([1], 2, "entries[0] must be an object, not 1"),
        ([{**GOOD_ENTRY, "board": ["a"]}], 2, "entries[0].board must be text, not ['a']"),
        ([{**GOOD_ENTRY, "duration_s": "long"}], 2, "entries[0].duration_s must be a number"),
        ([{**GOOD_ENTRY, "status": "fine"}], 2, "entries[0].status must be 'pending' or"),
        ([{**GOOD_ENTRY, "exit_code": 1.5}], 2, "entries[0].exit_code must be a whole number"),
        ([NO_SUITE], 2, "entries[0]: 'suite' is missing"),
    ],
    ids=["good", "entry", "board", "duration", "status", "exit_code", "missing"],
)
def test_lab_status_reads_lab_json_or_names_its_wrong_typed_field(tmp_path, entries, code, said):
    (tmp_path / "lab.json").write_text(json.dumps(_lab_index(entries)), encoding="utf-8")
    done = evbench("lab", "status", str(tmp_path))
    assert done.returncode == code, done.stderr
    assert said in (done.stderr if code else done.stdout), done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 2


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


def test_a_lab_yaml_not_utf8_is_refused_with_exit_2_and_one_nested_too_deeply_too(tmp_path):
    path = tmp_path / "LAB.yaml"
    path.write_bytes(b"boards: [local]\nmatrix: {}\n# caf\xe9\n")
    _run("lab", "run", path, "--out", tmp_path / "out", code=2, said="is not UTF-8 text (byte")
    assert not (tmp_path / "out").exists()
    path.write_text("boards: " + "[" * 5000 + "]" * 5000 + "\nmatrix: {}\n", encoding="utf-8")
    with pytest.raises(UserError):
        plan.load(path)


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
    """A store edited by hand: the second night's manifest.spec is a list (it was an
    AttributeError, exit 1, in run_differences.plan)."""
    import contextlib
    import sqlite3

    from history_runs import night

    runs = [night(tmp_path / "runs", number) for number in (1, 2)]
    store = tmp_path / "history.sqlite"
    _run("history", "add", *runs, "--history", store, code=0)
    run_id = json.loads((runs[1] / "manifest.json").read_text(encoding="utf-8"))["run_id"]
    with contextlib.closing(sqlite3.connect(store)) as db:
        spec_a_list = "UPDATE runs SET manifest = json_set(manifest, '$.spec', json('[1]'))"
        db.execute(spec_a_list + " WHERE run_id = ?", (run_id,))
        db.commit()
    malformed = f"a history row (run {run_id}) is malformed: manifest.spec is not an object"
    _run(
        "history", "report", "--out", tmp_path / "page", "--history", store, code=2, said=malformed
    )


def test_what_the_lab_writes_its_reader_reads_and_lab_json_not_utf8_is_a_format_error(tmp_path):
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
    # lab.json that is not UTF-8 is a format error
    (tmp_path / "lab.json").write_bytes(b'{"format": 1, "entries": [], "plan": "\xff"}')
    with pytest.raises(FormatError, match="cannot read"):
        index.read(tmp_path)


def test_a_directory_in_place_of_the_samples_is_named_not_a_crash(tmp_path):
    run = _copy(tmp_path, "run")
    (run / "samples.jsonl").unlink()
    (run / "samples.jsonl").mkdir()
    said = "samples.jsonl cannot be read: not a regular file (a directory)"
    _run("report", run, code=4, said=said)  # rendered, partial: what it holds is named
    for argv in (["report", "--terminal", run], ["compare", "--no-history", run, COMMITTED]):
        _run(*argv, code=2, said="samples.jsonl")


@pytest.mark.parametrize(
    ("start", "said"),
    [
        ("yesterday", "is not an ISO 8601 time in UTC"),
        ("2026-13-45T99:00:00", "is not an ISO 8601 time in UTC"),
        ("2026-12-01T02:00:00+02:00", "is not an ISO 8601 time in UTC"),  # sorts as text
        ("2099-01-01T00:00:00+00:00", "is in the future"),
    ],
)
def test_history_add_refuses_a_start_time_the_store_cannot_order(tmp_path, start, said):
    # The store orders, filters (--since) and prunes by start_time as text: indexed, such a
    # run broke the trend page for good and made `prune --keep 3` delete the real nights.
    run = _copy(tmp_path, "run", {"start_time": start})
    results.write_checksums(run)  # an intact run in every other way
    said = f"start_time {start!r} {said}; not indexed"
    _run("history", "add", "--history", tmp_path / "h.sqlite", run, code=2, said=said)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"n": None}, "n is a whole number from 0, not None"),
        ({"n": "missing"}, "n is a whole number from 0, not None"),
        ({"n": -1}, "n is a whole number from 0, not -1"),
        ({"n": 2.5}, "n is a whole number from 0, not 2.5"),
        ({"mean": None}, "mean is a finite number, not None"),
        ({"max": "missing"}, "max is a finite number, not None"),
    ],
    ids=["n null", "n missing", "n negative", "n fraction", "mean null", "max missing"],
)
def test_a_record_without_its_count_or_a_required_figure_is_refused(tmp_path, edit, said):
    """`n: null` or no `n` passed the reader, then crashed the report (TypeError, exit 1) and
    was indexed by `history add`; only stdev, p90, p99 and the CI may be null (small n)."""
    run = _copy(tmp_path, "run")
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    ((key, value),) = edit.items()
    if value == "missing":
        del summary["records"][0][key]
    else:
        summary["records"][0][key] = value
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    results.write_checksums(run)  # an intact run in every other way
    with pytest.raises(FormatError, match=f"a record's {said}"):
        results.read_records(summary, run / "summary.json")
    for argv in (["report", run], ["history", "add", "--history", tmp_path / "h.sqlite", run]):
        _run(*argv, code=2, said=f"evbench: error: {run / 'summary.json'}: a record's {said}")


#: What each file's damage comes to: exit and line of `evbench report`, of `history add`.
NOT_REGULAR = {
    "manifest.json": (2, "manifest.json cannot be read: not a regular file", 2, "no manifest"),
    "summary.json": (2, "summary.json cannot be read: not a regular file", 3, "summary.json: not"),
    "samples.jsonl": (4, "samples.jsonl cannot be read: not a regular file", 3, "samples.jsonl"),
    "SHA256SUMS": (4, "SHA256SUMS cannot be read: not a regular file", 3, "SHA256SUMS cannot"),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "directory", "/dev/zero"])
@pytest.mark.parametrize("name", list(NOT_REGULAR))
def test_a_fifo_directory_or_device_in_a_run_is_named_never_a_hang(tmp_path, name, kind):
    """A FIFO hung report and history add for ever; /dev/zero as SHA256SUMS was a
    MemoryError, a directory an IsADirectoryError (both exit 1). The timeout is a cap only."""
    run = _copy(tmp_path, "run")
    (run / name).unlink()
    if kind == "fifo":
        os.mkfifo(run / name)
    elif kind == "directory":
        (run / name).mkdir()
    else:
        (run / name).symlink_to("/dev/zero")
    report_code, report_said, add_code, add_said = NOT_REGULAR[name]
    _run("report", run, code=report_code, said=report_said, timeout=60)
    history = ["history", "add", "--history", tmp_path / "h.sqlite", run]
    _run(*history, code=add_code, said=add_said, timeout=60)
