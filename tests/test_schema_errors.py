"""Refusals of a user's schema come up front (issue 29, item 5): before a run directory
exists, in one line naming the field, with what to do; `--debug` shows the agent's own
traceback. Each runs the real command in its own process, as a person types it.
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

from evbench.commands import run as run_command

BMS_DIR = ROOT / "tests" / "data" / "bms"
KINDS = ROOT / "tests" / "data" / "kinds"
CODEC_RUN = ["--suite", "codec", "--quick", "--codecs", "json,protobuf"]


def _evbench(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evbench", *argv], capture_output=True, text=True, timeout=600
    )


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("evbench: error:")]


BMS = ["--schema", str(BMS_DIR / "bms.proto"), "--message", "evbench.example.BmsStatus"]
WIDE = {"fields": {"many": {"count": 100}, "many.many": {"count": 100}}}
NAN = '{"sequence": 1, "socPercent": 50.0}\n{"sequence": 2, "socPercent": "NaN"}\n'


@pytest.mark.parametrize(
    ("files", "argv", "error_says", "then"),
    [
        # NaN in the fields style; what to do: the proto3 style
        ({"pack.jsonl": NAN},
         [*CODEC_RUN, *BMS, "--json-style", "fields", "--samples", "pack.jsonl"],
         ["evbench.example.BmsStatus.soc_percent is nan"], "--json-style proto3"),
        # a blown generator budget
        ({"wide.json": json.dumps(WIDE)},
         [*CODEC_RUN, "--schema", str(KINDS / "fanout.proto"), "--message", "evbench.kinds.M",
          "--generate", "wide.json"],
         ["wide.json: payload 0: field 'many.many", "budget per payload"], "evbench: hint:"),
        # a responder without the schema
        ({}, ["--quick", "--codecs", "json,protobuf", "--peer", "127.0.0.1:9", *BMS],
         ["--peer 127.0.0.1:9", "schema:evbench.example.BmsStatus"], "leave --peer out"),
    ],
    ids=["nan in the fields style", "generator budget", "responder without the schema"],
)  # fmt: skip
def test_a_refusal_comes_before_a_run_directory(tmp_path, files, argv, error_says, then):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "run"
    argv = [str(tmp_path / arg) if arg in files else arg for arg in argv]
    done = _evbench("run", "--board", "local", *argv, "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert not out.exists()
    (error,) = _errors(done.stderr)
    assert all(part in error for part in error_says), error
    assert then in done.stderr  # what to do


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
    from evbench import schema

    def args(**given):
        base = {"peer": "192.0.2.1:7000", "suite": None, "link_profile": None}
        return run_command.argparse.Namespace(**{**base, **given})

    for given in ({"suite": "codec"}, {"link_profile": "seed"}, {"peer": "host"}, {"peer": None}):
        fine = args(**given)
        schema._check_peer_knows_it(fine, "schema:x.Y")  # no UserError
