"""lab.html and its nightly comparison, from copies of the committed sample run laid out as
`evbench lab run` lays them out, in a real SQLite history store. Two boards share one machine
(one board identity) and run in parallel: each is compared only with itself. The page opens
in headless Chromium; its cells are worked by hand from core-v1's summary (json's encode
median 5.7077e-05 s is 57.1 µs, its size 995 B).
"""

import shutil
from pathlib import Path

import pytest
from chromium import open_page
from history_runs import CORE_V1, night

from evbench.history import open_store, parse_url
from evbench.history.indexing import index_run
from evbench.lab import index, nightly_compare, plan, report

CODEC_LINK_V1 = CORE_V1.parent / "codec-link-v1"
PLAN = {
    "boards": [{"board": "ssh://root@localhost", "name": "a"},
               {"board": "ssh://root@127.0.0.1", "name": "b"}],
    "matrix": {"suites": ["codec"], "profiles": ["seed"], "codecs": ["json,protobuf"]},
    "options": ["--quick"],
}  # fmt: skip


def _lab_night(
    root: Path, name: str, numbers: dict, runs: Path, lab_plan=PLAN, factor=1.0, source=CORE_V1
) -> dict:
    """{board: run directory} of a lab whose entries ran these nights (timings x `factor`)."""
    lab = root / name
    lab.mkdir()
    parsed = plan.parse(lab_plan)
    lab_index = index.LabIndex(lab, root / "LAB.yaml", parsed.entries)
    placed = {}
    for entry in parsed.entries:
        run = lab / "runs" / entry.id
        run.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(night(runs, numbers[entry.board.label], factor, source=source), run)
        lab_index.update(entry.id, run_dir=str(run.relative_to(lab)), status="complete")
        placed[entry.board.label] = run
    return placed


def _history(tmp_path: Path, runs: list[Path], monkeypatch) -> None:
    store = tmp_path / "history.sqlite"
    with open_store(parse_url(str(store))) as history:
        for run in runs:
            history.add(index_run(run))
    monkeypatch.setenv("EVBENCH_HISTORY", str(store))


def test_a_two_board_lab_night_compares_each_board_only_with_itself(tmp_path, monkeypatch):
    runs = tmp_path / "copies"
    runs.mkdir()
    # Night 1: b at 1 (day 1), a at 2; night 2: b at 3, a at 4. Ordered by time alone,
    # a's baseline on night 2 would be b's run of the same night (3).
    first = _lab_night(tmp_path, "lab-1", {"a": 2, "b": 1}, runs)
    second = _lab_night(tmp_path, "lab-2", {"a": 4, "b": 3}, runs)
    _history(tmp_path, [*first.values(), *second.values()], monkeypatch)
    for board in ("a", "b"):
        previous = nightly_compare.previous_run(second[board])
        assert previous is not None and Path(previous["directory"]) == first[board], board
        assert nightly_compare.previous_run(first[board]) is None  # its first night
    # A run outside any lab has no entry identity and is nobody's baseline here.
    assert nightly_compare.lab_entry(runs) is None


def test_a_night_faster_beyond_max_change_is_no_regression_on_the_lab_page(tmp_path, monkeypatch):
    """Compare fails (3) beyond --max-change either way: a night at 0.3x the previous (beyond
    50 % both ways: x1.5 or x1/1.5) is an improvement, the next at 10x (3.0 / 0.3) a
    regression. Runs of 8 codec processes (codec-link-v1): two runs of core-v1's 2 cannot
    call a row (n too small: listed, not counted)."""
    one_board = dict(PLAN, boards=PLAN["boards"][:1])
    runs = tmp_path / "copies"
    runs.mkdir()
    nights = [
        _lab_night(tmp_path, f"lab-{n}", {"a": n}, runs, one_board, factor, CODEC_LINK_V1)["a"]
        for n, factor in ((1, 1.0), (2, 0.3), (3, 3.0))
    ]
    _history(tmp_path, nights, monkeypatch)
    faster = nightly_compare.against_previous(nights[1], tmp_path / "logs" / "2.compare.txt")
    slower = nightly_compare.against_previous(nights[2], tmp_path / "logs" / "3.compare.txt")
    assert faster["baseline"] == str(nights[0]) and slower["baseline"] == str(nights[1])
    assert faster["exit_code"] == slower["exit_code"] == 3  # compare fails either way
    assert faster["regressed"] is False and faster.get("improved_beyond_max_change") is True
    assert slower["regressed"] is True and slower.get("improved_beyond_max_change") is False
    entries = [_entry("a", None, comparison=c, exit_code=3, run_dir=None) for c in (faster, slower)]
    page = report.render(tmp_path, {"plan": "LAB.yaml", "entries": entries})
    rows = page.split("<tr")[2:]  # the header row first
    assert "REGRESSED" not in rows[0] and "improved beyond --max-change" in rows[0]
    assert "regressed-entry" not in rows[0]
    assert "REGRESSED" in rows[1] and "regressed-entry" in rows[1]


def _entry(board: str, regressed: bool | None, **changes) -> dict:
    previous = {"baseline": "previous", "baseline_run_id": f"{board}-previous-night"}
    return {
        "board": board, "suite": "codec", "profile": "seed", "codecs": "json,protobuf",
        "status": "complete", "exit_code": 0, "duration_s": 31.0, "error": None,
        "run_dir": board, "comparison": {**previous, "regressed": regressed}, **changes,
    }  # fmt: skip


@pytest.mark.integration  # Chromium
def test_the_lab_page_gives_units_and_colours_a_regressed_entry(tmp_path):
    for board in ("am62x-a", "am62x-b"):
        shutil.copytree(CORE_V1, tmp_path / board)
    lab_index = {
        "plan": "LAB.yaml", "started": "2026-12-02T01:00:00Z", "finished": "2026-12-02T01:05:00Z",
        "entries": [_entry("am62x-a", regressed=True), _entry("am62x-b", regressed=False)],
    }  # fmt: skip
    page = report.write(tmp_path, lab_index)
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


def test_an_entry_whose_run_is_complete_is_not_retried_however_it_ended(tmp_path, monkeypatch):
    # A stand-in for `evbench run`: the real path needs an entry past ENTRY_TIMEOUT (four
    # hours). Its run holds the `complete` marker, and its process was killed at the deadline,
    # which the lab reads as a transient failure (exit 4, partial: README) worth another attempt.
    from evbench.lab import runner

    parsed = plan.parse({"boards": ["local"], "matrix": {"suites": ["codec"],
                        "profiles": ["seed"], "codecs": ["json"]}, "retries": 2})  # fmt: skip
    (entry,) = parsed.entries
    attempts = []

    def killed_at_the_deadline(self, entry, out, log):
        attempts.append(out)
        out.mkdir(parents=True)
        (out / "complete").write_text("")
        return 4, "evbench: error: the entry did not end in 14400 s\n"

    monkeypatch.setattr(runner.LabRun, "_run_one", killed_at_the_deadline)
    lab_index = index.LabIndex(tmp_path, tmp_path / "LAB.yaml", parsed.entries)
    code = runner.LabRun(parsed, tmp_path, lab_index)._entry(entry)
    assert code == 4
    assert attempts == [tmp_path / "runs" / entry.id]  # one attempt, no retry
    (record,) = index.read(tmp_path)["entries"]
    assert (record["status"], record["attempts"]) == ("complete", 1), record
