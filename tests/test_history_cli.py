"""`evbench history` as a user runs it, on real quick local runs; `evbench run` adding its run
(to --history's store, else EVBENCH_HISTORY's; --no-history: nowhere); reading that never
writes (docs/history.md, "Reading never writes"): each case a new process on a real SQLite
file (someone else's, read-only, missing, empty, damaged, malformed, a `file:` look-alike).

Thirteen quick json codec runs, the last three with json.loads doing its work 200 times: the
check must find the step at the first slowed run and fail (exit 3) until it is accepted.
"""

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_command
from history_runs import CORE_V1, night, stored
from report_helpers import evbench, local_run, slow_json_env

from evbench.history import open_store, parse_url

pytestmark = pytest.mark.slow

NORMAL_RUNS, SLOWED_RUNS = 10, 3
RUNS = NORMAL_RUNS + SLOWED_RUNS


def _agent_run(out: Path, env: dict | None = None) -> Path:
    """A quick json codec run by the agent alone, of 3 processes and 20 payloads (under half
    the quick plan's time): the night is the check's replicate."""
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent", "run", "--quick", "--processes", "3",
         "--payloads", "20", "--suite", "codec", "--profile", "seed", "--codecs", "json",
         "--progress", "none", "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def _ok(*argv: str, env: dict | None = None):
    done = evbench(*argv, env=env)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("nights")
    slowed = slow_json_env(base / "plugin", 200)  # for the slowed runs only
    runs = [_agent_run(base / f"normal-{i}") for i in range(NORMAL_RUNS)]
    runs += [_agent_run(base / f"slowed-{i}", slowed) for i in range(SLOWED_RUNS)]
    first_slowed = json.loads((runs[NORMAL_RUNS] / "manifest.json").read_text())["run_id"]
    store = base / "store.sqlite"
    env = dict(os.environ, EVBENCH_HISTORY=str(store))
    assert _ok("history", "add", *map(str, runs), env=env).stdout.count("added: ") == RUNS
    listing = _ok("history", "list", env=env)
    rows = [line.split("|") for line in listing.stdout.splitlines()[2:]]
    boards = {cells[2].strip() for cells in rows}
    assert len(rows) == RUNS and len(boards) == 1, listing.stdout
    return {"runs": runs, "first_slowed": first_slowed, "env": env, "store": store,
            "board": boards.pop()}  # fmt: skip


def test_check_finds_the_slowed_run_fails_until_accepted_accept_checks_board(nights, tmp_path):
    env = dict(nights["env"], EVBENCH_HISTORY=str(tmp_path / "store.sqlite"))
    shutil.copy(nights["store"], tmp_path / "store.sqlite")  # accepting changes the store
    check = evbench("history", "check", "--since", "1d", env=env)
    assert check.returncode == 3, check.stdout + check.stderr
    assert "codec/seed/json/decode +" in check.stderr
    assert f"from run {nights['first_slowed']}" in check.stderr
    lines = check.stdout.splitlines()
    decode = [x for x in lines if "codec/seed/json/decode:" in x and "too short" not in x]
    # The 20x step is found at the first slowed run, the largest change listed. The nights
    # are made while another test worker loads the machine: a step of the machine itself
    # (tens of %) may be found too.
    slowed = [line for line in decode if f"(run {nights['first_slowed']}," in line]
    assert len(slowed) == 1, check.stdout
    assert "worse" in slowed[0] and "no version or environment changed" in slowed[0]
    sizes = {line: float(re.search(r": ([+-][\d.]+)% ", line)[1]) for line in decode}
    assert max(sizes, key=sizes.__getitem__) == slowed[0], check.stdout
    assert sizes[slowed[0]] > 1000, slowed[0]
    for series in ("codec/seed/json/decode", "codec/seed/json/decode_access"):
        listed = [line for line in lines if f"{series}:" in line]
        for run_id in {m[1] for line in listed if (m := re.search(r"\(run (\S+), after", line))}:
            argv = ["--board", nights["board"], "--run", run_id, "--series", series]
            argv += ["--reason", "json slowed on purpose", "--by", "the test"]
            _ok("history", "accept", *argv, env=env)
    again = evbench("history", "check", env=env)
    # Other metrics may move on a loaded machine; the accepted ones no longer fail.
    assert "codec/seed/json/decode " not in again.stderr, again.stderr
    assert "codec/seed/json/decode_access " not in again.stderr, again.stderr
    accepted = [line for line in again.stdout.splitlines() if "codec/seed/json/decode:" in line]
    assert accepted and accepted[0].endswith("[accepted: json slowed on purpose]"), again.stdout
    # --since after the change: not new any more, even without the acceptance.
    assert evbench("history", "check", "--since", "2999-01-01", env=nights["env"]).returncode == 0
    # Two boards of copied nights: an acceptance matching nothing would leave the check failing.
    runs = [
        night(tmp_path / "boards" / "a", 1),
        night(tmp_path / "boards" / "b", 2, board="name:bench-2"),
    ]
    env = dict(
        os.environ, EVBENCH_HISTORY=str(stored(tmp_path / "boards" / "store.sqlite", runs).path)
    )
    accept = ["history", "accept", "--board", "bench-1", "--reason", "known"]
    typo = evbench(*accept, "--run", "20260001T020000Z-000001", "--series",
                   "codec/seed/json/decod", env=env)  # fmt: skip
    assert typo.returncode == 2, typo.stdout + typo.stderr
    assert "board name:bench-1 has no series codec/seed/json/decod" in typo.stderr
    assert "hint: it has codec/seed/json/decode, " in typo.stderr  # the nearest named first
    other = evbench(*accept, "--run", "20260002T020000Z-000002", env=env)
    assert other.returncode == 2, other.stdout + other.stderr
    assert "run 20260002T020000Z-000002 is of board name:bench-2, not name:bench-1" in other.stderr
    assert "20260001T020000Z-000001" in other.stderr  # bench-1's run, named
    with open_store(parse_url(env["EVBENCH_HISTORY"])) as store:
        assert store.acceptances() == []
    right = evbench(*accept, "--run", "20260001T020000Z-000001", "--series",
                    "codec/seed/json/decode", env=env)  # fmt: skip
    assert right.returncode == 0 and right.stdout.startswith("accepted: "), right.stderr


