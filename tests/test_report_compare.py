"""evbench compare on real local runs, one of them with a codec slowed for real, one with
protobuf's own switch to its pure-Python backend (which the run itself warns of); damaged
copies of a run render what exists, marked partial."""

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from report_helpers import evbench, junit_numbers, local_run, slow_json_env, xmllint_schema

OTHER_PLAN = ("--processes", "4", "--values", "3")


def codec_run(out: Path, codecs="json,protobuf", env: dict | None = None, extra=()) -> Path:
    """The run's directory; what it printed is in `NAME.stdout` beside it."""
    done = local_run(out, "--suite", "codec", *extra, codecs=codecs, env=env)
    out.with_suffix(".stdout").write_text(done.stdout)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("compare")
    slowed_env = slow_json_env(base / "plugin", 100)  # json.loads works 100 times
    pure_python = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    return {
        "a": codec_run(base / "a"),
        "slow": codec_run(base / "slow", env=slowed_env),
        "json_only": codec_run(base / "json_only", codecs="json"),
        # Another sample plan, and protobuf on its pure-Python backend (many times slower).
        "pure": codec_run(base / "pure", env=pure_python, extra=OTHER_PLAN),
    }  # fmt: skip


def test_a_run_against_itself_prints_the_table_and_does_not_regress_and_one_is_refused(runs):
    done = evbench("compare", "--baseline", str(runs["a"]), str(runs["a"]))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "A (" in out and "B (" in out  # the same host twice: the runs get letters
    for label in ("JSON", "Protobuf (est.)", "Change (est.)", "Verdict", "Serialization",
                  "Deserialization", "Size, deflated", "p (Holm)", "+0.0%"):  # fmt: skip
        assert label in out
    assert "| REGRESSION" not in out
    done = evbench("compare", str(runs["a"]))
    assert done.returncode == 2 and "compare needs two runs or more" in done.stderr


