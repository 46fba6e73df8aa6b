"""evbench run over a serial console: deploy, run detached, bring the results home verified."""

from __future__ import annotations

import ast
import shutil
import stat

import pytest

from evbench.cli import evbench
from evbench_core import results

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quick_run_over_serial_brings_back_a_verified_run(console_line, console_user, tmp_path):
    url = f"{console_line.url}?user={console_user.name}"
    out = tmp_path / "run"
    # The whole path a field engineer takes: the agent goes over the line too
    # (280 KB deflated, under a minute at 115200 baud), kernel noise included; so no
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
    # Every file the run leaves, here (results, transcripts, logs) and on the board,
    # holds no password: not in its bytes, not in a transcript's reassembled stream.
    secret = console_user.password.encode()
    transcripts = [*tmp_path.rglob("*.transcript")]
    assert len(transcripts) >= 2  # results/console/... and the copy beside the results
    for path in [*tmp_path.rglob("*"), *(console_user.home / ".evbench").rglob("*")]:
        if path.is_file():
            assert secret not in path.read_bytes(), path
    for path in transcripts:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        records = [line.split(" ", 2) for line in path.read_text().splitlines()]
        for direction in "<>":
            joined = b"".join(
                ast.literal_eval(r[2]) for r in records if len(r) == 3 and r[1] == direction
            )
            assert secret not in joined, (path, direction)
