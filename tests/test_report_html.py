"""report.html in a real headless Chromium (tests/chromium.py): images decode, no console
error, the answer in the first window; report.md's opening and environment box; the run's
telemetry per phase from this machine's own sensors."""

import hashlib
import io
import json
import re
import shutil
import sys
import sysconfig
from pathlib import Path

import matplotlib.image
import pytest
from chromium import open_page
from report_helpers import evbench, local_run

from evbench_agent.telemetry import phase_records, sysfs

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html") / "run"
    local_run(out, "--suite", "codec")
    return out / "report.html"


#: Where the answer's and the contents' boxes end, and where the first plot and the first
#: table start, in CSS pixels from the top of the page.
_LAYOUT = (
    "JSON.stringify({"
    "answer: document.getElementById('answer').getBoundingClientRect().bottom,"
    "contents: document.getElementById('contents').getBoundingClientRect().bottom,"
    "environment: document.getElementById('environment').getBoundingClientRect().bottom,"
    "plot: document.querySelector('figure').getBoundingClientRect().top,"
    "table: document.querySelector('table').getBoundingClientRect().top})"
)


@pytest.fixture(scope="module")
def shown(report: Path, tmp_path_factory):
    """The report in one Chromium, a 1400 x 900 window: its images, errors, layout, shot."""
    profile = tmp_path_factory.mktemp("profile")
    return open_page(report, profile, expression=_LAYOUT, screenshot=True, viewport=(1400, 900))


def test_opens_in_chromium_answer_contents_first_plots_before_tables(report, shown, tmp_path):
    assert len(shown.images) == report.read_text().count("data:image/png;base64,") >= 2
    for complete, width, height in shown.images:
        assert complete and width > 100 and height > 100, shown.images
    assert shown.errors == []
    pixels = matplotlib.image.imread(io.BytesIO(shown.screenshot), format="png")
    assert pixels.shape[0] >= shown.height - 1 and pixels.std() > 0.01
    (report.parent / "screenshot.png").write_bytes(shown.screenshot)
    # the answer and the contents in the first viewport, and plots before tables
    layout = json.loads(shown.value)
    assert layout["answer"] <= 900 and layout["contents"] <= 900, layout
    assert 0 < layout["environment"] <= 900, layout  # the whole environment box
    assert layout["plot"] < layout["table"], layout  # the key plots before the first table
    html = report.read_text()
    for target in re.findall(r'<nav id="contents">.*?</nav>', html)[0].split('href="#')[1:]:
        assert f'id="{target.split(chr(34))[0]}"' in html  # every link of the contents lands
    # the check can fail: a report whose image data is corrupt is caught
    broken = tmp_path / "broken.html"
    broken.write_text(report.read_text().replace("base64,iVBOR", "base64,AAAAA", 1))
    shown = open_page(broken, tmp_path / "profile")
    assert 0 in [width for _complete, width, _height in shown.images]


def test_report_md_opens_on_contents_environment_answer_plots_box_says_manifest(report: Path):
    lines = (report.parent / "report.md").read_text().splitlines()
    contents = next(line for line in lines if line.startswith("Contents: "))
    # GitHub's anchor of the answer's heading by hand: lower case, no punctuation, hyphens
    assert contents.startswith("Contents: [Environment](#environment")
    answer = "[The answer](#the-answer-protobuf-against-json-on-this-machine)"
    assert f" · {answer} · [Plots]" in contents
    headings = [line for line in lines if line.startswith("## ")]
    assert "Environment" in headings[0]
    assert headings[1:3] == ["## The answer: Protobuf against JSON, on this machine", "## Plots"]
    assert lines.index(contents) < lines.index(headings[0])
    # Values read from manifest.json and this interpreter (the run's agent), not the report
    # code: the box's lines in report.md, the same values in report.html's box.
    manifest = json.loads((report.parent / "manifest.json").read_text())
    platform = manifest["platform"]
    assert platform["python_debug"] is bool(sysconfig.get_config_var("Py_DEBUG"))
    assert platform["python_dev_mode"] is bool(sys.flags.dev_mode)
    build = "debug build" if platform["python_debug"] else "release build"
    one, five, fifteen = platform["load_avg"]
    expected = [
        f"- protobuf: {platform['protobuf']}, {platform['protobuf_backend']} backend",
        f"- Python: {platform['python_implementation']} {platform['python']} ({build})",
        f"- Agent: {platform['agent']}",
        f"- Codecs: json {platform['codecs']['json']}; protobuf {platform['codecs']['protobuf']}",
        f"- Clock source: {platform['clock']['timer']} ({platform['clock']['clocksource']}, "
        f"resolution {platform['clock']['resolution_s']} s)",
    ]
    markdown = (report.parent / "report.md").read_text()
    box = markdown.split("## ", 2)[1]  # the first section: the environment
    assert box.startswith(("Environment", "**Environment")), box
    lines = box.splitlines()
    assert [line for line in expected if line not in lines] == [], lines
    assert not [line for line in lines if "Link responder" in line]  # a codec run: no link
    load = next(line for line in lines if line.startswith("- Load: "))
    assert load.startswith(f"- Load: load average {one:g} / {five:g} / {fifteen:g} at the start")
    policies = manifest["telemetry"]["sensors_detail"]["cpufreq"]
    governors = sorted({p["governor"] for p in policies})
    governor = next(line for line in lines if line.startswith("- CPU governor: "))
    if governors:
        assert governor.startswith(f"- CPU governor: {', '.join(governors)}")
    else:
        assert "no cpufreq policy" in governor
    html = report.read_text()
    shown = html[html.index('<section id="environment"') :].split("</section>", 1)[0]
    assert f"<dd>{platform['protobuf']}, {platform['protobuf_backend']} backend</dd>" in shown
    assert f"<dd>{platform['agent']}</dd>" in shown