@pytest.mark.parametrize(
    ("filters", "count"),
    [
        (("--board", None, "--since", "7d"), RUNS),
        (("--codec", "json", "--profile", "seed"), RUNS),
        (("--codec", "protobuf"), 0),
        (("--since", "2999-01-01"), 0),
        (("--since", "99999999999d"), RUNS),  # before year 1: from the start, every run
    ],
    ids=["board", "codec-profile", "other-codec", "future", "before-year-1"],
)
def test_list_filters_by_board_date_codec_and_profile(nights, filters, count):
    filters = [nights["board"] if item is None else item for item in filters]
    done = _ok("history", "list", *filters, env=nights["env"])
    assert f"{count} runs in " in done.stderr, (filters, done.stderr)


def test_add_again_show_export_prune_and_copy(nights, tmp_path):
    again = _ok("history", "add", *map(str, nights["runs"]), env=nights["env"])
    assert again.stdout.count("already in the store: ") == RUNS
    assert "added: " not in again.stdout
    argv = ["history", "show", "decode", "--board", nights["board"], "--codec"]
    show = _ok(*argv, "json", "--profile", "seed", env=nights["env"])
    rows = [line for line in show.stdout.splitlines() if " µs " in line or " ms " in line]
    assert len(rows) == RUNS, show.stdout
    assert nights["first_slowed"] in rows[NORMAL_RUNS]
    unknown = evbench(*argv, "protobuf", env=nights["env"])
    assert unknown.returncode == 2 and "no series decode of codec protobuf" in unknown.stderr
    out = tmp_path / "all.csv"
    _ok("history", "export", "--csv", str(out), env=nights["env"])
    records = [json.loads((run / "summary.json").read_text())["records"] for run in nights["runs"]]
    assert len(out.read_text().splitlines()) == 1 + sum(map(len, records))
    copy = tmp_path / "copy.sqlite"
    assert f"{RUNS} runs copied" in _ok("history", "copy", str(nights["store"]), str(copy)).stdout
    env = dict(nights["env"], EVBENCH_HISTORY=str(copy))
    assert f"deleted {RUNS - 3} runs" in _ok("history", "prune", "--keep", "3", env=env).stdout
    # --history before the action names the store too (the environment's is another).
    listing = evbench("history", "--history", str(copy), "list", env=nights["env"])
    assert len(listing.stdout.splitlines()) == 2 + 3, listing.stderr
    refused = evbench("history", "--history", str(copy), "copy", str(copy), str(tmp_path / "c"))
    assert refused.returncode == 2 and "takes both stores as FROM and TO" in refused.stderr
    for days in ("90d", "1000000d"):  # all from today: kept (a million days: past year 1)
        assert "deleted 0 runs" in _ok("history", "prune", "--keep", days, env=env).stdout


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


