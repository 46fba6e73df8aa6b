"""One real quick local run (codec and link suites, both link phases, telemetry): its plots,
CSV and JUnit (xmllint, Jenkins' xUnit schema) hold the summary's numbers; every row of the
terminal table and report.md is exactly one record identity of summary.json (the results
format's definition), its cells the medians recomputed here from samples.jsonl (per
replicate first), and no telemetry or energy row carries a winner."""

import base64
import csv
import io
import json
import re
import statistics
from pathlib import Path

import matplotlib.image
import pytest
from report_helpers import (
    evbench,
    junit_numbers,
    local_run,
    markdown_tables,
    text_tables,
    verdict_table,
    xmllint_schema,
)

from evbench.report.units import format_value
from evbench_core.analysis import identity, metrics

CODECS = ("json", "protobuf")
NAMED_PARAMS = ("phase", "kind", "mode", "operation")
#: Metrics that are telemetry or modelled figures: context, never a winner.
CONTEXT_METRICS = {
    "cpu_util", "agent_cpu", "temp_max", "freq_min", "power_mean", "rss_max",
    "energy_per_op", "energy_per_msg",
}  # fmt: skip
VERDICTS = {"JSON", "Protobuf", "equal", "negligible", "undecided", "n too small"}
#: The display units of report.units.format_value, to read a cell back as a number.
SCALES = {
    "ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "B": 1.0, "KiB": 1024.0,
    "MiB": 1024.0**2, "GiB": 1024.0**3, "KiB/s": 1024.0, "MiB/s": 1024.0**2, "B/s": 1.0,
    "msg/s": 1.0, "kmsg/s": 1000.0, "%": 1.0, "msg": 1.0, "MHz": 1e6,
}  # fmt: skip
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def replicate(sample: dict) -> object:
    """A sample set's replicate param (the results format's), else its worker."""
    params = sample.get("params") or {}
    named = [params[n] for n in ("process", "process_index", "phase_index") if n in params]
    return named[0] if named else sample.get("worker", 0)


def _samples(run_dir: Path, codecs=CODECS) -> list[dict]:
    """samples.jsonl's sample sets (of the two codecs)."""
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    return [s for s in map(json.loads, lines) if codecs is None or s["codec"] in codecs]


def _records(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "summary.json").read_text())["records"]


def identities(run_dir: Path) -> tuple[dict, dict]:
    """Every identity of summary.json both codecs measured -> codec -> its median: of the
    replicates' medians with several, else of every value (samples.jsonl); and every
    identity -> codec -> the mean of every value (what a fact row shows)."""
    known = {identity.of_record(r) for r in _records(run_dir) if r["codec"] in CODECS}
    values: dict[tuple, dict[object, list[float]]] = {}
    for sample in _samples(run_dir):
        key = (identity.of_record(sample), sample["codec"])
        values.setdefault(key, {}).setdefault(replicate(sample), []).extend(sample["values"])
    found: dict[identity.Identity, dict[str, float]] = {}
    means: dict[identity.Identity, dict[str, float]] = {}
    for (key, codec), replicates in values.items():
        assert key in known, key  # the summary holds every identity the samples have
        medians = [statistics.median(v) for v in replicates.values()]
        every = [v for vs in replicates.values() for v in vs]
        shown = statistics.median(medians) if len(medians) > 1 else statistics.median(every)
        found.setdefault(key, {})[codec] = shown
        means.setdefault(key, {})[codec] = statistics.fmean(every)
    both = {key: medians for key, medians in found.items() if set(medians) == set(CODECS)}
    return both, means


def number(cell: str) -> float:
    """A cell's leading figure back as a number in the unit's base: '312 µs' -> 3.12e-4."""
    text = leading_value(cell).replace("k msg/s", " kmsg/s")
    figure, unit = text.split(" ", 1) if " " in text else (text, "")
    return float(figure) * SCALES.get(unit.strip(), 1.0)


def names(row_label: str, profile: str, key: identity.Identity, found: dict) -> bool:
    """Whether a row's profile and label name this identity: its metric's label and each
    NAMED_PARAMS value that sets it apart from its metric's other identities."""
    same = (key.suite, key.profile, key.metric)
    siblings = [k.params_dict for k in found if (k.suite, k.profile, k.metric) == same]
    apart = [n for n in NAMED_PARAMS if len({str(p.get(n)) for p in siblings}) > 1]
    named = all(str(key.params_dict.get(n)) in row_label for n in apart)
    label = metrics.METRICS[key.metric].label
    return profile == key.profile and row_label.startswith(label) and named


def leading_value(cell: str) -> str:
    return cell.split(" [", 1)[0].strip()


