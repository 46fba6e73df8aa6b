"""History that reads without writing (docs/history.md, "Reading never writes"): the
attacks of an independent review, against real SQLite files and the real command.

- `history list` on someone else's SQLite file once added evbench's tables to it and
  switched it to WAL: now refused (exit 2), the file byte for byte as it was;
- a store on a read-only file system could not be read at all: now it is listed;
- a missing or empty store reads as empty, and nothing is created;
- damaged pages, a bad schema_version and malformed rows once gave internal errors
  (exit 1): now exit 2 naming the store;
- `--history file:/x` once created a directory named `file:`: now refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_command

# each case runs the real command in a new process: seconds each
pytestmark = pytest.mark.slow

COMMITTED = Path(__file__).parent / "data" / "runs" / "core-v1"
RUN_ID = "20261130T190452Z-e6b3d1"
READS = (["list"], ["export", "--csv", "-"], ["check"])


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _without_write_override(argv: list[str]) -> list[str]:
    """`argv` as a user without the power to write where the modes forbid it: root keeps
    its uid but loses CAP_DAC_OVERRIDE (and its kin) for the command."""
    if os.geteuid() != 0:
        return argv
    caps = "-dac_override,-dac_read_search,-fowner"
    return [require_command("setpriv"), f"--inh-caps={caps}", f"--bounding-set={caps}", *argv]


def _history(store: Path | str, *argv: str, cwd: Path | None = None, as_user: bool = False):
    """`evbench history ARGV --history STORE` in a fresh process, as a user runs it
    (`as_user`: without root's power to write anywhere)."""
    command = [sys.executable, "-m", "evbench", "history", *argv, "--history", str(store)]
    command = _without_write_override(command) if as_user else command
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def committed(tmp_path_factory) -> Path:
    """A store holding the committed run, added once by the real command; tests copy it."""
    path = tmp_path_factory.mktemp("committed") / "history.sqlite"
    added = _history(path, "add", str(COMMITTED))
    assert added.returncode == 0, added.stderr
    # the WAL store checkpointed and closed: one file, no -wal or -shm left beside it
    assert sorted(p.name for p in path.parent.iterdir()) == ["history.sqlite"]
    return path


def test_someone_elses_sqlite_file_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "inventory.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE parts (name TEXT, count INTEGER)")
        db.execute("INSERT INTO parts VALUES ('bolt', 12)")
        db.commit()
    before = _digest(path)
    for argv in (["list"], ["export", "--csv", "-"], ["add", str(COMMITTED)]):  # add: a writer
        done = _history(path, *argv)
        assert done.returncode == 2, done.stderr
        assert "is not an evbench history store" in done.stderr and "parts" in done.stderr
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inventory.sqlite"]  # no -wal, -shm
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["parts"]


def test_a_missing_or_empty_store_reads_as_empty_and_nothing_is_created(tmp_path):
    missing = tmp_path / "not" / "yet" / "history.sqlite"
    done = _history(missing, "list")
    assert done.returncode == 0, done.stderr
    assert "no runs" in done.stdout
    assert not (tmp_path / "not").exists()
    done = _history("file:/x", "list", cwd=tmp_path)  # only looks like a URL: refused
    assert done.returncode == 2 and "starts like a URL" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []  # no directory named "file:"
    # a path with a colon is still a path when it says so
    done = _history("./notes:2026.sqlite", "list", cwd=tmp_path)
    assert done.returncode == 0 and "no runs" in done.stdout, done.stderr
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    done = _history(empty, "list")
    assert done.returncode == 0 and "no runs" in done.stdout, done.stderr
    assert empty.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.sqlite"]


@pytest.mark.integration
def test_a_store_on_a_read_only_file_system_is_read(tmp_path, committed):
    require_command("mount")
    mount_point = tmp_path / "ro"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount_point)], check=True)
    try:
        shutil.copy(committed, mount_point / "history.sqlite")
        subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], check=True)
        done = _history(mount_point / "history.sqlite", "list")
        assert done.returncode == 0, done.stderr
        assert RUN_ID in done.stdout
        shown = _history(mount_point / "history.sqlite", "export", "--csv", "-")
        assert shown.returncode == 0 and RUN_ID in shown.stdout, shown.stderr
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)


