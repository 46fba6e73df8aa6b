"""evbench run over a serial console: deploy, run detached, bring the results home verified."""

from __future__ import annotations

import shutil

import pytest

from evbench.cli import evbench
from evbench_agent import results

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quick_run_over_serial_brings_back_a_verified_run(console_line, console_user, tmp_path):
    url = f"{console_line.url}?user={console_user.name}"
    out = tmp_path / "run"
    # The whole path a field engineer takes: the agent goes over the line too
    # (227 KB, under a minute at 115200 baud), kernel noise included; so no
    # agent left on the board by another test.
    shutil.rmtree(console_user.home / ".evbench", ignore_errors=True)
    argv = ["run", "--board", url, "--quick", "--suite", "codec", "--profile", "seed"]
    status = evbench([*argv, "--codecs", "json,protobuf", "--out", str(out)])
    assert status == 0
    assert results.verify_checksums(out) == []
    run = results.load_run(out)
    assert run.complete
    assert {record["codec"] for record in run.records} >= {"json", "protobuf"}
    transcript = (out / "console.transcript").read_text()
    assert "@@" in transcript and console_user.password not in transcript
    assert console_line.noise.written > 0
    assert (console_user.home / ".evbench" / "agent" / "evbench-agent.pyz").is_file()