def match_rows(rows: list[list[str]], found: dict, columns: tuple, facts=None) -> dict:
    """Each row -> the one identity it shows, else fails. `columns`: the cells showing
    medians (the comparison table: the baseline's only); with `facts` (each codec's
    means) a fact row's two cells are its means."""
    mapped = {}
    for row in rows:
        profile, label = row[0].strip(), row[1].strip()
        fact = facts is not None and len(row) > 5 and row[5].strip() == "fact"
        shown = (2, 3) if fact else columns
        candidates = []
        for key, medians in found.items():
            figures = facts[key] if fact and facts else medians
            cells = [format_value(figures[codec], key.unit, key.metric) for codec in CODECS]
            shows = [leading_value(row[column]) for column in shown]
            if names(label, profile, key, found) and shows == cells[: len(shows)]:
                candidates.append(key)
        assert len(candidates) == 1, (row, candidates)
        assert candidates[0] not in mapped.values(), row  # two rows, one measurement
        mapped[tuple(row)] = candidates[0]
    return mapped


def signed_change(cell: str) -> float:
    """A Change cell as a signed number: '+1.1%' as 1.1; '45x faster' as -45 (lower),
    '2.5x higher' as +2.5: only its sign is compared."""
    if cell.endswith("%"):
        return float(cell.rstrip("%"))
    times, word = cell.split("x ", 1)
    return -float(times) if word in ("faster", "smaller", "lower") else float(times)


def check_tables(tables: list[list[list[str]]], found: dict, facts: dict) -> None:
    """The comparison table and the context table (no Verdict) show every identity once
    between them; context metrics only in the context table."""
    comparison = verdict_table(tables)
    header = [c.strip() for c in comparison[0]]
    assert header[:6] == [
        "Profile", "Metric", "JSON", "Protobuf (est.)", "Change (est.)", "Verdict",
    ]  # fmt: skip
    context = next(t for t in tables if t[0][1].strip().startswith("Context"))
    context_header = [c.strip() for c in context[0]]
    assert "Verdict" not in context_header and "Change (est.)" not in context_header
    tested = match_rows(comparison[1:], found, (2,), facts)
    shown = match_rows(context[1:], found, (2, 4))
    assert not set(tested.values()) & set(shown.values())
    assert set(tested.values()) | set(shown.values()) == set(found)  # nothing left out
    for row, key in tested.items():
        assert key.suite != "telemetry" and key.metric not in CONTEXT_METRICS, row
        assert row[5].strip() in VERDICTS | {"fact"}, row


def _equal_weights(samples: list[dict], codec: str) -> list[float]:
    """The codec's values of each phase kind, thinned to one count by evenly spaced order
    statistics (each keeps its shape)."""
    by_phase: dict[str, list[float]] = {}
    for sample in samples:
        if sample["codec"] == codec:
            by_phase.setdefault(sample["params"]["phase"], []).extend(sample["values"])
    assert len(by_phase) == 2, by_phase.keys()  # periodic and capacity
    count = min(map(len, by_phase.values()))
    return [
        ordered[round(i * (len(ordered) - 1) / (count - 1))]
        for ordered in map(sorted, by_phase.values())
        for i in range(count)
    ]


