"""Refusals of a user's schema and the files it names come up front (issue 29, item 5): exit
2 before a run directory exists, one line naming what is wrong, with what to do; `--debug`
shows the agent's own traceback. Some files were once an internal error or a hang (an
independent attack): --generate with a byte that is not UTF-8 (UnicodeDecodeError), a
--json-map nested 100,000 deep (RecursionError), a FIFO as --samples (blocked for ever), a
25 MiB samples line (136 s and 651 MB on the host) (docs/own-messages.md). Each case runs
the real command in its own process, as a person types it.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import AGENT_SRC, ROOT
from test_schema_kinds import compile_set

from evbench import schema
from evbench.commands import run as run_command

DATA = ROOT / "tests" / "data" / "bms"
KINDS = ROOT / "tests" / "data" / "kinds"
BMS = "evbench.example.BmsStatus"
SAMPLES = DATA / "bms_samples.jsonl"
SCHEMA = ["--schema", str(DATA / "bms.proto"), "--message", BMS]
CODEC = ["--suite", "codec"]
WIDE = {"fields": {"many": {"count": 100}, "many.many": {"count": 100}}}
NAN = b'{"sequence": 1, "socPercent": 50.0}\n{"sequence": 2, "socPercent": "NaN"}\n'
LINES = SAMPLES.read_bytes().splitlines(keepends=True)
FIRST = LINES[0].rstrip(b"\n")
#: The samples file with line 5's state a name the enum lacks.
BAD_SAMPLES = b"".join(
    [*LINES[:4], LINES[4].replace(b'"state":"BMS_STATE_DRIVE"', b'"state":"BMS_STATE_FLYING"'),
     *LINES[5:]]
)  # fmt: skip
SLOW = pytest.mark.slow  # once an internal error or a hang


def _evbench(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evbench", *argv], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    # files: name to bytes (None: a FIFO); in argv, a file's name (or TMP, the test's
    # directory) stands for its path. in_error: parts of the one error line.
    ("files", "argv", "in_error", "in_stderr"),
    [
        pytest.param({"pack.jsonl": NAN},
                     [*CODEC, *SCHEMA, "--json-style", "fields", "--samples", "pack.jsonl"],
                     [f"{BMS}.soc_percent is nan"], ["--json-style proto3"], id="nan in fields"),
        pytest.param({"wide.json": json.dumps(WIDE).encode()},
                     [*CODEC, "--schema", str(KINDS / "fanout.proto"), "--message",
                      "evbench.kinds.M", "--generate", "wide.json"],
                     ["wide.json: payload 0: field 'many.many", "budget per payload"],
                     ["evbench: hint:"], id="generator budget"),
        pytest.param({}, ["--peer", "127.0.0.1:9", *SCHEMA],
                     ["--peer 127.0.0.1:9", f"schema:{BMS}"], ["leave --peer out"],
                     id="responder without the schema"),
        pytest.param({}, [*CODEC, "--schema", str(DATA / "broken.proto"), "--message", "x.Y"],
                     ["protoc cannot compile"], ['broken.proto:7:3: "flaot" is not defined.'],
                     id="does not compile"),  # protoc's own message
        pytest.param({}, [*CODEC, "--schema", str(DATA / "bms.proto"), "--message", "BmsStatus"],
                     ["no message 'BmsStatus'"], [f"messages there: {BMS}"], id="no such message"),
        pytest.param({}, [*CODEC, "--schema", str(DATA / "rich.proto"), "-I", "TMP", "--message",
                          "evbench.test.Rich"],
                     ["protoc cannot compile"], [], id="import not found"),
        pytest.param({}, [*CODEC, "--message", BMS, "--samples", str(SAMPLES)],
                     ["--message, --samples need --schema"], [], id="options need a schema"),
        pytest.param({"pack.jsonl": BAD_SAMPLES}, [*CODEC, *SCHEMA, "--samples", "pack.jsonl"],
                     ["pack.jsonl line 5:", "BMS_STATE_FLYING"], [], id="bad samples line"),
        pytest.param({"rules.yaml": b"fields:\n  cell_voltage: {count: 96}\n"},
                     [*CODEC, *SCHEMA, "--generate", "rules.yaml"],
                     ["rules.yaml", "no field 'cell_voltage'"], [], id="no such field"),
        # (a reversed range: tests/test_user_schema.py's [90, 10], in the same reader)
        pytest.param({"rules.yaml": b"fields:\n  sequence: {range: [0, 4294967296]}\n"},
                     [*CODEC, *SCHEMA, "--generate", "rules.yaml"],
                     ["rules.yaml", "impossible range [0, 4294967296]"], [],
                     id="range past uint32"),
        # the byte's offset by hand: "fields:\n" is 8 bytes, the line before it 36
        pytest.param({"rules.yaml": b"fields:\n  soc_percent: {range: [0, 100]}  # \xff\n"},
                     [*CODEC, *SCHEMA, "--generate", "rules.yaml"],
                     ["rules.yaml is not UTF-8 text (byte 44)"], [], id="generator not UTF-8",
                     marks=SLOW),
        pytest.param({"map.json": b"[" * 100_000 + b"]" * 100_000},
                     [*CODEC, *SCHEMA, "--json-map", "map.json"],
                     ["map.json nests too deeply to read"], [], id="json map 100000 deep",
                     marks=SLOW),
        # a hang would end in the 120 s timeout
        pytest.param({"samples.jsonl": None}, [*CODEC, *SCHEMA, "--samples", "samples.jsonl"],
                     ["samples.jsonl is not a regular file"], [], id="FIFO as samples",
                     marks=SLOW),
        pytest.param({"pack.jsonl": FIRST + b"\n" + FIRST[:-1] + b', "pad": "'
                      + b"x" * (2 * 1024 * 1024) + b'"}\n'},
                     [*CODEC, *SCHEMA, "--samples", "pack.jsonl"],
                     ["pack.jsonl line 2 is", "over 1048576"], [],
                     id="samples line over 1 MiB", marks=SLOW),
    ],
)  # fmt: skip
def test_a_refusal_comes_before_a_run_directory(tmp_path, files, argv, in_error, in_stderr):
    for name, content in files.items():
        if content is None:
            os.mkfifo(tmp_path / name)
        else:
            (tmp_path / name).write_bytes(content)
    paths = {"TMP": str(tmp_path), **{name: str(tmp_path / name) for name in files}}
    out = tmp_path / "run"
    argv = [*(paths.get(arg, arg) for arg in argv), "--out", str(out)]
    done = _evbench("run", "--board", "local", "--quick", "--codecs", "json,protobuf", *argv)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert not out.exists(), "a refused run left a run directory behind"
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("evbench: error:")]
    assert all(part in error for part in in_error), error
    assert all(part in done.stderr for part in in_stderr), done.stderr[-2000:]  # what to do


def test_the_agent_refuses_before_writing_anything_too(tmp_path):
    """The agent alone (evbench-agent run --spec): the same refusal, nothing written."""
    serialized = compile_set(KINDS, "fanout.proto", tmp_path)
    spec = {
        "schema": {
            "descriptor_set": base64.b64encode(serialized).decode(),
            "message": "evbench.kinds.M",
            "generator": {"name": "g.json", "document": {"fields": {"many": {"count": 100_000}}}},
        },
        "suites": ["codec"],
        "codecs": ["json", "protobuf"],
        "quick": True,
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    out = tmp_path / "agent-run"
    env = dict(os.environ, PYTHONPATH=str(AGENT_SRC))
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent", "run", "--spec", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert not out.exists()
    assert "g.json: payload 0: field 'many' takes the payload past" in done.stderr


def test_debug_asks_the_agent_for_its_traceback_and_shows_it():
    args = run_command.argparse.Namespace(debug=True, agent_spec=None)
    argv = run_command._agent_arguments(args, "run-1", Path("/tmp/x"))
    assert "--debug" in argv
    # what a real agent prints under --debug, found in its output
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent", "run", "--debug", "--spec", "/nonexistent"],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=str(AGENT_SRC)),
    )  # fmt: skip
    assert done.returncode != 0
    traceback = run_command._agent_traceback("agent says\n" + done.stderr)
    assert traceback.startswith("Traceback (most recent call last):")
    assert "evbench_agent" in traceback and "cannot read the spec /nonexistent" in traceback


def test_a_run_that_sends_the_responder_no_user_message_is_not_refused():
    base = {"peer": "192.0.2.1:7000", "suite": None, "link_profile": None}
    for given in ({"suite": "codec"}, {"link_profile": "seed"}, {"peer": "host"}, {"peer": None}):
        fine = run_command.argparse.Namespace(**{**base, **given})
        assert schema._check_peer_knows_it(fine, "schema:x.Y") is None  # no UserError
