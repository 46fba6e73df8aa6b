"""Readers of a run directory that cannot crash: a run interrupted before its
summary.json (the report rebuilds it from samples.jsonl), a sample set with no values
or with values at the edge of the float range, and a manifest whose fields have the
wrong types. Each case once crashed `evbench report` or `compare` with exit 1 (the
code for a bug); each is now a partial run rendered with its problem named (exit 4).
Found by an independent attack; the fuzz campaigns benchmarks/fuzz/summarize_samples.py
and report_manifest.py cover the same readers at scale."""

from __future__ import annotations

import json
import math
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from report_helpers import evbench

from evbench_core.analysis import stats

COMMITTED = Path(__file__).parent / "data" / "runs" / "core-v1"


def _interrupted_copy(tmp_path: Path, name: str, extra_line: dict | None = None) -> Path:
    """The committed run as an interruption leaves it: no summary.json, no complete."""
    run = tmp_path / name
    shutil.copytree(COMMITTED, run)
    (run / "summary.json").unlink()
    (run / "complete").unlink()
    if extra_line is not None:
        with open(run / "samples.jsonl", "a", encoding="utf-8") as samples:
            samples.write(json.dumps(extra_line) + "\n")
    return run


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
        # params are plain values (text, numbers, true/false, null; flat lists of them beside
        # the replicate params): a set whose replicate param held an object crashed report
        # and compare (TypeError: unhashable type: 'dict'; issue 44, item 12)
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
    """A sample set the format refuses is named, the rest of the run rendered (partial)."""
    extra = _sample_set(values)
    extra["params"] = {**extra["params"], **params}
    first = _interrupted_copy(tmp_path, "a", extra)
    second = _interrupted_copy(tmp_path, "b", extra)
    done = evbench("report", str(first))
    assert done.returncode == 4, done.stderr  # partial, not 1 (a bug)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    markdown = (first / "report.md").read_text()
    assert "Missing files: summary.json, complete." in markdown
    if values:
        assert "samples.jsonl line 17 cannot be read" in markdown
    assert "| seed | Deserialization |" in markdown
    compared = evbench("compare", str(first), str(second), *(["--no-history"] if params else []))
    assert compared.returncode not in (1, 2), compared.stderr
    assert "Traceback" not in compared.stderr and "internal error" not in compared.stderr


def test_summarize_keeps_its_figures_finite_near_the_edge_of_the_float_range():
    values = [1e308, -1e308, 1e308, 1.7e308]
    summary = stats.summarize(values)
    # worked exactly with fractions: mean = (1 - 1 + 1 + 1.7) e308 / 4
    exact = [Fraction(v) for v in values]
    mean = sum(exact) / 4
    variance = sum((v - mean) ** 2 for v in exact) / 3
    assert math.isclose(summary.mean, float(mean), rel_tol=1e-12)
    assert math.isclose(summary.stdev, math.sqrt(float(variance / Fraction(10) ** 600)) * 1e300)
    # the median of 4 is the mean of the middle two: (1e308 + 1e308) / 2, which overflows
    # when added first
    assert summary.median == 1e308
    assert summary.min == -1e308 and summary.max == 1.7e308
    both_ends = stats.summarize([-1.7e308, 1.7e308])
    assert both_ends.median == 0.0 and both_ends.mean == 0.0


def _edit(manifest: dict, path: str, value) -> None:
    *steps, last = path.split(".")
    for step in steps:
        manifest = manifest[step]
    manifest[last] = value


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
    run = tmp_path / "run"
    shutil.copytree(COMMITTED, run)
    manifest = json.loads((run / "manifest.json").read_text())
    for path, value in edits.items():
        _edit(manifest, path, value)
    (run / "manifest.json").write_text(json.dumps(manifest))
    done = evbench("report", str(run))
    assert done.returncode == 4, done.stderr  # the checksum no longer matches, and the fields
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    markdown = (run / "report.md").read_text().replace("\\", "")  # markdown escapes
    for path in edits:
        assert f"manifest.json: {path}" in markdown, path
    assert "(ignored)" in markdown


def _with_manifest_field(tmp_path: Path, name: str, value) -> Path:
    run = tmp_path / name
    shutil.copytree(COMMITTED, run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["platform"]["hostname"] = value
    (run / "manifest.json").write_text(json.dumps(manifest))  # "\ud800" as JSON escapes it
    return run


@pytest.mark.slow
def test_a_lone_surrogate_in_the_manifest_is_named_not_a_crash(tmp_path):
    """JSON can escape a lone surrogate ("\\ud800"), which no UTF-8 report can hold: the
    manifest is refused as not UTF-8 text, as a file with an invalid byte is (issue 44,
    item 12; it was an internal error, UnicodeEncodeError, from report and compare)."""
    run = _with_manifest_field(tmp_path, "surrogate", "board-\ud800-1")
    before = {path.name: path.read_bytes() for path in run.iterdir()}
    expected = f"{run / 'manifest.json'} cannot be read: not UTF-8 text: a lone surrogate"
    done = evbench("report", str(run))
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr and '"board-\\ud800-1"' in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert {path.name: path.read_bytes() for path in run.iterdir()} == before  # nothing lost
    compared = evbench("compare", str(run), str(COMMITTED), "--no-history")
    assert compared.returncode == 2, compared.stderr
    assert expected in compared.stderr and "internal error" not in compared.stderr
    # a pair of surrogates is one character (U+1F600): text like any other
    paired = _with_manifest_field(tmp_path, "paired", "board-\U0001f600")
    assert "\\ud83d\\ude00" in (paired / "manifest.json").read_text()
    done = evbench("report", str(paired))
    assert done.returncode == 4, done.stderr  # only the checksum no longer matches
    assert "board-\U0001f600" in (paired / "report.md").read_text()


def test_plain_params_and_flat_lists_are_read():
    from evbench_core.results import SampleSet

    data = _sample_set([1.0])
    data["params"] = {**data["params"], "window": [1, 2.5, "x", None, True], "process": 3}
    assert SampleSet.from_dict(data).params == data["params"]
