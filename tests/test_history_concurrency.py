"""Several processes adding runs to one store at the same moment lose nothing.

Two `evbench history add` processes start together, each with six nights,
three of them the same: both succeed, every night is in the store once, with
all its records. On SQLite that is two processes on one host; on PostgreSQL,
two clients as two host PCs of a lab would be.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from history_runs import night

from evbench.history import open_store, parse_url

pytestmark = pytest.mark.slow


def _add_together(url: str, batches: list[list[Path]], env: dict) -> None:
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "evbench", "history", "add", "--history", url, *map(str, batch)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for batch in batches
    ]
    outputs = [process.communicate(timeout=300) for process in processes]
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err
        assert out.count("added: ") + out.count("already in the store: ") == 6, out
    added = sum(out.count("added: ") for out, _err in outputs)
    assert added == 9  # each night added by exactly one of the two


def _nights(tmp_path: Path) -> tuple[list[list[Path]], set[str]]:
    runs = [night(tmp_path, number) for number in range(1, 10)]
    ids = {f"2026{n:04d}T020000Z-{n:06x}" for n in range(1, 10)}
    # Interleaved, so both write at once; nights 4-6 are in both batches.
    return [runs[:6], runs[3:][::-1]], ids


def _assert_complete(url: str, ids: set[str]) -> None:
    with open_store(parse_url(url)) as store:
        runs = store.runs()
        assert {r["run_id"] for r in runs} == ids and len(runs) == 9
        for run in runs:
            assert len(store.records(run["run_id"])) == 10


def test_two_processes_add_to_one_sqlite_store_at_once(tmp_path):
    batches, ids = _nights(tmp_path)
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    _add_together(url, batches, dict(os.environ))
    _assert_complete(url, ids)


@pytest.mark.integration
def test_two_hosts_add_to_one_postgresql_store_at_once(postgres, monkeypatch, tmp_path):
    batches, ids = _nights(tmp_path)
    monkeypatch.setenv("PGPASSWORD", postgres.password)
    url = postgres.new_database()  # empty: both clients also race to create the schema
    _add_together(url, batches, dict(os.environ))
    _assert_complete(url, ids)
