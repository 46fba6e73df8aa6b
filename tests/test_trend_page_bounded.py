"""The trend page opens on what moved, says what it does on stderr, and stays bounded
(issue 43): full plots only for series that changed, small ones for the rest.

The small plot's pixels are read back by matplotlib's PNG reader (not the module's
writer) and checked against where the values must fall by hand.
"""

from __future__ import annotations

import io
import os
import re

import matplotlib.image
from history_runs import night
from report_helpers import evbench

from evbench.history import open_store, parse_url, trend_page


def test_small_plot_puts_each_night_where_its_value_says():
    # Three nights 1, 2, 3 on 360 x 110 px with a 6 px margin: columns 6, 180 (6 + 347 / 2,
    # rounded) and 353; rows 103 (lowest), 54 (103 - 97 / 2, rounded to even) and 6.
    pixels = matplotlib.image.imread(io.BytesIO(trend_page.sparkline([1, 2, 3])), format="png")
    assert pixels.shape == (110, 360)
    for row, column in ((103, 6), (54, 180), (6, 353)):
        assert pixels[row, column] == 0  # a black dot
    assert pixels[6, 6] == 1 and pixels[103, 353] == 1  # white where no night is


def test_the_page_opens_on_what_moved_with_progress_and_bounded(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    runs.mkdir()
    # 8 nights 0.1 % apart, then 9 with protobuf 10x (tests/test_trend_page.py's step).
    jitter = [3, 7, 4, 1, 8, 5, 2, 6, 0, 9, 4, 2, 7, 5, 3, 8, 1]
    nights = [night(runs, n, 1 + 0.001 * jitter[n - 1],
                    codec_factors={"protobuf": 10.0} if n > 8 else None)
              for n in range(1, 18)]  # fmt: skip
    env = dict(os.environ, EVBENCH_HISTORY=str(tmp_path / "store.sqlite"))
    assert evbench("history", "add", *map(str, nights), env=env).returncode == 0
    done = evbench("history", "report", "--out", str(tmp_path / "trends"), env=env)
    assert done.returncode == 0, done.stderr
    progress = done.stderr.splitlines()
    assert progress[0].startswith("trend page: surveying 1 board")
    assert any(re.match(r"trend page: plot 1 of \d+: ", line) for line in progress)
    assert any(line.startswith("trend page: done in ") for line in progress)
    html = (tmp_path / "trends" / "trends.html").read_text()
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
    with open_store(parse_url(env["EVBENCH_HISTORY"])) as store:
        page, plots, found = trend_page.render(store)
        keys = len(store.series_keys("name:bench-1"))
    assert plots == page.count("<figure>") == 3
    changed_series = len({c.series for c in found})
    assert f"{keys - 3} more not drawn" in page and changed_series > 1
