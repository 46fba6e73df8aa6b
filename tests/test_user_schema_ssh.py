"""A user's schema over a real OpenSSH sshd on loopback: the spec file travels, no protoc there.

The "board" is this machine over ssh://USER@127.0.0.1:PORT, its python3 is
Debian's /usr/bin/python3 with protobuf 4.21 (cpp backend), as on a board image.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from evbench.cli import evbench

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DATA = ROOT / "tests" / "data" / "bms"
BMS = "evbench.example.BmsStatus"
RUN = [
    "--quick", "--suite", "codec", "--codecs", "json,protobuf",
    "--schema", str(DATA / "bms.proto"), "--message", BMS,
    "--samples", str(DATA / "bms_samples.jsonl"),
]  # fmt: skip


def _sizes(out: Path) -> dict[str, tuple]:
    summary = json.loads((out / "summary.json").read_text())
    sizes = [r for r in summary["records"] if r["metric"] == "size"]
    return {r["codec"]: (r["profile"], r["n"], r["min"], r["max"], r["mean"]) for r in sizes}


def test_a_user_schema_runs_over_ssh_like_locally(sshd, ssh_home, tmp_path, capsys):
    url = f"ssh://{sshd.address}?dir={tmp_path / 'board'}&python=/usr/bin/python3"
    remote_out, local_out = tmp_path / "remote", tmp_path / "local"
    assert evbench(["run", "--board", url, *RUN, "--out", str(remote_out)]) == 0
    assert f"schema:{BMS}" in capsys.readouterr().out
    # as a person types it, in its own process
    argv = [sys.executable, "-m", "evbench", "run", "--board", "local", *RUN]
    argv += ["--out", str(local_out)]
    local = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert local.returncode == 0, local.stderr
    assert (remote_out / "complete").exists()
    manifest = json.loads((remote_out / "manifest.json").read_text())
    assert manifest["platform"]["protobuf"] == "4.21.12"  # the board's runtime built the class
    assert manifest["spec"]["schema"]["message"] == BMS
    remote, local = _sizes(remote_out), _sizes(local_out)
    assert remote == local and remote["protobuf"][1] == 12  # the file's 12 lines, both places