@pytest.mark.parametrize(
    ("statement", "argv", "said"),
    [
        (
            "UPDATE evbench_meta SET value = 'seven' WHERE key = 'schema_version'",
            ["list"],
            "schema_version of 'seven'",
        ),
        ("UPDATE runs SET manifest = '{'", ["list"], "manifest is '{'"),
        ("UPDATE runs SET board = x'0001'", ["list"], "board is b'\\x00\\x01'"),
        ("UPDATE records SET median = 'fast'", ["export", "--csv", "-"], "median is 'fast'"),
        # a trend read these params with json: RecursionError, exit 1 (issue 44, item 12)
        ("UPDATE records SET params = '" + "[" * 3000 + "'", ["check"], "params is '[[[["),
        ("UPDATE records SET params = '" + "[" * 3000 + "'", ["export", "--csv", "-"], "[[[["),
        ("UPDATE records SET params = '[1]'", ["check"], "params is '[1]'"),
        (
            "UPDATE records SET params = '" + '{"a":' * 40 + "1" + "}" * 40 + "'",
            ["check"],
            'params is \'{"a":{',
        ),
    ],
    ids=["schema_version", "manifest", "board", "median", "3000", "3000-csv", "list", "deep"],
)
def test_a_malformed_store_is_refused_naming_it(tmp_path, committed, statement, argv, said):
    store = Path(shutil.copy(committed, tmp_path / "history.sqlite"))
    with contextlib.closing(sqlite3.connect(store)) as db:
        db.execute(statement)
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    done = _history(store, *argv)
    assert done.returncode == 2, done.stderr
    assert f"the history store sqlite:///{store}" in done.stderr or str(store) in done.stderr
    assert said in done.stderr, done.stderr
    assert "internal error" not in done.stderr


def test_damaged_pages_are_refused_naming_the_store(tmp_path, committed):
    store = Path(shutil.copy(committed, tmp_path / "history.sqlite"))
    with contextlib.closing(sqlite3.connect(store)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        pages = db.execute("PRAGMA page_count").fetchone()[0]
    assert pages > 3
    data = bytearray(store.read_bytes())
    for page in range(1, pages):  # every page but the header's: garbage
        start = page * page_size
        data[start : start + page_size] = bytes([0xA5]) * page_size
    store.write_bytes(bytes(data))
    done = _history(store, "list")
    assert done.returncode == 2, done.stderr
    assert str(store) in done.stderr and "internal error" not in done.stderr


def test_a_run_whose_manifest_has_fields_of_the_wrong_type_is_not_indexed(tmp_path):
    # re-checksummed, as someone who edits a run would: the checksums cannot catch it
    from evbench_core import results

    run = tmp_path / "run"
    shutil.copytree(COMMITTED, run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["platform"] = [1]  # once: AttributeError, exit 1
    manifest["spec"]["codecs"] = ["json", 1]  # once: TypeError, exit 1
    (run / "manifest.json").write_text(json.dumps(manifest))
    results.write_checksums(run)
    done = _history(tmp_path / "history.sqlite", "add", str(run))
    assert done.returncode == 2, done.stderr
    assert "platform is not an object" in done.stderr and "spec.codecs[] is not text" in done.stderr
    assert "not indexed" in done.stderr and "internal error" not in done.stderr


@pytest.mark.parametrize("folder_mode", [0o755, 0o555], ids=["writable", "read-only"])
def test_reading_a_wal_store_writes_nothing_and_leaves_no_wal_or_shm(
    tmp_path, committed, folder_mode
):
    """Reading with mode=ro made the WAL store's -wal and -shm and, read-only, could not
    remove them (issue 44, item 12); a store no one has open is read through a connection
    that may remove them, and never writes (query_only). In a read-only folder no -shm can
    be made: SQLite said "attempt to write a readonly database" (SQLITE_READONLY_DIRECTORY),
    once not taken for a reason to open it immutable: exit 2, "not an SQLite history store"."""
    folder = tmp_path / "lab-store"
    folder.mkdir()
    store = Path(shutil.copy(committed, folder / "history.sqlite"))
    with contextlib.closing(sqlite3.connect(store)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    before = _digest(store)
    folder.chmod(folder_mode)
    try:
        for argv in READS:
            done = _history(store, *argv, as_user=folder_mode == 0o555)
            assert done.returncode == 0, (argv, done.stderr)
            assert argv == ["check"] or RUN_ID in done.stdout, argv
            assert sorted(p.name for p in folder.iterdir()) == ["history.sqlite"], argv
    finally:
        folder.chmod(0o755)
    assert _digest(store) == before


def test_a_wal_store_open_elsewhere_is_read_and_its_files_left_to_their_owner(tmp_path, committed):
    store = Path(shutil.copy(committed, tmp_path / "history.sqlite"))
    with contextlib.closing(sqlite3.connect(store)) as writer:
        writer.execute("UPDATE runs SET directory = 'elsewhere'")  # committed, in the -wal
        writer.commit()
        names = sorted(p.name for p in tmp_path.iterdir())
        assert names == ["history.sqlite", "history.sqlite-shm", "history.sqlite-wal"]
        done = _history(store, "export", "--csv", "-")
        assert done.returncode == 0 and RUN_ID in done.stdout, done.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == names  # the writer's, kept
        assert writer.execute("SELECT directory FROM runs").fetchone()[0] == "elsewhere"