def test_slowed_codec_regresses_named_and_other_codecs_compare_common_rows(runs, tmp_path):
    criteria = tmp_path / "criteria.json"
    # --max-change 150 % (2.5x): two runs of one code can differ by 1.5x on a busy machine.
    # The slowdown is 100x because one replicate of the baseline can be 8x slow there (a
    # 4 ms time slice inside two of a process's three 0.6 ms spans), which puts the
    # interval's lower end near slowdown / 8: 20x reached down to 2.2x, not beyond 2.5x.
    criteria.write_text(json.dumps({"default_percent": 1000, "metrics": {"decode": 300}}))
    junit = tmp_path / "junit.xml"
    done = evbench(
        "compare", "--baseline", str(runs["a"]), str(runs["slow"]), "--max-change", "150",
        "--criteria", str(criteria), "--junit", str(junit),
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "codec/seed/json/decode changed +" in done.stderr, done.stdout + done.stderr
    assert "beyond --max-change 150%" in done.stderr and "codec/seed/protobuf" not in done.stderr
    assert "| REGRESSION" in done.stdout
    check = xmllint_schema(junit)
    assert check.returncode == 0, check.stderr
    text = junit.read_text()
    assert 'failures="' in text and 'failures="0"' not in text
    assert 'message="codec/seed/json/decode changed' in text
    cases = junit_numbers(junit)
    assert ("codec.seed.json", "decode") in cases
    for numbers in cases.values():  # every metric's value and unit, in both places
        for place in ("properties", "system-out"):
            assert numbers[place]["value"] and numbers[place]["unit"], (place, numbers)
            float(numbers[place]["value"])
    done = evbench("compare", str(runs["a"]), str(runs["json_only"]))
    # Whether JSON's rows moved is the machine's doing (two real runs minutes apart on a
    # shared VM once differed x1.99, exit 3); this test checks which rows are compared.
    assert done.returncode in (0, 3), done.stderr
    block = done.stdout.split("not comparable (")[1].splitlines()[1:]
    left_out = "  codec/seed/protobuf/decode [Deserialization] in A ("
    why = "codec protobuf not measured there"
    assert any(line.startswith(left_out) and line.endswith(why) for line in block), done.stdout
    rows = [line.split("|") for line in done.stdout.split("not comparable")[0].splitlines()]
    codecs = {cells[2].strip() for cells in rows if len(cells) > 4 and cells[0].strip() == "codec"}
    assert codecs == {"JSON"}  # only the rows both runs have


def test_a_pure_python_protobuf_under_another_plan_fails_names_the_backend_and_warns(runs):
    done = evbench("compare", "--baseline", str(runs["a"]), str(runs["pure"]))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "codec/seed/protobuf/decode changed +" in done.stderr
    assert "protobuf backend:" in done.stderr and "-> python" in done.stderr
    assert "processes:" in done.stdout  # the plan differs, and is named
    assert "not comparable" not in done.stdout  # timed rows were compared across the plans
    # the pure-Python run warns before the answer, in the terminal and the report
    out = runs["pure"]
    printed = out.with_suffix(".stdout").read_text().splitlines()
    assert printed[0].startswith("WARNING: protobuf ran on its pure-Python backend (this run)")
    assert printed.index("") < next(i for i, line in enumerate(printed) if "answer" in line)
    assert max(len(line) for line in printed[: printed.index("")]) <= 100
    markdown = (out / "report.md").read_text().splitlines()
    headings = [line for line in markdown if line.startswith("## ")]
    assert headings[0] == "## **Environment: WARNING, these numbers do not stand for the board**"
    assert headings[1].startswith("## The answer")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["platform"]["protobuf_backend"] == "python"  # what protobuf said it ran
    assert f"- protobuf: {manifest['platform']['protobuf']}, python backend" in markdown
    html = (out / "report.html").read_text()
    box = html[html.index('<section id="environment"') : html.index('<section id="answer"')]
    assert '<div class="warning">' in box and "pure-Python backend" in box


#: Run A copied and damaged (files dropped, samples.jsonl edited): the first line says what
#: the reader found (no reason in the manifest); report.md names what is missing or wrong
#: and keeps the figures ({last}: samples.jsonl's last line; " *": a busy machine's row).
DAMAGED = {
    # the summary is rebuilt from the raw samples: the figures are all there
    "no-summary": (["summary.json", "complete"], None, "missing summary.json, complete",
                   [r"\| seed \| Deserialization( \*)? \|"]),
    "only-samples": (["manifest.json", "summary.json", "SHA256SUMS", "complete"], None,
                     "missing manifest.json, summary.json, SHA256SUMS, complete",
                     [r"\| codec \| seed \| protobuf \| Serialization \| 24 \|"]),  # 8 x 3 values
    "changed-file": ([], lambda text: text.replace('"values": [', '"values": [1e-3, ', 1),
                     "checksum: samples.jsonl: checksum mismatch",
                     [r"checksum: samples\.jsonl: checksum mismatch\."]),
    "unreadable-line": (["summary.json"], lambda text: text + "not json\n", "missing summary.json",
                        [r"samples\.jsonl line {last} cannot be read\.",
                         r"\| seed \| Serialization( \*)? \|"]),
}  # fmt: skip


@pytest.mark.parametrize(("drop", "edit", "said", "patterns"), DAMAGED.values(), ids=DAMAGED)
def test_a_damaged_run_renders_what_exists_as_partial(runs, tmp_path, drop, edit, said, patterns):
    run = tmp_path / "copy"
    shutil.copytree(runs["a"], run, ignore=shutil.ignore_patterns("report.*", "plots", "*.csv"))
    for name in drop:
        (run / name).unlink()
    samples = run / "samples.jsonl"
    if edit:
        samples.write_text(edit(samples.read_text()))
    done = evbench("report", str(run))
    assert done.returncode == 4, done.stderr
    first, rendered = done.stderr.splitlines()[:2]
    assert first == f"PARTIAL: {said}"
    missing = f"missing {', '.join(drop)}" if drop else ""  # a file's name, said as missing
    assert rendered.startswith(f"PARTIAL run rendered ({missing}")
    markdown = (run / "report.md").read_text()
    first, _blank, title = markdown.splitlines()[:3]
    assert first == f"**PARTIAL: {said}**" and title.startswith("# evbench run ")
    assert "(PARTIAL)" in title
    assert not drop or f"Missing files: {', '.join(drop)}." in markdown
    last = samples.read_text().count("\n")
    for pattern in patterns:
        assert re.search(pattern.format(last=last), markdown), pattern
    assert (run / "plots" / "codec-times.png").exists()
    assert 'class="partial"' in (run / "report.html").read_text()
