"""report.html in a real headless Chromium, driven over the DevTools protocol.

Chromium is driven by tests/chromium.py (DevTools on a pipe, no port). The
test loads the report with background networking disabled, asks the page
whether every image decoded, collects console errors and uncaught exceptions,
and takes a screenshot.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import matplotlib.image
import pytest
from chromium import open_page
from report_helpers import local_run

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html") / "run"
    local_run(out, "--suite", "codec")
    return out / "report.html"


def test_report_opens_in_chromium_without_broken_images_or_errors(report: Path, tmp_path):
    shown = open_page(report, tmp_path / "profile", screenshot=True)
    assert len(shown.images) == report.read_text().count("data:image/png;base64,") >= 2
    for complete, width, height in shown.images:
        assert complete and width > 100 and height > 100, shown.images
    assert shown.errors == []
    pixels = matplotlib.image.imread(io.BytesIO(shown.screenshot), format="png")
    assert pixels.shape[0] >= shown.height - 1 and pixels.std() > 0.01
    (report.parent / "screenshot.png").write_bytes(shown.screenshot)


def test_the_page_check_sees_a_broken_image(report: Path, tmp_path):
    """The check above can fail: a report whose image data is corrupt is caught."""
    broken = tmp_path / "broken.html"
    broken.write_text(report.read_text().replace("base64,iVBOR", "base64,AAAAA", 1))
    shown = open_page(broken, tmp_path / "profile")
    assert 0 in [width for _complete, width, _height in shown.images]


#: Where the answer's and the contents' boxes end, and where the first plot and the first
#: table start, in CSS pixels from the top of the page.
_LAYOUT = (
    "JSON.stringify({"
    "answer: document.getElementById('answer').getBoundingClientRect().bottom,"
    "contents: document.getElementById('contents').getBoundingClientRect().bottom,"
    "plot: document.querySelector('figure').getBoundingClientRect().top,"
    "table: document.querySelector('table').getBoundingClientRect().top})"
)


def test_the_answer_and_contents_are_in_the_first_viewport_and_plots_before_tables(
    report: Path, tmp_path
):
    shown = open_page(report, tmp_path / "profile", expression=_LAYOUT, viewport=(1400, 900))
    layout = json.loads(shown.value)
    assert layout["answer"] <= 900 and layout["contents"] <= 900, layout
    assert layout["plot"] < layout["table"], layout  # the key plots before the first table
    assert shown.errors == []
    html = report.read_text()
    for target in re.findall(r'<nav id="contents">.*?</nav>', html)[0].split('href="#')[1:]:
        assert f'id="{target.split(chr(34))[0]}"' in html  # every link of the contents lands


def test_report_md_opens_on_contents_answer_then_plots(report: Path):
    lines = (report.parent / "report.md").read_text().splitlines()
    contents = next(line for line in lines if line.startswith("Contents: "))
    # GitHub's anchor of the answer's heading, worked by hand: lower case, punctuation
    # dropped, spaces to hyphens.
    assert contents.startswith(
        "Contents: [The answer](#the-answer-protobuf-against-json-on-this-machine) · [Plots]"
    )
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[:2] == ["## The answer: Protobuf against JSON, on this machine", "## Plots"]
    assert lines.index(contents) < lines.index(headings[0])
