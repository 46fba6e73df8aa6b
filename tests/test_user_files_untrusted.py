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

FIRST = (DATA / "bms_samples.jsonl").read_bytes().splitlines()[0]
#: case: (the file's name, the option naming it, its bytes (None: a FIFO), what is said)
CASES = {
    # the byte's offset by hand: "fields:\n" is 8 bytes, the line before it 36
    "generator not UTF-8": ("rules.yaml", "--generate",
                            b"fields:\n  soc_percent: {range: [0, 100]}  # \xff\n",
                            ["rules.yaml is not UTF-8 text (byte 44)"]),
    "json map 100000 deep": ("map.json", "--json-map", b"[" * 100_000 + b"]" * 100_000,
                             ["map.json nests too deeply to read"]),
    # a hang would end in the 120 s timeout
    "FIFO as samples": ("samples.jsonl", "--samples", None,
                        ["samples.jsonl is not a regular file"]),
    "samples line over 1 MiB": ("pack.jsonl", "--samples",
                                FIRST + b"\n" + FIRST[:-1] + b', "pad": "'
                                + b"x" * (2 * 1024 * 1024) + b'"}\n',
                                ["pack.jsonl line 2 is", "over 1048576"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_a_file_that_was_an_internal_error_or_a_hang_is_refused_at_once(tmp_path, case):
    name, option, content, says = CASES[case]
    path = tmp_path / name
    if content is None:
        os.mkfifo(path)
    else:
        path.write_bytes(content)
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "evbench", "run", "--board", "local", "--quick", "--suite",
         "codec", "--codecs", "json,protobuf", *SCHEMA, option, str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert not out.exists() and "Traceback" not in done.stderr
    assert "internal error" not in done.stderr
    assert all(part in done.stderr for part in says), done.stderr[-2000:]
