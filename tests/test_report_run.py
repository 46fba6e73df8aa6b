"""`evbench run` ends with a report: the plots the data call for, decodable images,
a CSV with the summary's numbers and a JUnit file that validates (xmllint, against
the JUnit schema of Jenkins' xUnit plugin) and carries each metric's value and unit."""

from __future__ import annotations

import base64
import csv
import io
import json
import re
from pathlib import Path

import matplotlib.image
import pytest
from report_helpers import junit_numbers, local_run, xmllint_schema

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TIME_METRICS = {"encode", "decode", "decode_access"}
SIZE_METRICS = {"size", "size_deflate"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "run"
    done = local_run(out)
    # Named once, on the screen's last lines, once the report exists.
    assert done.stdout.count(str(out / "report.html")) == 1, done.stdout
    assert f"Report with plots: {out / 'report.html'}" in done.stdout.splitlines()[-3:]
    return out


def expected_plots(run_dir: Path) -> set[str]:
    """The plots this run's data call for, worked out from the files, not the report code."""
    records = json.loads((run_dir / "summary.json").read_text())["records"]
    codec_metrics = {r["metric"] for r in records if r["suite"] == "codec"}
    samples = map(json.loads, (run_dir / "samples.jsonl").read_text().splitlines())
    link_metrics = {s["metric"] for s in samples if s["suite"] == "link"}
    expected = set()
    if codec_metrics & TIME_METRICS:
        expected.add("codec-times")
    if codec_metrics & SIZE_METRICS:
        expected.add("codec-sizes")
    if "rtt" in link_metrics:
        expected |= {"rtt-cdf", "rtt-time"}
    if "send_lateness" in link_metrics:
        expected.add("lateness-time")
    telemetry = run_dir / "telemetry.jsonl"
    if telemetry.exists() and '"sample"' in telemetry.read_text():
        expected.add("telemetry")
    return expected


def embedded_images(html: str) -> list[bytes]:
    found = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    return [base64.b64decode(b64) for b64 in found]


def assert_real_image(png: bytes) -> None:
    assert png.startswith(PNG_SIGNATURE)
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    height, width = pixels.shape[:2]
    assert height > 100 and width > 100
    assert pixels.std() > 0.01, "a blank image"


def test_run_writes_report_with_the_plots_the_data_call_for(run_dir: Path):
    html = (run_dir / "report.html").read_text()
    markdown = (run_dir / "report.md").read_text()
    expected = expected_plots(run_dir)
    assert {"codec-times", "codec-sizes"} <= expected  # the codec suite always ran
    assert set(re.findall(r'<figure id="([^"]+)"', html)) == expected
    assert set(re.findall(r"\]\(plots/([^)]+)\.png\)", markdown)) == expected
    assert {p.stem for p in (run_dir / "plots").glob("*.png")} == expected
    images = embedded_images(html)
    assert len(images) == len(expected)
    for png in images:
        assert_real_image(png)
    for path in (run_dir / "plots").glob("*.png"):
        assert_real_image(path.read_bytes())


def test_report_is_self_contained(run_dir: Path):
    html = (run_dir / "report.html").read_text()
    assert "<script" not in html
    # No reference that would need a network or another file to open the report (links
    # to the page's own sections, '#answer', stay inside it).
    assert not re.search(r'(src|href)="(?!data:|#)', html)
    assert 'href="#answer"' in html
    assert "default-src 'none'" in html


def test_report_has_context_comparison_and_spread(run_dir: Path):
    markdown = (run_dir / "report.md").read_text()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["platform"]["kernel"] in markdown
    assert f"{manifest['platform']['protobuf']} (backend " in markdown
    assert "| Profile | Metric | JSON | Protobuf (est.) | Change (est.) | Verdict |" in markdown
    assert "PARTIAL" not in markdown
    assert "| Sensors | " in markdown and "| Sensors | no telemetry" not in markdown
    records = json.loads((run_dir / "summary.json").read_text())["records"]
    if any(r["suite"] == "link" for r in records):
        assert re.search(r"\| Scheduling granted \| SCHED_\w+ \(real-time not asked", markdown)
    spread = markdown.split("## Every metric with its spread", 1)[1].split("\n## ", 1)[0]
    # The first part of the table (report.md splits one wider than 120 columns, each
    # part repeating the columns that name a row): one line per record.
    first_part = spread.split("The same rows, continued: ", 1)[0]
    table_lines = [line for line in first_part.splitlines() if line.startswith("|")]
    assert len(table_lines) - 2 == len(records)  # minus the header and its rule


def test_csv_holds_the_same_numbers_as_summary(run_dir: Path):
    records = json.loads((run_dir / "summary.json").read_text())["records"]
    with open(run_dir / "summary.csv", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == len(records)
    numeric = ("n", "mean", "median", "stdev", "min", "max", "p90", "p99", "ci95_low", "ci95_high")
    for row, record in zip(rows, records, strict=True):
        for name in ("suite", "profile", "codec", "metric", "unit"):
            assert row[name] == (record[name] or "")  # null (telemetry's codec) is empty
        assert json.loads(row["params"]) == record["params"]
        for name in numeric:
            expected = record[name]
            assert (float(row[name]) if row[name] else None) == expected, (name, row, record)


def test_junit_validates_against_the_schema(run_dir: Path, tmp_path: Path):
    junit = run_dir / "junit.xml"
    done = xmllint_schema(junit)
    assert done.returncode == 0, done.stderr
    text = junit.read_text()
    records = json.loads((run_dir / "summary.json").read_text())["records"]
    assert text.count("<testcase ") == len(records)
    cases = junit_numbers(junit)  # telemetry's phases are told apart, not merged
    assert len(cases) == len(records)
    # Every metric carries its value (the median) and unit, in both places.
    expected = sorted((repr(r["median"]), r["unit"]) for r in records)
    for place in ("properties", "system-out"):
        got = sorted((c[place]["value"], c[place]["unit"]) for c in cases.values())
        assert got == expected, place
    assert any(c["properties"]["unit"] == "s" for c in cases.values())
    # The schema can reject: a test case without its name does not validate.
    broken = tmp_path / "broken.xml"
    broken.write_text(re.sub(r'<testcase name="[^"]*"', "<testcase", text, count=1))
    assert broken.read_text() != text
    done = xmllint_schema(broken)
    assert done.returncode != 0
    assert "'name' is required" in done.stderr
