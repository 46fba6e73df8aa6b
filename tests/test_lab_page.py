"""lab.html in a real headless Chromium: figures in readable units, a regressed entry's
row coloured (issue 31).

The page is rendered from a lab index naming the committed sample run
(tests/data/runs/core-v1) for two boards, one of them regressed against its previous
night. The expected cells are worked out from that run's summary by hand: json's
encode median is 5.7077e-05 s, 57.1 µs to three digits; its size 995 B.
"""

from __future__ import annotations

import shutil

import pytest
from chromium import open_page
from conftest import ROOT

from evbench.lab import report

pytestmark = pytest.mark.integration

CORE_V1 = ROOT / "tests" / "data" / "runs" / "core-v1"


def _entry(board: str, regressed: bool) -> dict:
    previous = {"baseline": "previous", "baseline_run_id": f"{board}-previous-night"}
    return {
        "board": board, "suite": "codec", "profile": "seed", "codecs": "json,protobuf",
        "status": "complete", "exit_code": 0, "duration_s": 31.0, "error": None,
        "run_dir": board, "comparison": {**previous, "regressed": regressed},
    }  # fmt: skip


def test_the_lab_page_gives_units_and_colours_a_regressed_entry(tmp_path):
    for board in ("am62x-a", "am62x-b"):
        shutil.copytree(CORE_V1, tmp_path / board)
    index = {
        "plan": "LAB.yaml", "started": "2026-12-02T01:00:00Z", "finished": "2026-12-02T01:05:00Z",
        "entries": [_entry("am62x-a", regressed=True), _entry("am62x-b", regressed=False)],
    }  # fmt: skip
    page = report.write(tmp_path, index)
    html = page.read_text()
    assert "codec seed json encode: median 57.1 µs (n=10)" in html
    assert "codec seed json size: median 995.0 B (n=200)" in html
    assert "codec seed protobuf encode: median 1.1 µs (n=10)" in html
    # The browser's own reading of each row's background colour.
    shown = open_page(
        page,
        tmp_path / "profile",
        "[...document.querySelectorAll('tr')].slice(1).map("
        "r => getComputedStyle(r).backgroundColor)",
    )
    assert shown.errors == []
    regressed, fine = shown.value
    assert regressed == "rgb(246, 198, 198)"  # #f6c6c6: the regressed entry
    assert fine == "rgb(230, 244, 230)"  # #e6f4e6: a complete entry, not regressed