def test_a_real_runs_rows_report_plots_and_exports_each_show_one_identity(tmp_path):
    run_dir = tmp_path / "run"  # one real run, read by every check below
    done = local_run(run_dir, "--suite", "codec,link", "--telemetry-interval", "0.25", "--details")
    stdout = done.stdout
    found, facts = identities(run_dir)  # first: the run measured what this test needs
    phases = {k.params_dict.get("phase") for k in found if k.suite == "link"}
    assert {"periodic", "capacity"} <= phases
    records = _records(run_dir)
    kinds = {r["params"].get("kind") for r in records if r["suite"] == "telemetry"}
    assert {"periodic", "capacity"} <= kinds  # telemetry per link phase kind
    # Duets run the codecs at once and capacity pairs interleave their blocks (tens of
    # ms, far below a telemetry sample): no telemetry record is one codec's.
    assert not [r for r in records if r["suite"] == "telemetry" and r["codec"] is not None]
    # The same metric in two phases is two identities: what pooling used to merge.
    assert len([k for k in found if k.metric == "rtt_transport"]) >= 2
    assert stdout.split("\n\n", 1)[1].startswith(
        "The answer (Protobuf against JSON, on this machine):"
    )
    markdown = (run_dir / "report.md").read_text()
    # every line of its tables fits 120 columns (the split ones are joined back below)
    wide = [line for line in markdown.splitlines() if line.startswith("|") and len(line) > 120]
    assert wide == [], wide
    assert markdown.split("\n## ", 3)[2].startswith("The answer: Protobuf against JSON")
    for tables in (text_tables(stdout), markdown_tables(markdown)):
        check_tables(tables, found, facts)
    # The check can fail: a row showing the median of two phases pooled names no identity.
    # The phases weigh the same: pooled by count, the capacity phase's thousands of round
    # trips outweigh the periodic phase's 40, and can round to its row's own.
    keys = [k for k in found if k.metric == "rtt_transport"]
    rtt = [s for s in _samples(run_dir) if s["metric"] == "rtt_transport"]
    pooled = [statistics.median(_equal_weights(rtt, codec)) for codec in CODECS]
    cells = [format_value(median, "s") for median in pooled]
    row = [keys[0].profile, "RTT, transport (periodic, capacity)", *cells]
    with pytest.raises(AssertionError):
        match_rows([row], found, (2, 3))
    # comparison.csv holds the terminal table's rows; on each tested row the cells, the
    # change and a named winner (with the metric's direction) agree, and an interval beside
    # p (Holm) >= 0.05 holds 1 (0 for a difference); evbench report writes the same file;
    # JUnit carries the verdicts in the same words.
    path = run_dir / "comparison.csv"
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == CSV_COLUMNS
        lines = list(reader)
    table = verdict_table(text_tables(stdout))
    header = [c.strip() for c in table[0]]
    rows = [[c.strip() for c in row] for row in table[1:]]
    assert len(lines) == len(rows)
    checked = 0
    for line, row in zip(lines, rows, strict=True):
        assert (line["profile"], line["label"]) == (row[0], row[1].removesuffix(" *"))
        assert line["baseline"] == "json" and line["candidate"] == "protobuf"
        word = TABLE_WORDS.get(line["verdict"], line["verdict"])
        assert word == row[header.index("Verdict")]
        assert word in VERDICTS | {"fact"}
        if line["verdict"] == "fact":
            continue
        checked += 1
        change = row[header.index("Change (est.)")]
        assert change == line["change"] or change == f"{(float(line['estimate']) - 1) * 100:+.1f}%"
        # The cells are rounded to three digits: a change below half a unit of the last
        # digit may show as equal cells, never as cells of the other sign.
        base, cand = number(row[2]), number(row[3])
        assert cand == base or (cand > base) == (signed_change(change) > 0), row
        metric = next(m for m, known in metrics.METRICS.items() if row[1].startswith(known.label))
        if word in ("JSON", "Protobuf"):
            lower_better = metrics.better(metric) == "lower"
            assert (signed_change(change) < 0) == ((word == "Protobuf") == lower_better), row
        ratio = float(line["estimate"])
        if change.endswith("%"):  # below 2x: the change in percent
            assert 0.5 < ratio < 2
        else:  # '45x faster': the factor, rounded, is the ratio's or its inverse's
            times = float(change.split("x")[0])
            assert times == pytest.approx(max(ratio, 1 / ratio), rel=0.06, abs=0.05)
        interval = row[header.index("CI (Holm step)")]
        # an absolute margin: the interval of the difference, in the unit; else of the ratio
        by_difference = line["scale"] == "difference"
        ends = ("diff_low", "diff_high") if by_difference else ("ci_low", "ci_high")
        low, high = (float(line[end]) if line[end] else None for end in ends)
        if low is None:
            assert interval == "-" and line["verdict"] == "n too small"
        elif by_difference:
            assert low <= high and " to " in interval
        else:
            assert interval == f"{low:.3f}-{high:.3f}"
        if low is not None and float(line["p_holm"]) >= 0.05:  # no interval excludes 0 (1)
            assert low <= (0 if by_difference else 1) <= high, line  # without Holm
        p_shown = row[header.index("p (Holm)")]  # the same, as the table prints them
        if interval != "-" and p_shown != "<1e-12" and float(p_shown) >= 0.05:
            differs = " to " in interval  # a difference in the unit: '-2.38 µs to +7.48 µs'
            ends = interval.split(" to " if differs else "-")
            low, high = (float(end.split()[0]) for end in ends)
            assert low <= (0 if differs else 1) <= high, row
        assert row[header.index("n")].startswith(line["n"] + " ")
    assert checked >= 5  # the codec suite's timed rows and the link's tested rows
    junit = junit_numbers(run_dir / "junit.xml")
    said = {f["system-out"].get("verdict") for f in junit.values()} - {None}
    assert said and said <= {"json", "protobuf", "equal", "negligible", "undecided", "n too small"}
    before = path.read_bytes()
    path.unlink()
    done = evbench("report", str(run_dir))
    assert done.returncode == 0 and path.read_bytes() == before, done.stderr
    # Named once, on the screen's last lines, once the report exists.
    assert stdout.count(str(run_dir / "report.html")) == 1, stdout
    assert f"Report with plots: {run_dir / 'report.html'}" in stdout.splitlines()[-3:]
    html = (run_dir / "report.html").read_text()
    markdown = (run_dir / "report.md").read_text()
    expected = expected_plots(run_dir)
    assert {"codec-times", "codec-sizes"} <= expected  # the codec suite always ran
    assert set(re.findall(r'<figure id="([^"]+)"', html)) == expected
    assert set(re.findall(r"\]\(plots/([^)]+)\.png\)", markdown)) == expected
    assert {p.stem for p in (run_dir / "plots").glob("*.png")} == expected
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(images) == len(expected)
    for png in images:
        assert_real_image(base64.b64decode(png))
    for path in (run_dir / "plots").glob("*.png"):
        assert_real_image(path.read_bytes())
    assert "<script" not in html
    # No reference that would need a network or another file to open the report (links
    # to the page's own sections, '#answer', stay inside it).
    assert not re.search(r'(src|href)="(?!data:|#)', html)
    assert 'href="#answer"' in html
    assert "default-src 'none'" in html
    platform = json.loads((run_dir / "manifest.json").read_text())["platform"]
    assert platform["kernel"] in markdown and f"{platform['protobuf']} (backend " in markdown
    assert "| Profile | Metric | JSON | Protobuf (est.) | Change (est.) | Verdict |" in markdown
    assert "PARTIAL" not in markdown
    assert "| Sensors | " in markdown and "| Sensors | no telemetry" not in markdown
    assert re.search(r"\| Scheduling granted \| SCHED_\w+ \(real-time not asked", markdown)
    spread = markdown.split("## Every metric with its spread", 1)[1].split("\n## ", 1)[0]
    # The first part of the table (report.md splits one wider than 120 columns, each
    # part repeating the columns that name a row): one line per record.
    first_part = spread.split("The same rows, continued: ", 1)[0]
    table_lines = [line for line in first_part.splitlines() if line.startswith("|")]
    records = _records(run_dir)
    assert len(table_lines) - 2 == len(records)  # minus the header and its rule
    # summary.csv holds the same numbers as summary.json
    with open(run_dir / "summary.csv", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == len(records)
    numeric = ("n", "mean", "median", "stdev", "min", "max", "p90", "p99", "ci95_low", "ci95_high")
    for row, record in zip(rows, records, strict=True):
        for name in ("suite", "profile", "codec", "metric", "unit"):
            assert row[name] == (record[name] or "")  # null (telemetry's codec) is empty
        assert json.loads(row["params"]) == record["params"]
        for name in numeric:
            assert (float(row[name]) if row[name] else None) == record[name], (name, row, record)
    # junit.xml validates against the schema
    junit = run_dir / "junit.xml"
    done = xmllint_schema(junit)
    assert done.returncode == 0, done.stderr
    text = junit.read_text()
    records = _records(run_dir)
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
    assert done.returncode != 0 and "'name' is required" in done.stderr


def expected_plots(run_dir: Path) -> set[str]:
    """The plots this run's data call for, worked out from the files, not the report code."""
    codec = {r["metric"] for r in _records(run_dir) if r["suite"] == "codec"}
    link = {s["metric"] for s in _samples(run_dir, None) if s["suite"] == "link"}
    telemetry = run_dir / "telemetry.jsonl"
    sampled = telemetry.exists() and '"sample"' in telemetry.read_text()
    wanted = {
        "codec-times": codec & {"encode", "decode", "decode_access"},
        "codec-sizes": codec & {"size", "size_deflate"},
        "rtt-cdf": "rtt" in link,
        "rtt-time": "rtt" in link,
        "lateness-time": "send_lateness" in link,
        "telemetry": sampled,
    }
    return {name for name, called in wanted.items() if called}


def assert_real_image(png: bytes) -> None:
    assert png.startswith(PNG_SIGNATURE)
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    height, width = pixels.shape[:2]
    assert height > 100 and width > 100
    assert pixels.std() > 0.01, "a blank image"


#: comparison.csv's columns (issues 27 and 42).
CSV_COLUMNS = [
    "suite", "profile", "metric", "phase", "label", "baseline", "candidate", "estimate",
    "change", "ci_low", "ci_high", "p_holm", "verdict", "n", "detectable", "margin", "scale",
    "difference", "diff_low", "diff_high", "look",
]  # fmt: skip
#: The table's verdict cell for each verdict word of the file (the codecs by display name).
TABLE_WORDS = {"json": "JSON", "protobuf": "Protobuf"}
