"""`evbench history` as a user runs it, on real quick local runs; and `evbench run` adding
its run at its end (to --history's store, else EVBENCH_HISTORY's; --no-history: nowhere).

Thirteen quick json codec runs: ten as they are, then three with json.loads made to do
its work 200 times by a sitecustomize (far beyond what a loaded machine does to a night),
as a release that slowed it would. The history must find the change at the first slowed
run, the check must fail on it (exit 3) until it is accepted, and the trend page must
open in a real headless Chromium without a broken image or an error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from chromium import open_page
from report_helpers import evbench, local_run

from evbench.history import open_store, parse_url

# Put on PYTHONPATH for the slowed runs only; the agent runs unchanged.
SLOW_JSON = """
import json

_loads = json.loads


def _slow_loads(text, *args, **kwargs):
    for _ in range(199):
        _loads(text, *args, **kwargs)
    return _loads(text, *args, **kwargs)


json.loads = _slow_loads
"""

pytestmark = pytest.mark.slow

NORMAL_RUNS = 10
SLOWED_RUNS = 3


def _agent_run(out: Path, env: dict | None = None) -> Path:
    """A quick json codec run by the agent alone (no report needed), of 3 processes and 20
    payloads (under half the quick plan's time): the night is the check's replicate."""
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent", "run", "--quick", "--processes", "3",
         "--payloads", "20", "--suite", "codec", "--profile", "seed", "--codecs", "json",
         "--progress", "none", "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("nights")
    plugin = base / "plugin"
    plugin.mkdir()
    (plugin / "sitecustomize.py").write_text(SLOW_JSON)
    slowed = dict(os.environ, PYTHONPATH=str(plugin))
    runs = [_agent_run(base / f"normal-{i}") for i in range(NORMAL_RUNS)]
    runs += [_agent_run(base / f"slowed-{i}", slowed) for i in range(SLOWED_RUNS)]
    first_slowed = json.loads((runs[NORMAL_RUNS] / "manifest.json").read_text())["run_id"]
    store = base / "store.sqlite"
    env = dict(os.environ, EVBENCH_HISTORY=str(store))
    added = evbench("history", "add", *map(str, runs), env=env)
    assert added.returncode == 0, added.stderr
    assert added.stdout.count("added: ") == NORMAL_RUNS + SLOWED_RUNS
    listing = evbench("history", "list", env=env)
    assert listing.returncode == 0, listing.stderr
    rows = [line.split("|") for line in listing.stdout.splitlines()[2:]]
    boards = {cells[2].strip() for cells in rows}
    assert len(rows) == NORMAL_RUNS + SLOWED_RUNS and len(boards) == 1, listing.stdout
    return {"runs": runs, "first_slowed": first_slowed, "env": env, "store": store,
            "board": boards.pop()}  # fmt: skip


def test_adding_the_runs_again_changes_nothing(nights):
    again = evbench("history", "add", *map(str, nights["runs"]), env=nights["env"])
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("already in the store: ") == NORMAL_RUNS + SLOWED_RUNS
    assert "added: " not in again.stdout


def test_check_finds_the_slowed_run_and_fails_until_it_is_accepted(nights, tmp_path):
    env = dict(nights["env"], EVBENCH_HISTORY=str(tmp_path / "store.sqlite"))
    shutil.copy(nights["store"], tmp_path / "store.sqlite")  # accepting changes the store
    check = evbench("history", "check", "--since", "1d", env=env)
    assert check.returncode == 3, check.stdout + check.stderr
    assert "codec/seed/json/decode +" in check.stderr
    assert f"from run {nights['first_slowed']}" in check.stderr
    decode = [
        line
        for line in check.stdout.splitlines()
        if "codec/seed/json/decode:" in line and "too short" not in line
    ]
    # The 20x step is found at the first slowed run, and it is the largest change listed.
    # The nights are made back to back while the other test worker loads the machine, so
    # a step of the machine itself (tens of %) may be found too: it is not the 20x.
    slowed = [line for line in decode if f"(run {nights['first_slowed']}," in line]
    assert len(slowed) == 1, check.stdout
    assert "worse" in slowed[0] and "no version or environment changed" in slowed[0]
    sizes = {line: float(re.search(r": ([+-][\d.]+)% ", line)[1]) for line in decode}
    assert max(sizes, key=sizes.__getitem__) == slowed[0], check.stdout
    assert sizes[slowed[0]] > 1000, slowed[0]
    for series in ("codec/seed/json/decode", "codec/seed/json/decode_access"):
        listed = [line for line in check.stdout.splitlines() if f"{series}:" in line]
        for run_id in {m[1] for line in listed if (m := re.search(r"\(run (\S+), after", line))}:
            accept = evbench("history", "accept", "--board", nights["board"], "--run", run_id,
                             "--series", series, "--reason", "json slowed on purpose",
                             "--by", "the test", env=env)  # fmt: skip
            assert accept.returncode == 0, accept.stderr
    again = evbench("history", "check", env=env)
    # Other metrics may move on a loaded machine; the accepted ones no longer fail.
    assert "codec/seed/json/decode " not in again.stderr, again.stderr
    assert "codec/seed/json/decode_access " not in again.stderr, again.stderr
    accepted = [line for line in again.stdout.splitlines() if "codec/seed/json/decode:" in line]
    assert accepted and accepted[0].endswith("[accepted: json slowed on purpose]"), again.stdout
    # --since after the change: not new any more, even without the acceptance.
    assert evbench("history", "check", "--since", "2999-01-01", env=nights["env"]).returncode == 0


def test_show_lists_every_night_of_a_metric(nights):
    show = evbench("history", "show", "decode", "--board", nights["board"], "--codec", "json",
                   "--profile", "seed", env=nights["env"])  # fmt: skip
    assert show.returncode == 0, show.stderr
    rows = [line for line in show.stdout.splitlines() if " µs " in line or " ms " in line]
    assert len(rows) == NORMAL_RUNS + SLOWED_RUNS, show.stdout
    assert nights["first_slowed"] in rows[NORMAL_RUNS]
    unknown = evbench("history", "show", "decode", "--board", nights["board"],
                      "--codec", "protobuf", env=nights["env"])  # fmt: skip
    assert unknown.returncode == 2 and "no series decode of codec protobuf" in unknown.stderr


def test_list_filters_by_board_date_codec_and_profile(nights):
    for filters, count in (
        (("--board", nights["board"], "--since", "7d"), NORMAL_RUNS + SLOWED_RUNS),
        (("--codec", "json", "--profile", "seed"), NORMAL_RUNS + SLOWED_RUNS),
        (("--codec", "protobuf"), 0),
        (("--since", "2999-01-01"), 0),
    ):
        done = evbench("history", "list", *filters, env=nights["env"])
        assert done.returncode == 0, done.stderr
        assert f"{count} runs in " in done.stderr, (filters, done.stderr)


def test_export_writes_every_record(nights, tmp_path):
    out = tmp_path / "all.csv"
    done = evbench("history", "export", "--csv", str(out), env=nights["env"])
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    per_run = sum(
        len(json.loads((run / "summary.json").read_text())["records"]) for run in nights["runs"]
    )
    assert len(lines) == 1 + per_run


def test_prune_and_copy(nights, tmp_path):
    copy = tmp_path / "copy.sqlite"
    done = evbench("history", "copy", str(nights["store"]), str(copy))
    assert done.returncode == 0, done.stderr
    assert f"{NORMAL_RUNS + SLOWED_RUNS} runs copied" in done.stdout
    env = dict(nights["env"], EVBENCH_HISTORY=str(copy))
    pruned = evbench("history", "prune", "--keep", "3", env=env)
    assert (
        pruned.returncode == 0 and f"deleted {NORMAL_RUNS + SLOWED_RUNS - 3} runs" in pruned.stdout
    )
    listing = evbench("history", "list", env=env)
    assert len(listing.stdout.splitlines()) == 2 + 3
    by_days = evbench("history", "prune", "--keep", "90d", env=env)  # all from today: kept
    assert by_days.returncode == 0 and "deleted 0 runs" in by_days.stdout


@pytest.mark.integration
def test_the_trend_page_opens_in_chromium_without_broken_images_or_errors(nights, tmp_path):
    out = tmp_path / "trends"
    done = evbench("history", "report", "--out", str(out), env=nights["env"])
    assert done.returncode == 0, done.stderr
    page = out / "trends.html"
    html = page.read_text()
    assert "http://" not in html and "https://" not in html and "<script" not in html
    assert html.count("data:image/png;base64,") >= 5  # one per json metric and telemetry
    assert "codec/seed/json/decode" in html and nights["first_slowed"] in html
    assert html.count('<a href="file://') == 0  # agent-only runs: no report.html on disk
    shown = open_page(page, tmp_path / "profile")
    assert shown.errors == []
    assert len(shown.images) == html.count("data:image/png;base64,")
    for complete, width, height in shown.images:
        assert complete and width > 100 and height > 100, shown.images


#: `evbench run`'s own small plan: where its run is added does not hang on its figures.
SMALL_RUN = ("--suite", "codec", "--processes", "2", "--payloads", "20")


def test_a_run_is_added_under_its_board_name_and_no_history_skips(tmp_path):
    store, default = tmp_path / "nightly.sqlite", tmp_path / "default.sqlite"
    env = dict(os.environ, EVBENCH_HISTORY=str(default))
    done = local_run(tmp_path / "named", *SMALL_RUN, "--board-name", "bench-7",
                     "--history", f"sqlite:///{store}", codecs="json", env=env)  # fmt: skip
    assert "history: added to sqlite:///" in done.stderr
    assert not default.exists()  # --history wins
    local_run(tmp_path / "skipped", *SMALL_RUN, "--no-history", codecs="json", env=env)
    assert not default.exists()  # --no-history adds nowhere
    with open_store(parse_url(str(store))) as history:
        (run,) = history.runs()
        assert run["board"] == "name:bench-7" and run["board_source"] == "--board-name"
        assert run["directory"] == str(tmp_path / "named")
        assert history.records(run["run_id"])
    local_run(tmp_path / "unnamed", *SMALL_RUN, codecs="json", env=env)
    with open_store(parse_url(str(default))) as history:
        (run,) = history.runs()
        assert run["board_source"] != "hostname (run recorded before board identities)"
