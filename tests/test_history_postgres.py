"""The PostgreSQL store's own cases, on a real server on loopback (tests/postgres.py):
clear errors when the server is not there or the password is wrong, and copies
between SQLite and PostgreSQL that come back identical."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from history_runs import CORE_V1, night
from report_helpers import evbench

from evbench.history import open_store, parse_url
from evbench.history.copying import copy
from evbench.history.indexing import index_run
from evbench_core.errors import FormatError, UserError

pytestmark = pytest.mark.integration


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends: nothing listens


def test_a_server_that_is_not_there_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "whatever")
    url = f"postgresql://evbench@127.0.0.1:{_closed_port()}/history"
    with pytest.raises(UserError, match=r"cannot connect to the history store .*refused"):
        open_store(parse_url(url))


def test_a_wrong_password_is_a_clear_error_never_shown_and_one_line_in_the_cli(postgres):
    url = postgres.new_database()
    with pytest.raises(UserError) as caught:
        open_store(parse_url(url.replace("evbench@", "evbench:not-the-password@")))
    message = str(caught.value)
    assert "password authentication failed" in message
    assert "not-the-password" not in message and "evbench:***@" in message
    env = dict(os.environ, PGPASSWORD="wrong", EVBENCH_HISTORY=url)
    done = evbench("history", "list", env=env)
    assert done.returncode == 2, done.stderr
    assert "password authentication failed" in done.stderr and "Traceback" not in done.stderr


def _everything(store) -> list:
    runs = []
    for run in store.runs():
        dumped = store.dump_run(run["run_id"])
        runs.append((dumped.row, sorted(dumped.records), sorted(dumped.samples)))
    return [runs, store.acceptances()]


def test_copy_sqlite_to_postgresql_and_back_is_identical(postgres, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PGPASSWORD", postgres.password)
    first = open_store(parse_url(str(tmp_path / "a.sqlite")))
    first.add(index_run(CORE_V1))
    for number in (1, 2, 3):
        first.add(index_run(night(tmp_path, number, factor=1 + number / 10)))
    first.accept("name:bench-1", "20260002T020000Z-000002", "*", "ana", "protobuf 8")
    shared = open_store(parse_url(postgres.new_database()))
    back = open_store(parse_url(str(tmp_path / "b.sqlite")))
    try:
        assert copy(first, shared).added == 4
        assert copy(shared, back).added == 4
        assert copy(shared, back).already == 4  # a copy run again adds nothing
        assert _everything(first) == _everything(shared) == _everything(back)
        raw = back.samples("20260001T020000Z-000001", ("codec", "seed", "json", "decode"))
        assert raw == first.samples("20260001T020000Z-000001", ("codec", "seed", "json", "decode"))
        assert len(raw) == 10
    finally:
        for store in (first, shared, back):
            store.close()


def test_history_copy_command_between_sqlite_and_postgresql(postgres, tmp_path: Path):
    source = tmp_path / "lab-pc.sqlite"
    with open_store(parse_url(str(source))) as store:
        store.add(index_run(CORE_V1))
    url = postgres.new_database()
    env = dict(os.environ, PGPASSWORD=postgres.password)
    done = evbench("history", "copy", str(source), url, env=env)
    assert done.returncode == 0, done.stderr
    assert "1 runs copied" in done.stdout and postgres.password not in done.stdout
    listing = evbench("history", "list", "--history", url, env=env)
    assert listing.returncode == 0 and "20261130T190452Z-e6b3d1" in listing.stdout


def test_add_list_show_check_report_on_postgresql(postgres, tmp_path: Path):
    """The same commands as on SQLite, against the shared store of a lab."""
    # 14 nights, then 3 nights 1.5 times slower: the nightly watch (12 series: two codecs x 3
    # operations, absolute and relative; p < 0.05 / 12) needs 13 nights before the newest 3.
    nights = [night(tmp_path, n, factor=1.0 if n <= 14 else 1.5) for n in range(1, 18)]
    env = dict(os.environ, PGPASSWORD=postgres.password, EVBENCH_HISTORY=postgres.new_database())
    added = evbench("history", "add", *map(str, nights), env=env)
    assert added.returncode == 0 and added.stdout.count("added: ") == 17, added.stderr
    listing = evbench("history", "list", "--board", "bench-1", env=env)
    assert listing.returncode == 0 and "17 runs in postgresql://evbench@" in listing.stderr
    show = evbench("history", "show", "decode", "--board", "bench-1", "--codec", "json", env=env)
    assert show.returncode == 0 and show.stdout.count(" µs [") == 17, show.stdout
    check = evbench("history", "check", env=env)
    assert check.returncode == 3, check.stdout + check.stderr
    # The nights were made 1.5 times slower from night 15 on: +50 %, found at night 15.
    decode = next(line for line in check.stdout.splitlines() if "json/decode: +" in line)
    assert "+50.0% worse" in decode and "(run 20260015T020000Z-00000f," in decode
    report = evbench("history", "report", "--out", str(tmp_path / "trends"), env=env)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "trends" / "trends.html").read_text()
    assert page.count("data:image/png;base64,") == 10  # one per record of the sample run


def test_a_foreign_database_is_refused_and_reading_writes_nothing(postgres, monkeypatch):
    import psycopg

    monkeypatch.setenv("PGPASSWORD", postgres.password)
    empty = postgres.new_database()
    with open_store(parse_url(empty), read_only=True) as store:
        assert store.runs() == []  # an empty database reads as an empty store
    foreign = postgres.new_database()
    with psycopg.connect(foreign, autocommit=True) as connection:
        connection.execute("CREATE TABLE parts (name TEXT)")
    for read_only in (True, False):
        with pytest.raises(FormatError, match="is not an evbench history store"):
            open_store(parse_url(foreign), read_only=read_only)
    for url in (empty, foreign):
        with psycopg.connect(url) as connection:
            tables = connection.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() ORDER BY table_name"
            ).fetchall()
        assert tables == ([] if url == empty else [("parts",)])
