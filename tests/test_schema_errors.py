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


def test_nan_in_the_fields_style_is_refused_before_a_run_directory(tmp_path):
    samples = tmp_path / "pack.jsonl"
    samples.write_text(
        '{"sequence": 1, "socPercent": 50.0}\n{"sequence": 2, "socPercent": "NaN"}\n'
    )
    out = tmp_path / "run"
    done = _evbench(
        "run", "--board", "local", *CODEC_RUN, "--schema", str(BMS_DIR / "bms.proto"),
        "--message", "evbench.example.BmsStatus", "--json-style", "fields",
        "--samples", str(samples), "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert not out.exists()
    (error,) = _errors(done.stderr)
    assert "evbench.example.BmsStatus.soc_percent is nan" in error
    assert "--json-style proto3" in done.stderr  # what to do


def test_a_blown_generator_budget_is_refused_before_a_run_directory(tmp_path):
    rules = tmp_path / "wide.json"
    rules.write_text(json.dumps({"fields": {"many": {"count": 100}, "many.many": {"count": 100}}}))
    out = tmp_path / "run"
    done = _evbench(
        "run", "--board", "local", *CODEC_RUN, "--schema", str(KINDS / "fanout.proto"),
        "--message", "evbench.kinds.M", "--generate", str(rules), "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert not out.exists()
    (error,) = _errors(done.stderr)
    assert "wide.json: payload 0: field 'many.many" in error and "budget per payload" in error
    assert "evbench: hint:" in done.stderr


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


def test_a_responder_without_the_schema_is_refused_before_a_run_directory(tmp_path):
    out = tmp_path / "run"
    done = _evbench(
        "run", "--board", "local", "--quick", "--codecs", "json,protobuf",
        "--peer", "127.0.0.1:9", "--schema", str(BMS_DIR / "bms.proto"),
        "--message", "evbench.example.BmsStatus", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert not out.exists()
    (error,) = _errors(done.stderr)
    assert "--peer 127.0.0.1:9" in error and "schema:evbench.example.BmsStatus" in error
    assert "leave --peer out" in done.stderr


def test_a_run_that_sends_the_responder_no_user_message_is_not_refused():
    from evbench import schema

    def args(**given):
        base = {"peer": "192.0.2.1:7000", "suite": None, "link_profile": None}
        return run_command.argparse.Namespace(**{**base, **given})

    for fine in (
        args(suite="codec"),
        args(link_profile="seed"),
        args(peer="host"),
        args(peer=None),
    ):
        schema._check_peer_knows_it(fine, "schema:x.Y")  # no UserError
