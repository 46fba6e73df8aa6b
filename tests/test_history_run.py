"""`evbench run` adds its run to the history at its end: to --history's store, else to
the default one (EVBENCH_HISTORY); --no-history keeps it out."""

from __future__ import annotations

import os

import pytest
from report_helpers import local_run

from evbench.history import open_store, parse_url

pytestmark = pytest.mark.slow


def test_a_run_is_added_under_its_board_name_and_no_history_skips(tmp_path):
    store, default = tmp_path / "nightly.sqlite", tmp_path / "default.sqlite"
    env = dict(os.environ, EVBENCH_HISTORY=str(default))
    done = local_run(tmp_path / "named", "--suite", "codec", "--board-name", "bench-7",
                     "--history", f"sqlite:///{store}", codecs="json", env=env)  # fmt: skip
    assert "history: added to sqlite:///" in done.stderr
    assert not default.exists()  # --history wins
    local_run(tmp_path / "skipped", "--suite", "codec", "--no-history", codecs="json", env=env)
    assert not default.exists()  # --no-history adds nowhere
    with open_store(parse_url(str(store))) as history:
        (run,) = history.runs()
        assert run["board"] == "name:bench-7" and run["board_source"] == "--board-name"
        assert run["directory"] == str(tmp_path / "named")
        assert history.records(run["run_id"])
    local_run(tmp_path / "unnamed", "--suite", "codec", codecs="json", env=env)
    with open_store(parse_url(str(default))) as history:
        (run,) = history.runs()
        assert run["board_source"] != "hostname (run recorded before board identities)"