RUN_ID = "20261130T190452Z-e6b3d1"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _history(store: Path | str, *argv: str, cwd: Path | None = None, as_user: bool = False):
    """`evbench history ARGV --history STORE` in a fresh process; `as_user`: without root's
    power to write where the modes forbid it (root keeps its uid, loses CAP_DAC_OVERRIDE and
    its kin for the command)."""
    command = [sys.executable, "-m", "evbench", "history", *argv, "--history", str(store)]
    if as_user and os.geteuid() == 0:
        caps = "-dac_override,-dac_read_search,-fowner"
        setpriv = [require_command("setpriv"), f"--inh-caps={caps}", f"--bounding-set={caps}"]
        command = [*setpriv, *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def committed(tmp_path_factory) -> Path:
    """A store holding the committed run, added once by the real command; tests copy it."""
    path = tmp_path_factory.mktemp("committed") / "history.sqlite"
    added = _history(path, "add", str(CORE_V1))
    assert added.returncode == 0, added.stderr
    # the WAL store checkpointed and closed: one file, no -wal or -shm left beside it
    assert _names(path.parent) == ["history.sqlite"]
    return path


def _copy(committed: Path, folder: Path) -> Path:
    return Path(shutil.copy(committed, folder / "history.sqlite"))


def test_someone_elses_sqlite_file_or_a_mistyped_run_is_refused_none_reads_empty(tmp_path):
    path = tmp_path / "inventory.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE parts (name TEXT, count INTEGER)")
        db.execute("INSERT INTO parts VALUES ('bolt', 12)")
        db.commit()
    before = _digest(path)
    for argv in (["list"], ["export", "--csv", "-"], ["add", str(CORE_V1)]):  # add: a writer
        done = _history(path, *argv)
        assert done.returncode == 2, done.stderr
        assert "is not an evbench history store" in done.stderr and "parts" in done.stderr
    assert _digest(path) == before
    assert _names(tmp_path) == ["inventory.sqlite"]  # no -wal, -shm
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["parts"]
    # a missing or empty store reads as empty and nothing is created
    (mine := tmp_path / "mine").mkdir()
    done = _history(mine / "not" / "yet" / "history.sqlite", "list")
    assert done.returncode == 0 and "no runs" in done.stdout, done.stderr
    assert not (mine / "not").exists()
    done = _history("file:/x", "list", cwd=mine)  # only looks like a URL: refused
    assert done.returncode == 2 and "starts like a URL" in done.stderr, done.stderr
    assert list(mine.iterdir()) == []  # no directory named "file:"
    # a path with a colon is still a path when it says so
    done = _history("./notes:2026.sqlite", "list", cwd=mine)
    assert done.returncode == 0 and "no runs" in done.stdout, done.stderr
    empty = mine / "empty.sqlite"
    empty.touch()
    done = _history(empty, "list")
    assert done.returncode == 0 and "no runs" in done.stdout, done.stderr
    assert empty.stat().st_size == 0
    assert _names(mine) == ["empty.sqlite"]
    # A run whose manifest has fields of the wrong type is not indexed.
    # re-checksummed, as someone who edits a run would: the checksums cannot catch it
    from evbench_core import results

    run = tmp_path / "typed" / "run"
    shutil.copytree(CORE_V1, run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["platform"] = [1]  # once: AttributeError, exit 1
    manifest["spec"]["codecs"] = ["json", 1]  # once: TypeError, exit 1
    (run / "manifest.json").write_text(json.dumps(manifest))
    results.write_checksums(run)
    done = _history(tmp_path / "typed" / "history.sqlite", "add", str(run))
    assert done.returncode == 2, done.stderr
    assert "platform is not an object" in done.stderr and "spec.codecs[] is not text" in done.stderr
    assert "not indexed" in done.stderr and "internal error" not in done.stderr


@pytest.mark.integration
def test_a_store_on_a_read_only_file_system_is_read(tmp_path, committed):
    require_command("mount")
    mount_point = tmp_path / "ro"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount_point)], check=True)
    try:
        store = _copy(committed, mount_point)
        subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], check=True)
        done = _history(store, "list")
        assert done.returncode == 0, done.stderr
        assert RUN_ID in done.stdout
        shown = _history(store, "export", "--csv", "-")
        assert shown.returncode == 0 and RUN_ID in shown.stdout, shown.stderr
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)