def test_telemetry_per_phase_its_sensors_and_throttled_phases_open_on_the_warning(report, tmp_path):
    """The run's manifest edited as a throttled board writes it, its checksum renewed: the
    box warns, naming the phase."""
    run = tmp_path / "run"
    shutil.copytree(report.parent, run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["telemetry"]["throttled_phases"] = [
        {"phase": "codec", "kind": None, "profile": "seed", "codec": None,
         "reasons": ["thermal_zone0 above its passive trip point"]},
    ]  # fmt: skip
    (run / "manifest.json").write_text(json.dumps(manifest))
    digest = hashlib.sha256((run / "manifest.json").read_bytes()).hexdigest()
    listing = (run / "SHA256SUMS").read_text().splitlines()
    sums = [f"{digest}  manifest.json" if s.endswith(" manifest.json") else s for s in listing]
    (run / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    done = evbench("report", str(run))
    assert done.returncode == 0, done.stderr
    markdown = (run / "report.md").read_text()
    heading = next(line for line in markdown.splitlines() if line.startswith("## "))
    assert heading == "## **Environment: WARNING, these numbers do not stand for the board**"
    throttled = "- **the kernel throttled the CPU during 1 phase(s): codec seed (thermal_zone0"
    assert throttled in markdown
    assert "- Throttling: 1 phase(s) throttled" in markdown
    html = (run / "report.html").read_text()
    box = html[html.index('<section id="environment"') : html.index('<section id="answer"')]
    assert '<div class="warning">' in box and "the kernel throttled the CPU" in box
    # the run has telemetry per phase and names its sensors
    out = report.parent
    header, samples, _ = phase_records.read_telemetry(out / "telemetry.jsonl")
    assert header["format"] == "evbench-telemetry" and header["interval_s"] == 1.0
    assert samples and all(0 <= s["cpu_percent"] <= 100 for s in samples)
    assert all(s["memory_used"] > 0 and len(s["load_avg"]) == 3 for s in samples)
    manifest = json.loads((out / "manifest.json").read_text())
    # this machine's sensors as the agent found them: on CI and here, none
    assert manifest["telemetry"]["sensors"] == sysfs.discover("/sys").summary()
    assert manifest["telemetry"]["sampler_exit"] == 0
    records = json.loads((out / "summary.json").read_text())["records"]
    records = [r for r in records if r["suite"] == "telemetry"]
    phases = {(r["params"]["phase"], r["profile"]) for r in records}
    assert phases == {("codec", None), ("codec", "seed")}
    seed = {r["metric"]: r for r in records if r["profile"] == "seed"}
    assert seed["cpu_util"]["unit"] == "percent" and seed["cpu_util"]["n"] >= 1
    assert seed["rss_max"]["unit"] == "bytes" and seed["rss_max"]["max"] > 1_000_000
    if not sysfs.discover("/sys").has_power():
        assert not any(r["metric"].startswith("energy") for r in records)
    markers = [json.loads(line) for line in (out / "markers.jsonl").read_text().splitlines()]
    events = {(m["event"], m["profile"], m.get("worker")) for m in markers}
    assert events >= {("start", "seed", 0), ("end", "seed", 1)}
    checksums = (out / "SHA256SUMS").read_text()
    assert "telemetry.jsonl" in checksums and "markers.jsonl" in checksums
