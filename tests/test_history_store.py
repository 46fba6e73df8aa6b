"""The history store, the same tests on SQLite and on a real PostgreSQL server on loopback
(tests/postgres.py), PostgreSQL's own errors and copies both ways; the board identity from a
tree laid out as /proc and /sys. Expected values come from the run directories, read with json.
"""

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import require, require_command
from history_runs import CORE_V1, night
from report_helpers import evbench
from sshd import free_port

from evbench.history import default_url, open_store, parse_url
from evbench.history.copying import copy
from evbench.history.indexing import board_identity as stored_identity
from evbench.history.indexing import index_run
from evbench.history.pruning import prune
from evbench.history.queries import export_csv
from evbench_agent.platform import board_identity
from evbench_core import results
from evbench_core.errors import CheckFailed, FormatError, UserError


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def store_url(request, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite'}"
    server = request.getfixturevalue("postgres")
    request.getfixturevalue("monkeypatch").setenv("PGPASSWORD", server.password)
    return server.new_database()


def test_committed_run_is_indexed_with_samples_another_under_its_id_refused(store_url, tmp_path):
    summary = json.loads((CORE_V1 / "summary.json").read_text())
    with open_store(parse_url(store_url)) as store:
        assert store.add(index_run(CORE_V1)) is True
        (run,) = store.runs()
        assert run["run_id"] == "20261130T190452Z-e6b3d1"
        assert run["partial"] == 0 and run["quick"] == 1
        versions = ("7.36.2", "3.11.7", "6.18.44-fc-v669")
        assert (run["protobuf"], run["python"], run["kernel"]) == versions
        # An old run has no board identity: its hostname, saying so.
        assert run["board"] == "host:vm" and "before board identities" in run["board_source"]
        stored = {(r["profile"], r["codec"], r["metric"]): r for r in store.records(run["run_id"])}
        assert len(stored) == len(summary["records"]) == 10
        for record in summary["records"]:
            mine = stored[(record["profile"], record["codec"], record["metric"])]
            assert mine["median"] == record["median"] and mine["n"] == record["n"]
            assert mine["ci95_low"] == record["ci95_low"] and mine["unit"] == record["unit"]
        pooled = defaultdict(list)
        for line in (CORE_V1 / "samples.jsonl").read_text().splitlines():
            item = json.loads(line)
            pooled[("codec", item["profile"], item["codec"], item["metric"])] += item["values"]
        for key, values in pooled.items():
            assert store.samples(run["run_id"], key) == values
        # adding the same run again is a no-op
        assert store.add(index_run(CORE_V1)) is False
        assert len(store.runs()) == 1 and len(store.records(run["run_id"])) == 10
    # another run under the same id is refused
    second = night(tmp_path / "b", 1, factor=2.0)  # same id and time, other content
    with open_store(parse_url(store_url)) as store:
        store.add(index_run(night(tmp_path / "a", 1)))
        with pytest.raises(UserError, match="another run with the id"):
            store.add(index_run(second))
        # A copy into that store: the other run under the id is refused, the rest copied,
        # and only the acceptance of a copied run goes with it.
        with open_store(parse_url(str(tmp_path / "source.sqlite"))) as source:
            for run in (second, night(tmp_path / "b", 2), night(tmp_path / "b", 3)):
                source.add(index_run(run))
            for run_id in ("20260001T020000Z-000001", "20260003T020000Z-000003"):
                source.accept("name:bench-1", run_id, "*", "ana", "known")
            copied = copy(source, store)
        assert (copied.added, copied.already, copied.acceptances) == (2, 0, 1)
        assert [str(error) for error in copied.refused] == [
            f"the store {store.url.display} holds another run with the id "
            "20260001T020000Z-000001 (different content)"
        ]
        assert [row["run_id"] for row in store.acceptances()] == ["20260003T020000Z-000003"]


def test_run_failing_checksums_is_refused_a_partial_one_indexed_out_of_series(store_url, tmp_path):
    samples = Path(shutil.copytree(CORE_V1, tmp_path / "broken")) / "samples.jsonl"
    samples.write_text(samples.read_text().replace("994", "995", 1))
    with open_store(parse_url(store_url)) as store:
        with pytest.raises(CheckFailed, match=r"samples\.jsonl: checksum mismatch"):
            store.add(index_run(samples.parent))
        assert store.runs() == []
    # a partial run is indexed as partial and left out of series
    partial = night(tmp_path, 1)
    (partial / "complete").unlink()  # as an interrupted run leaves it
    with open_store(parse_url(store_url)) as store:
        store.add(index_run(partial))
        store.add(index_run(night(tmp_path, 2)))
        assert [r["partial"] for r in store.runs()] == [1, 0]
        key = ("codec", "seed", "json", "decode")
        assert len(store.series("name:bench-1", key)) == 1
        assert len(store.series("name:bench-1", key, include_partial=True)) == 2


def test_a_partial_run_is_replaced_once_fetched_one_without_checksums_refused(store_url, tmp_path):
    complete = night(tmp_path / "fetched", 1)
    partial = Path(shutil.copytree(complete, tmp_path / "partial"))
    # As `evbench run` indexed it when the exporter went: half the samples, no marker.
    lines = (partial / "samples.jsonl").read_text().splitlines(keepends=True)
    (partial / "samples.jsonl").write_text("".join(lines[: len(lines) // 2]))
    (partial / "summary.json").unlink()
    (partial / "complete").unlink()
    results.write_checksums(partial)
    run_id = "20260001T020000Z-000001"
    with open_store(parse_url(store_url)) as store:
        assert store.add(index_run(partial)) is True
        assert [r["partial"] for r in store.runs()] == [1]
        assert store.add(index_run(complete)) is True  # after `evbench fetch`
        (run,) = store.runs()
        assert (run["run_id"], run["partial"]) == (run_id, 0)
        every = defaultdict(list)
        for line in lines:
            item = json.loads(line)
            every[(item["suite"], item["profile"], item["codec"], item["metric"])] += item["values"]
        assert len(store.records(run_id)) == 10
        for key, values in every.items():
            assert store.samples(run_id, key) == values
        # Complete over complete is still another run under the same id.
        with pytest.raises(UserError, match="another run with the id"):
            store.add(index_run(night(tmp_path / "other", 1, factor=2.0)))
        assert store.samples(run_id, key) == values
    # a run without its checksums is refused when complete, else indexed as partial
    torn = Path(shutil.copytree(CORE_V1, tmp_path / "torn"))
    (torn / "SHA256SUMS").unlink()
    with pytest.raises(CheckFailed, match="marked complete but has no SHA256SUMS"):
        index_run(torn)
    for name in ("complete", "summary.json"):  # as a run stopped before them leaves it
        (torn / name).unlink()
    with (torn / "samples.jsonl").open("a") as stream:
        stream.write('{"suite": "codec", "profile"')  # the last line torn by a power cut
    indexed = index_run(torn)
    assert indexed.row.partial == 1
    assert len(indexed.records) == 10  # rebuilt from the raw samples, the torn line skipped


def test_accept_records_who_and_why_and_export_has_one_line_per_record(store_url, tmp_path):
    with open_store(parse_url(store_url)) as store:
        store.add(index_run(night(tmp_path, 1)))
        assert store.accept("name:bench-1", "20260001T020000Z-000001", "*", "ana", "protobuf 8")
        assert not store.accept("name:bench-1", "20260001T020000Z-000001", "*", "ana", "again")
        (row,) = store.acceptances()
        assert (row["accepted_by"], row["reason"], row["series"]) == ("ana", "protobuf 8", "*")
        with pytest.raises(UserError, match="no run nope"):
            store.accept("name:bench-1", "nope", "*", "ana", "why")
        store.add(index_run(night(tmp_path, 2)))  # export: one line per record
        lines = export_csv(store).splitlines()
    assert len(lines) == 1 + 2 * 10
    header = lines[0].split(",")
    assert header[:3] == ["run_id", "board", "board_source"]
    first = dict(zip(header, lines[1].split(","), strict=False))
    assert (first["board"], first["suite"]) == ("name:bench-1", "codec")


def test_prune_keeps_the_newest_runs_of_each_board_a_newer_store_is_refused(store_url, tmp_path):
    with open_store(parse_url(store_url)) as store:
        for number in range(1, 5):
            store.add(index_run(night(tmp_path / "one", number, board="name:one")))
        store.add(index_run(night(tmp_path / "two", 9, board="name:two")))
        deleted = prune(store, "2")
        assert deleted == ["20260001T020000Z-000001", "20260002T020000Z-000002"]
        kept = [("name:one", "20260003"), ("name:one", "20260004"), ("name:two", "20260009")]
        assert [(r["board"], r["run_id"][:8]) for r in store.runs()] == kept
        assert store.records("20260001T020000Z-000001") == []
        assert store.samples("20260001T020000Z-000001", ("codec", "seed", "json", "decode")) == []
    # a store from a newer evbench is refused, naming both versions
    open_store(parse_url(store_url)).close()
    newer = "UPDATE evbench_meta SET value = '7' WHERE key = 'schema_version'"
    path = parse_url(store_url).path  # None on PostgreSQL
    if path is None:
        import psycopg

        with psycopg.connect(store_url) as connection:
            connection.execute(newer)
    else:
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.execute(newer)
            connection.commit()
        before = path.read_bytes()
    with pytest.raises(FormatError, match="schema version 7; this evbench knows versions up to 1"):
        open_store(parse_url(store_url))
    assert path is None or path.read_bytes() == before  # left as it was, the 7 kept


@pytest.mark.slow
def test_two_clients_adding_at_once_lose_nothing(store_url, tmp_path):
    """Two `evbench history add` processes (on PostgreSQL: two host PCs of a lab racing to
    create the schema) start together, each with six nights, three shared: both succeed,
    every night is stored once, whole."""
    runs = [night(tmp_path, number) for number in range(1, 10)]
    add = [sys.executable, "-m", "evbench", "history", "add", "--history", store_url]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    batches = (runs[:6], runs[3:][::-1])  # interleaved, so both write at once
    processes = [subprocess.Popen([*add, *map(str, batch)], **pipes) for batch in batches]
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


def test_store_urls_the_default_store_and_a_non_store_file(history_store, monkeypatch, tmp_path):
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
    assert default_url().path == history_store  # conftest's: every test has a store of its own
    monkeypatch.delenv("EVBENCH_HISTORY")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_url().path == tmp_path / "data" / "evbench" / "history.sqlite"
    monkeypatch.setenv("EVBENCH_HISTORY", "sqlite:////srv/h.sqlite")
    assert default_url().path == Path("/srv/h.sqlite")
    assert default_url("/other.sqlite").path == Path("/other.sqlite")
    path = tmp_path / "notes.sqlite"
    path.write_text("not a database, but notes\n" * 100)
    with pytest.raises(FormatError, match="is not an SQLite history store"):
        open_store(parse_url(str(path)))
    assert path.read_text().startswith("not a database")


@pytest.mark.integration
def test_no_server_or_a_wrong_password_is_one_clear_line_never_showing_it(postgres, monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "whatever")
    url = f"postgresql://evbench@127.0.0.1:{free_port()}/history"  # closed: nothing listens
    with pytest.raises(UserError, match=r"cannot connect to the history store .*refused"):
        open_store(parse_url(url))
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


@pytest.mark.integration
def test_copy_to_postgresql_and_back_is_identical_by_command_too(postgres, monkeypatch, tmp_path):
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
    # the history copy command, between SQLite and PostgreSQL
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


@pytest.mark.integration
def test_every_command_on_postgresql_a_foreign_database_refused(postgres, tmp_path, monkeypatch):
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


def _interface(root: Path, name: str, mac: str, physical: bool = True, kind: str = "1") -> None:
    interface = root / "sys/class/net" / name
    interface.mkdir(parents=True)
    (interface / "address").write_text(mac + "\n")
    (interface / "type").write_text(kind + "\n")
    if physical:
        (interface / "device").mkdir()


def test_each_source_wins_until_it_is_taken_away_and_never_the_hostname(tmp_path):
    root = tmp_path / "board"
    (root / "proc/device-tree").mkdir(parents=True)
    (root / "proc/device-tree/serial-number").write_bytes(b"1A2B3C4D\0")
    _interface(root, "eth0", "34:08:e1:80:8e:01")
    (root / "etc").mkdir()
    (root / "etc/machine-id").write_text("0123456789abcdef0123456789abcdef\n")
    assert board_identity.identify("bench-3", root=root) == {
        "id": "name:bench-3", "source": "--board-name", "place": None,
    }  # fmt: skip
    identity = board_identity.identify(None, place="rack2/slot4", root=root)
    assert identity["id"] == "place:rack2/slot4" and identity["source"] == "lab place"
    assert board_identity.identify(root=root) == {
        "id": "serial:1A2B3C4D", "source": "device-tree serial-number", "place": None,
    }  # fmt: skip
    (root / "proc/device-tree/serial-number").unlink()
    _interface(root, "br0", "02:00:00:00:00:09", physical=False)  # a bridge: no device
    _interface(root, "can0", "00:00:00:00:00:00", kind="280")  # CAN: not Ethernet
    _interface(root, "eth1", "34:08:e1:80:8e:02")
    identity = board_identity.identify(root=root)
    assert identity["id"] == "mac:34:08:e1:80:8e:01"
    assert identity["source"] == "Ethernet MAC of eth0"
    (root / "sys/class/net/eth0/device").rmdir()  # the next physical one by name
    assert board_identity.identify(root=root)["id"] == "mac:34:08:e1:80:8e:02"
    (root / "sys/class/net/eth1/device").rmdir()
    identity = board_identity.identify(root=root)
    assert identity["id"] == "machine-id:0123456789abcdef0123456789abcdef"
    assert identity["source"] == "/etc/machine-id"
    identity = board_identity.identify(root=tmp_path / "nothing")  # nothing at all
    assert identity["id"] is None and "none found" in identity["source"]
    manifest = {"board_identity": board_identity.identify("bench-3"), "platform": {}}
    assert stored_identity(manifest) == ("name:bench-3", "--board-name")  # a run carries it


@pytest.mark.parametrize("bad", ["bench 3", "", "-x", "a" * 129, "é"])
def test_a_bad_name_is_refused(bad):
    with pytest.raises(ValueError, match="board name"):
        board_identity.check_name(bad)


def test_show_says_which_series_a_night_is_of_when_their_settings_differ(tmp_path: Path):
    # Two nights of 200 payloads, then one of 50: two series, as `check` keeps them (not one
    # column, the third reading as a change of the first two).
    params = [None, None, {"payloads": 50}]
    nights = [night(tmp_path, n, codec_params=p) for n, p in enumerate(params, start=1)]
    store = tmp_path / "h.sqlite"
    added = evbench("history", "add", "--history", str(store), *map(str, nights))
    assert added.returncode == 0, added.stderr
    argv = ["history", "show", "decode", "--board", "bench-1", "--codec", "json"]
    show = evbench(*argv, "--history", str(store))
    assert show.returncode == 0, show.stderr
    header, _rule, *rows = show.stdout.splitlines()[1:6]
    assert header.split("|")[-1].strip() == "Series (not comparable across)"
    assert [row.split("|")[-1].strip() for row in rows] == ["payloads=200"] * 2 + ["payloads=50"]
    # One series: no such column
    evbench("history", "add", "--history", str(tmp_path / "one.sqlite"), *map(str, nights[:2]))
    one = evbench(*argv, "--history", str(tmp_path / "one.sqlite"))
    assert one.returncode == 0 and "Series" not in one.stdout, one.stdout


@pytest.mark.integration  # a real read-only bind mount (root)
def test_a_store_that_cannot_be_written_here_is_not_called_foreign_or_damaged(tmp_path: Path):
    # A lab told its store is foreign or damaged may delete or restore it.
    require(os.geteuid() == 0, "root, to mount")
    folder = tmp_path / "stores"
    folder.mkdir()
    store = folder / "h.sqlite"
    added = evbench("history", "add", "--history", str(store), str(night(tmp_path, 1)))
    assert added.returncode == 0, added.stderr
    mount = require_command("mount")
    subprocess.run([mount, "--bind", str(folder), str(folder)], check=True)
    try:
        subprocess.run([mount, "-o", "remount,bind,ro", str(folder)], check=True)
        done = evbench("history", "add", "--history", str(store), str(night(tmp_path, 2)))
        listed = evbench("history", "list", "--history", str(store))
    finally:
        subprocess.run([require_command("umount"), str(folder)], check=True)
    assert done.returncode == 2, done.stderr
    assert "not an SQLite history store" not in done.stderr and "damaged" not in done.stderr
    assert "cannot be written here (a read-only mount?)" in done.stderr, done.stderr
    assert listed.returncode == 0 and "1 runs in" in listed.stderr, listed.stderr
