"""The trend page opens on what moved (issue 31): a known 10x step is listed first,
coloured as a regression, drawn first with its change point marked, in headless Chromium.

The nights are copies of the committed sample run (tests/history_runs.py): 8 nights
0.1 % apart, then 9 on which protobuf's timings are 10x: a step of +900 % (to the
0.1 % the nights differ by) that the scan must find, and nothing in json. With 8
nights before it the watch cannot test it (it needs 10 at 0.05 / 12); the scan
shows it once it finds it over the nights before the newest 3 as well
(docs/history.md): 8 before and 6 after, 3 nights after the 14 it needed alone.
"""

from __future__ import annotations

import base64
import io
import os
import re

import matplotlib.image
import numpy as np
import pytest
from chromium import open_page
from history_runs import night
from report_helpers import evbench

pytestmark = pytest.mark.integration

#: matplotlib's "C3", the colour of a worse change's dashed line: #d62728.
WORSE_LINE = np.array([0xD6, 0x27, 0x28]) / 255


def test_a_ten_fold_step_is_listed_first_and_marked_on_its_plot(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    jitter = [3, 7, 4, 1, 8, 5, 2, 6, 0, 9, 4, 2, 7, 5, 3, 8, 1]
    directories = [
        night(
            runs,
            number,
            1.0 + 0.001 * jitter[number - 1],
            codec_factors={"protobuf": 10.0} if number > 8 else None,
        )
        for number in range(1, 18)
    ]
    env = dict(os.environ, EVBENCH_HISTORY=str(tmp_path / "store.sqlite"))
    assert evbench("history", "add", *map(str, directories), env=env).returncode == 0
    out = tmp_path / "trends"
    done = evbench("history", "report", "--out", str(out), env=env)
    assert done.returncode == 0, done.stderr
    page = out / "trends.html"
    html = page.read_text()

    moved = html[html.index('<h2 id="moved">') : html.index("<h2>Series that changed</h2>")]
    items = re.findall(r'<li class="(\w+)">(.*?)</li>', moved)
    assert items, moved
    kind, first = items[0]
    assert kind == "regressed"
    assert re.search(r"codec/seed/protobuf/\w+( \{[^}]*\})?: \+(899|900|901)\.\d% worse", first), (
        first
    )
    # json never moved: no change of its own is listed (only relative to protobuf, better).
    assert not any("json/" in text and "worse" in text for _kind, text in items), items

    # The first plot is that series, and its change point is drawn in the worse colour.
    series = re.search(r"codec/seed/protobuf/\w+", first).group(0)
    title, data = re.search(
        r'<img alt="([^"]*)" src="data:image/png;base64,([^"]+)"', html
    ).groups()
    assert series in title
    pixels = matplotlib.image.imread(io.BytesIO(base64.b64decode(data)), format="png")[..., :3]
    near = np.all(np.abs(pixels - WORSE_LINE) < 0.06, axis=-1)
    assert near.sum() > 100, near.sum()  # a dashed line across the axes, not a speck

    shown = open_page(
        page,
        tmp_path / "profile",
        "[document.getElementById('moved').getBoundingClientRect().top,"
        " getComputedStyle(document.querySelector('li.regressed')).color]",
        viewport=(1400, 900),
    )
    assert shown.errors == []
    top, colour = shown.value
    assert top < 900 and colour == "rgb(170, 0, 0)"  # in the first viewport; #a00
    assert all(complete and width > 100 for complete, width, _height in shown.images)