SEVEN = "UPDATE evbench_meta SET value = 'seven' WHERE key = 'schema_version'"
DEEP_ARRAY = "UPDATE records SET params = '" + "[" * 3000 + "'"
DEEP_OBJECT = "UPDATE records SET params = '" + '{"a":' * 40 + "1" + "}" * 40 + "'"


@pytest.mark.parametrize(
    ("statement", "argv", "said"),
    [
        (SEVEN, "list", "schema_version of 'seven'"),
        ("UPDATE runs SET manifest = '{'", "list", "manifest is '{'"),
        ("UPDATE runs SET board = x'0001'", "list", "board is b'\\x00\\x01'"),
        ("UPDATE records SET median = 'fast'", "export --csv -", "median is 'fast'"),
        # a trend read these params with json: RecursionError, exit 1 (issue 44, item 12)
        (DEEP_ARRAY, "check", "params is '[[[["),
        (DEEP_ARRAY, "export --csv -", "[[[["),
        ("UPDATE records SET params = '[1]'", "check", "params is '[1]'"),
        (DEEP_OBJECT, "check", 'params is \'{"a":{'),
    ],
    ids=["schema_version", "manifest", "board", "median", "3000", "3000-csv", "list", "deep"],
)
def test_a_malformed_store_is_refused_naming_it(tmp_path, committed, statement, argv, said):
    store = _copy(committed, tmp_path)
    with contextlib.closing(sqlite3.connect(store)) as db:
        db.execute(statement)
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    done = _history(store, *argv.split())
    assert done.returncode == 2, done.stderr
    assert f"the history store sqlite:///{store}" in done.stderr or str(store) in done.stderr
    assert said in done.stderr, done.stderr
    assert "internal error" not in done.stderr


def test_damaged_pages_are_refused_and_a_wal_store_open_elsewhere_is_read(tmp_path, committed):
    store = _copy(committed, tmp_path)
    with contextlib.closing(sqlite3.connect(store)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        pages = db.execute("PRAGMA page_count").fetchone()[0]
    assert pages > 3
    data = bytearray(store.read_bytes())
    for page in range(1, pages):  # every page but the header's: garbage
        data[page * page_size : (page + 1) * page_size] = bytes([0xA5]) * page_size
    store.write_bytes(bytes(data))
    done = _history(store, "list")
    assert done.returncode == 2, done.stderr
    assert str(store) in done.stderr and "internal error" not in done.stderr
    # a WAL store open elsewhere is read and its files left to their owner
    (elsewhere := tmp_path / "elsewhere").mkdir()
    store = _copy(committed, elsewhere)
    with contextlib.closing(sqlite3.connect(store)) as writer:
        writer.execute("UPDATE runs SET directory = 'elsewhere'")  # committed, in the -wal
        writer.commit()
        names = _names(elsewhere)
        assert names == ["history.sqlite", "history.sqlite-shm", "history.sqlite-wal"]
        done = _history(store, "export", "--csv", "-")
        assert done.returncode == 0 and RUN_ID in done.stdout, done.stderr
        assert _names(elsewhere) == names  # the writer's, kept
        assert writer.execute("SELECT directory FROM runs").fetchone()[0] == "elsewhere"


@pytest.mark.parametrize("folder_mode", [0o755, 0o555], ids=["writable", "read-only"])
def test_reading_a_wal_store_writes_nothing_leaves_no_wal_or_shm(tmp_path, committed, folder_mode):
    """In a read-only folder, where no -shm can be made (SQLITE_READONLY_DIRECTORY), too."""
    folder = tmp_path / "lab-store"
    folder.mkdir()
    store = _copy(committed, folder)
    with contextlib.closing(sqlite3.connect(store)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    before = _digest(store)
    folder.chmod(folder_mode)
    try:
        for argv in (["list"], ["export", "--csv", "-"], ["check"]):
            done = _history(store, *argv, as_user=folder_mode == 0o555)
            assert done.returncode == 0, (argv, done.stderr)
            assert argv == ["check"] or RUN_ID in done.stdout, argv
            assert _names(folder) == ["history.sqlite"], argv
    finally:
        folder.chmod(0o755)
    assert _digest(store) == before
