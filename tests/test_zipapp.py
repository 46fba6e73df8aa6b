"""The agent's zipapp (`evbench deploy` ships it): deflated, reproducible, and it runs."""

import functools
import io
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from evbench.usecases.deploy import build_zipapp

_built = functools.cache(build_zipapp)  # built once for the file's tests


def test_every_entry_is_deflated_and_the_build_is_reproducible() -> None:
    data = _built()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        entries = archive.infolist()
        assert archive.testzip() is None  # every entry's CRC holds
        plain = sum(entry.file_size for entry in entries)
    assert {entry.compress_type for entry in entries} == {zipfile.ZIP_DEFLATED}
    # Python source deflates to under half its size: a third of the bytes over a 115200-baud
    # console line (stored, 0.8 MB took 136 s in tests/test_log_secrets.py)
    assert len(data) < plain / 2, (len(data), plain)
    assert build_zipapp() == data  # the same bytes again


# -- the copy the first start unpacks (deploy.ZIPAPP_MAIN) ----------------------------------------

#: zipimport writes no bytecode; a copy the first start unpacked is imported with it.
BYTECODE_ON = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _start(pyz: Path, *args: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, str(pyz), *args]
    return subprocess.run(argv, cwd=pyz.parent, env=BYTECODE_ON, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def _archive(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    pyz = directory / "evbench-agent.pyz"
    pyz.write_bytes(_built())
    return pyz


def _copies(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name != "evbench-agent.pyz")


def test_the_first_start_unpacks_the_archive_and_every_process_imports_from_the_copy(tmp_path):
    pyz = _archive(tmp_path / "agent")
    done = _start(pyz, "--help")
    assert done.returncode == 0 and "run" in done.stdout, done.stderr
    (copy,) = _copies(pyz.parent)
    assert re.fullmatch(r"evbench-agent-[0-9a-f]{16}", copy.name), copy.name
    with zipfile.ZipFile(pyz) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    unpacked = {
        p.relative_to(copy).as_posix(): p.read_bytes()
        for p in copy.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.name != "UNPACKED"
    }
    assert unpacked == entries  # byte for byte, nothing more
    # zipimport writes no bytecode: the .pyc files show the imports went through the copy.
    assert list((copy / "evbench_agent" / "__pycache__").glob("cli.*.pyc"))
    # A run: its workers (`python -m evbench_agent`) find the package in the copy too.
    out = tmp_path / "run"
    run = ("run", "--suite", "codec", "--profile", "seed", "--codecs", "json", "--quick")
    done = _start(pyz, *run, "--processes", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert (out / "complete").is_file()
    assert _copies(pyz.parent) == [copy]


def test_starts_at_once_leave_one_copy_and_replace_an_older_one(tmp_path: Path) -> None:
    pyz = _archive(tmp_path / "agent")
    older = pyz.parent / "evbench-agent-0123456789abcdef"  # what a deploy before left
    (older / "evbench_agent").mkdir(parents=True)
    (older / "UNPACKED").write_text("evbench-agent-0123456789abcdef\n")
    argv = [sys.executable, str(pyz), "--help"]
    starts = [
        subprocess.Popen(argv, env=BYTECODE_ON, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    for start in starts:
        assert start.wait(timeout=120) == 0, start.stderr.read() if start.stderr else ""
        if start.stderr:
            start.stderr.close()
    (copy,) = _copies(pyz.parent)  # no staging directory left, the older copy gone
    assert copy != older and (copy / "UNPACKED").is_file()


def test_where_no_copy_can_be_made_or_trusted_the_agent_runs_from_the_archive(tmp_path):
    first = _archive(tmp_path / "first")
    assert _start(first, "--help").returncode == 0
    (copy,) = _copies(first.parent)
    # A file where the copy would go: nothing can be unpacked there.
    blocked = _archive(tmp_path / "blocked")
    (blocked.parent / copy.name).write_text("not a directory\n")
    done = _start(blocked, "--help")
    assert done.returncode == 0 and "run" in done.stdout, done.stderr
    assert (blocked.parent / copy.name).read_text() == "not a directory\n"
    assert len(_copies(blocked.parent)) == 1  # no staging directory left
    # A directory of that name that no start finished (no UNPACKED): never imported.
    untrusted = _archive(tmp_path / "untrusted")
    poisoned = untrusted.parent / copy.name / "evbench_agent"
    poisoned.mkdir(parents=True)
    (poisoned / "__init__.py").write_text("raise SystemExit('imported the unfinished copy')\n")
    done = _start(untrusted, "--help")
    assert done.returncode == 0 and "run" in done.stdout, done.stderr
    assert not (untrusted.parent / copy.name / "UNPACKED").exists()
    # An archive naming a path outside the copy (not one deploy builds): nothing is
    # written there, and the agent runs from the archive.
    hostile = tmp_path / "hostile" / "evbench-agent.pyz"
    hostile.parent.mkdir()
    with zipfile.ZipFile(first) as source, zipfile.ZipFile(hostile, "w") as archive:
        for name in source.namelist():
            archive.writestr(name, source.read(name))
        archive.writestr("evbench_agent/../../escaped.txt", "outside\n")
    done = _start(hostile, "--help")
    assert done.returncode == 0 and "run" in done.stdout, done.stderr
    assert not list(tmp_path.rglob("escaped.txt"))
    assert _copies(hostile.parent) == []
