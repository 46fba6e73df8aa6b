"""Files a user names for their own message, each once an internal error or a hang
(an independent attack): --generate with a byte that is not UTF-8 (UnicodeDecodeError),
a --json-map nested 100,000 deep (RecursionError), a FIFO as --samples (blocked for
ever), a 25 MiB samples line (136 s and 651 MB on the host). Each is now refused at
once with exit 2 and nothing run (docs/own-messages.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# each case runs the real command in a new process: seconds each
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "bms"
SCHEMA = ["--schema", str(DATA / "bms.proto"), "--message", "evbench.example.BmsStatus"]


def _refused(tmp_path: Path, *argv: str) -> str:
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "evbench", "run", "--board", "local", "--quick", "--suite",
         "codec", "--codecs", "json,protobuf", *SCHEMA, *argv, "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert not out.exists() and "Traceback" not in done.stderr
    assert "internal error" not in done.stderr
    return done.stderr


def test_a_generator_file_that_is_not_utf8_is_refused(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_bytes(b"fields:\n  soc_percent: {range: [0, 100]}  # \xff\n")
    said = _refused(tmp_path, "--generate", str(rules))
    # the byte's offset by hand: "fields:\n" is 8 bytes, the line before it 36
    assert "rules.yaml is not UTF-8 text (byte 44)" in said


def test_a_json_map_nested_100000_deep_is_refused(tmp_path):
    deep = tmp_path / "map.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    said = _refused(tmp_path, "--json-map", str(deep))
    assert "map.json nests too deeply to read" in said


def test_a_fifo_given_as_samples_is_refused_at_once(tmp_path):
    fifo = tmp_path / "samples.jsonl"
    os.mkfifo(fifo)
    said = _refused(tmp_path, "--samples", str(fifo))  # a hang ends in the 120 s timeout
    assert "samples.jsonl is not a regular file" in said


def test_a_samples_line_over_1_mib_is_refused_before_it_is_parsed(tmp_path):
    first = (DATA / "bms_samples.jsonl").read_text().splitlines()[0]
    huge = first[:-1] + ', "pad": "' + "x" * (2 * 1024 * 1024) + '"}'
    path = tmp_path / "pack.jsonl"
    path.write_text(first + "\n" + huge + "\n")
    said = _refused(tmp_path, "--samples", str(path))
    assert "pack.jsonl line 2 is" in said and "over 1048576" in said
