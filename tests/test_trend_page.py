"""The trend page opens on what moved: a known 10x step listed first, coloured as a
regression, drawn first with its change point marked (headless Chromium); progress on stderr;
full plots only for series that changed. 8 nights 0.1 % apart, then 9 with protobuf 10x: the
watch cannot test it (10 nights before needed at 0.05 / 12), the scan finds it with 8 before
and 6 after. Pixels are read back by matplotlib's PNG reader.
"""

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

from evbench.history import open_store, parse_url, trend_page
from evbench.history.indexing import index_run

#: matplotlib's "C3", the colour of a worse change's dashed line: #d62728.
WORSE_LINE = np.array([0xD6, 0x27, 0x28]) / 255


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    """The 17 nights in a store and `evbench history report` run once on it (tests read)."""
    base = tmp_path_factory.mktemp("trends")
    jitter = [3, 7, 4, 1, 8, 5, 2, 6, 0, 9, 4, 2, 7, 5, 3, 8, 1]
    nights = [night(base, n, 1 + 0.001 * jitter[n - 1],
                    codec_factors={"protobuf": 10.0} if n > 8 else None)
              for n in range(1, 18)]  # fmt: skip
    env = dict(os.environ, EVBENCH_HISTORY=str(base / "store.sqlite"))
    assert evbench("history", "add", *map(str, nights), env=env).returncode == 0
    done = evbench("history", "report", "--out", str(base / "trends"), env=env)
    assert done.returncode == 0, done.stderr
    page = base / "trends" / "trends.html"
    return {"store": env["EVBENCH_HISTORY"], "stderr": done.stderr, "page": page}


def test_small_plot_puts_each_night_where_its_value_says_and_one_night_draws_none(tmp_path):
    # Three nights 1, 2, 3 on 360 x 110 px with a 6 px margin: columns 6, 180 (6 + 347 / 2,
    # rounded) and 353; rows 103 (lowest), 54 (103 - 97 / 2, rounded to even) and 6.
    pixels = matplotlib.image.imread(io.BytesIO(trend_page.sparkline([1, 2, 3])), format="png")
    assert pixels.shape == (110, 360)
    for row, column in ((103, 6), (54, 180), (6, 353)):
        assert pixels[row, column] == 0  # a black dot
    assert pixels[6, 6] == 1 and pixels[103, 353] == 1  # white where no night is
    # One night: no series has the two nights a plot needs; the progress says none was drawn.
    said: list[str] = []
    with open_store(parse_url(str(tmp_path / "store.sqlite"))) as store:
        store.add(index_run(night(tmp_path, 1)))
        page, plots, found = trend_page.render(store, progress=said.append)
    assert (plots, page.count("<figure>"), found) == (0, 0, [])
    assert any(re.fullmatch(r"trend page: 0 small plots of [1-9]\d* other series", line)
               for line in said), said  # fmt: skip


def test_the_page_opens_on_what_moved_with_progress_and_bounded(report, monkeypatch):
    progress = report["stderr"].splitlines()
    assert progress[0].startswith("trend page: surveying 1 board")
    assert any(re.match(r"trend page: plot 1 of \d+: ", line) for line in progress)
    assert any(line.startswith("trend page: done in ") for line in progress)
    html = report["page"].read_text()
    # What moved first, then the changed series' plots (protobuf's), then the small ones.
    moved, changed = html.index('<h2 id="moved">'), html.index("<h2>Series that changed</h2>")
    small = html.index("<h2>Every other series</h2>")
    assert moved < changed < html.index("<figure>") < small
    first_plot = re.search(r'<img alt="([^"]*)"', html[changed:]).group(1)
    assert "codec/seed/protobuf/" in first_plot
    assert "codec/seed/json/size" in html[small:]  # a fact, drawn small
    # Bounded: with room for 1 full plot and 2 small ones, the rest are counted.
    monkeypatch.setattr(trend_page, "MAX_PLOTS", 1)
    monkeypatch.setattr(trend_page, "MAX_SMALL", 2)
    with open_store(parse_url(report["store"])) as store:
        page, plots, found = trend_page.render(store)
        keys = len(store.series_keys("name:bench-1"))
    assert plots == page.count("<figure>") == 3
    changed_series = len({c.series for c in found})
    assert f"{keys - 3} more not drawn" in page and changed_series > 1


@pytest.mark.integration
def test_a_ten_fold_step_is_listed_first_and_marked_on_its_plot(report, tmp_path):
    html = report["page"].read_text()
    # Self-contained: nothing fetched, no script, no link to a report that is not on disk.
    assert "http://" not in html and "https://" not in html and "<script" not in html
    assert '<a href="file://' not in html
    moved = html[html.index('<h2 id="moved">') : html.index("<h2>Series that changed</h2>")]
    items = re.findall(r'<li class="(\w+)">(.*?)</li>', moved)
    assert items, moved
    kind, first = items[0]
    assert kind == "regressed"
    size = r"codec/seed/protobuf/\w+( \{[^}]*\})?: \+(899|900|901)\.\d% worse"
    assert re.search(size, first), first
    assert "(run 20260009T020000Z-000009," in first, first  # night 9, the step's first
    # json never moved: no change of its own is listed (only relative to protobuf, better).
    assert not any("json/" in text and "worse" in text for _kind, text in items), items
    # The first plot is that series, and its change point is drawn in the worse colour.
    series = re.search(r"codec/seed/protobuf/\w+", first).group(0)
    image = r'<img alt="([^"]*)" src="data:image/png;base64,([^"]+)"'
    title, data = re.search(image, html).groups()
    assert series in title
    pixels = matplotlib.image.imread(io.BytesIO(base64.b64decode(data)), format="png")[..., :3]
    near = np.all(np.abs(pixels - WORSE_LINE) < 0.06, axis=-1)
    assert near.sum() > 100, near.sum()  # a dashed line across the axes, not a speck
    shown = open_page(
        report["page"],
        tmp_path / "profile",
        "[document.getElementById('moved').getBoundingClientRect().top,"
        " getComputedStyle(document.querySelector('li.regressed')).color]",
        viewport=(1400, 900),
    )
    assert shown.errors == []
    top, colour = shown.value
    assert top < 900 and colour == "rgb(170, 0, 0)"  # in the first viewport; #a00
    assert len(shown.images) == html.count("data:image/png;base64,")  # every plot shown
    for complete, width, height in shown.images:
        assert complete and width > 100 and height > 100, shown.images
