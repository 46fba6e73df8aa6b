"""The history store on SQLite and on a real PostgreSQL server: the same tests on both.

Expected values come from the run directories themselves (their summary and
samples.jsonl read with json), never from the store's own code.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from history_runs import CORE_V1, night

from evbench.history import open_store, parse_url
from evbench.history.indexing import index_run
from evbench_core.errors import CheckFailed, FormatError, UserError


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def store_url(request, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite'}"
    server = request.getfixturevalue("postgres")
    request.getfixturevalue("monkeypatch").setenv("PGPASSWORD", server.password)
    return server.new_database()


def _raw_by_metric(directory: Path) -> dict[tuple[str, str, str], list[float]]:
    pooled = defaultdict(list)
    for line in (directory / "samples.jsonl").read_text().splitlines():
        item = json.loads(line)
        pooled[(item["profile"], item["codec"], item["metric"])].extend(item["values"])
    return pooled


def test_the_committed_run_is_indexed_with_its_records_and_raw_samples(store_url):
    summary = json.loads((CORE_V1 / "summary.json").read_text())
    with open_store(parse_url(store_url)) as store:
        assert store.add(index_run(CORE_V1)) is True
        (run,) = store.runs()
        assert run["run_id"] == "20261130T190452Z-e6b3d1"
        assert run["partial"] == 0 and run["quick"] == 1
        assert (run["protobuf"], run["python"], run["kernel"]) == ("7.36.2", "3.11.7",
                                                                 "6.18.44-fc-v669")  # fmt: skip
        # An old run has no board identity: its hostname, saying so.
        assert run["board"] == "host:vm" and "before board identities" in run["board_source"]
        stored = {(r["profile"], r["codec"], r["metric"]): r for r in store.records(run["run_id"])}
        assert len(stored) == len(summary["records"]) == 10
        for record in summary["records"]:
            mine = stored[(record["profile"], record["codec"], record["metric"])]
            assert mine["median"] == record["median"] and mine["n"] == record["n"]
            assert mine["ci95_low"] == record["ci95_low"] and mine["unit"] == record["unit"]
        for (profile, codec, metric), values in _raw_by_metric(CORE_V1).items():
            assert store.samples(run["run_id"], ("codec", profile, codec, metric)) == values
        # adding the same run again is a no-op
        assert store.add(index_run(CORE_V1)) is False
        assert len(store.runs()) == 1 and len(store.records(run["run_id"])) == 10


def test_a_run_whose_checksums_fail_is_refused_and_nothing_is_stored(store_url, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(CORE_V1, broken)
    text = (broken / "samples.jsonl").read_text()
    (broken / "samples.jsonl").write_text(text.replace("994", "995", 1))
    with open_store(parse_url(store_url)) as store:
        with pytest.raises(CheckFailed, match=r"samples\.jsonl: checksum mismatch"):
            store.add(index_run(broken))
        assert store.runs() == []


def test_a_complete_run_without_its_checksums_is_refused(tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(CORE_V1, bare)
    (bare / "SHA256SUMS").unlink()
    with pytest.raises(CheckFailed, match="marked complete but has no SHA256SUMS"):
        index_run(bare)


def test_a_partial_run_is_indexed_as_partial_and_left_out_of_series(store_url, tmp_path):
    partial = night(tmp_path, 1)
    (partial / "complete").unlink()  # as an interrupted run leaves it
    with open_store(parse_url(store_url)) as store:
        store.add(index_run(partial))
        store.add(index_run(night(tmp_path, 2)))
        runs = store.runs()
        assert [r["partial"] for r in runs] == [1, 0]
        key = ("codec", "seed", "json", "decode")
        assert len(store.series("name:bench-1", key)) == 1
        assert len(store.series("name:bench-1", key, include_partial=True)) == 2


def test_a_run_stopped_before_its_checksums_is_partial(tmp_path):
    torn = tmp_path / "torn"
    shutil.copytree(CORE_V1, torn)
    for name in ("SHA256SUMS", "complete", "summary.json"):
        (torn / name).unlink()
    with (torn / "samples.jsonl").open("a") as stream:
        stream.write('{"suite": "codec", "profile"')  # the last line torn by a power cut
    indexed = index_run(torn)
    assert indexed.row.partial == 1
    assert len(indexed.records) == 10  # rebuilt from the raw samples, the torn line skipped


def test_another_run_under_the_same_id_is_refused(store_url, tmp_path):
    first = night(tmp_path / "a", 1)
    second = night(tmp_path / "b", 1, factor=2.0)  # same id and time, other content
    with open_store(parse_url(store_url)) as store:
        store.add(index_run(first))
        with pytest.raises(UserError, match="another run with the id"):
            store.add(index_run(second))


def test_accept_records_who_and_why(store_url, tmp_path):
    with open_store(parse_url(store_url)) as store:
        store.add(index_run(night(tmp_path, 1)))
        assert store.accept("name:bench-1", "20260001T020000Z-000001", "*", "ana", "protobuf 8")
        assert not store.accept("name:bench-1", "20260001T020000Z-000001", "*", "ana", "again")
        (row,) = store.acceptances()
        assert (row["accepted_by"], row["reason"], row["series"]) == ("ana", "protobuf 8", "*")
        with pytest.raises(UserError, match="no run nope"):
            store.accept("name:bench-1", "nope", "*", "ana", "why")


def test_prune_keeps_the_newest_runs_of_each_board(store_url, tmp_path):
    from evbench.history.pruning import prune

    with open_store(parse_url(store_url)) as store:
        for number in range(1, 5):
            store.add(index_run(night(tmp_path / "one", number, board="name:one")))
        store.add(index_run(night(tmp_path / "two", 9, board="name:two")))
        deleted = prune(store, "2")
        assert deleted == ["20260001T020000Z-000001", "20260002T020000Z-000002"]
        left = [(r["board"], r["run_id"][:8]) for r in store.runs()]
        assert left == [
            ("name:one", "20260003"),
            ("name:one", "20260004"),
            ("name:two", "20260009"),
        ]
        assert store.records("20260001T020000Z-000001") == []
        assert store.samples("20260001T020000Z-000001", ("codec", "seed", "json", "decode")) == []


def test_export_has_one_line_per_record(store_url, tmp_path):
    from evbench.history.queries import export_csv

    with open_store(parse_url(store_url)) as store:
        store.add(index_run(night(tmp_path, 1)))
        store.add(index_run(night(tmp_path, 2)))
        lines = export_csv(store).splitlines()
    assert len(lines) == 1 + 2 * 10
    header = lines[0].split(",")
    assert header[:3] == ["run_id", "board", "board_source"]
    first = dict(zip(header, lines[1].split(","), strict=False))
    assert first["board"] == "name:bench-1" and first["suite"] == "codec"


@pytest.mark.slow
def test_two_clients_adding_at_once_lose_nothing(store_url, tmp_path):
    """Two `evbench history add` processes (on PostgreSQL: two host PCs of a lab, both
    racing to create the schema of an empty database) start together, each with six
    nights, three of them the same: both succeed, every night is stored once, whole."""
    runs = [night(tmp_path, number) for number in range(1, 10)]
    add = [sys.executable, "-m", "evbench", "history", "add", "--history", store_url]
    processes = [
        subprocess.Popen(
            [*add, *map(str, batch)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for batch in (runs[:6], runs[3:][::-1])  # interleaved, so both write at once
    ]
    outputs = [process.communicate(timeout=300) for process in processes]
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err
        assert out.count("added: ") + out.count("already in the store: ") == 6, out
    assert sum(out.count("added: ") for out, _err in outputs) == 9  # each night added once
    with open_store(parse_url(store_url)) as store:
        stored = store.runs()
        ids = {f"2026{n:04d}T020000Z-{n:06x}" for n in range(1, 10)}
        assert {r["run_id"] for r in stored} == ids and len(stored) == 9
        for run in stored:
            assert len(store.records(run["run_id"])) == 10


def test_a_store_from_a_newer_evbench_is_refused_naming_both_versions(tmp_path):
    path = tmp_path / "store.sqlite"
    open_store(parse_url(str(path))).close()
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE evbench_meta SET value = '7' WHERE key = 'schema_version'")
    before = path.read_bytes()
    with pytest.raises(FormatError, match="schema version 7; this evbench knows versions up to 1"):
        open_store(parse_url(str(path)))
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT value FROM evbench_meta").fetchone() == ("7",)
    assert path.read_bytes() == before


@pytest.mark.integration
def test_a_postgres_store_from_a_newer_evbench_is_refused(postgres, monkeypatch):
    import psycopg

    monkeypatch.setenv("PGPASSWORD", postgres.password)
    url = postgres.new_database()
    open_store(parse_url(url)).close()
    with psycopg.connect(url) as connection:
        connection.execute("UPDATE evbench_meta SET value = '3' WHERE key = 'schema_version'")
    with pytest.raises(FormatError, match="schema version 3; this evbench knows versions up to 1"):
        open_store(parse_url(url))


def test_a_file_that_is_not_a_store_is_refused(tmp_path):
    path = tmp_path / "notes.sqlite"
    path.write_text("not a database, but notes\n" * 100)
    with pytest.raises(FormatError, match="is not an SQLite history store"):
        open_store(parse_url(str(path)))
    assert path.read_text().startswith("not a database")


def test_store_urls():
    assert parse_url("/var/lib/h.sqlite").path == Path("/var/lib/h.sqlite")
    assert parse_url("sqlite:////var/lib/h.sqlite").path == Path("/var/lib/h.sqlite")
    assert parse_url("sqlite:///rel/h.sqlite").path == Path("rel/h.sqlite")
    secret = parse_url("postgresql://ana:s3cret@db.lab:5433/evbench?password=x2")
    assert secret.kind == "postgresql"
    assert "s3cret" not in secret.display and "x2" not in secret.display
    assert secret.display == "postgresql://ana:***@db.lab:5433/evbench?password=%2A%2A%2A"
    for bad, message in (("mysql://h/db", "unknown history store scheme"),
                         ("sqlite://h.sqlite", "bad SQLite URL"),
                         ("postgresql:///db", "names no host")):  # fmt: skip
        with pytest.raises(UserError, match=message):
            parse_url(bad)


def test_the_default_store_is_in_the_data_directory(history_store, monkeypatch, tmp_path):
    from evbench.history import default_url

    assert default_url().path == history_store  # conftest's: every test has a store of its own
    monkeypatch.delenv("EVBENCH_HISTORY")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_url().path == tmp_path / "data" / "evbench" / "history.sqlite"
    monkeypatch.setenv("EVBENCH_HISTORY", "sqlite:////srv/h.sqlite")
    assert default_url().path == Path("/srv/h.sqlite")
    assert default_url("/other.sqlite").path == Path("/other.sqlite")
