"""evbench run over a serial console, the whole path a field engineer takes: the agent
deployed over the line (280 KB deflated, under a minute at 115200 baud), kernel noise
included, the run detached and brought home verified; and at -vv, the protocol's detail
and no secret (the board password, a link token in the environment) in anything it leaves
(test_log_secrets.py does the same over ssh)."""

from __future__ import annotations

import os
import shutil
import stat

import pytest
from console_rig import transcript_streams
from test_log_secrets import assert_no_secret_in_files, has, link_token, run_vv

from evbench_core import results

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quick_run_over_serial_brings_back_a_verified_run_and_no_secret(
    console_line, console_user, tmp_path
):
    out = tmp_path / "run"
    shutil.rmtree(console_user.home / ".evbench", ignore_errors=True)  # so it deploys
    env = {**os.environ, "EVBENCH_PASSWORD": console_user.password, **link_token("console")}
    said = run_vv(f"{console_line.url}?user={console_user.name}", out, env)
    has(
        said,
        f"evbench: info: connecting to the console {console_line.url}",
        "evbench: info: shell ready on ",
        "evbench: debug: [evbench.boards.serial.login] login prompt seen; logging in as ",
        "evbench: debug: [evbench.boards.serial.login] password prompt seen; sending the password",
        "evbench: debug: [evbench.boards.serial.shell] command ",
        "evbench: debug: [evbench.boards.serial.transfer] got ",
        "evbench: info: suite codec: started",
        "evbench: info: fetching run ",
    )
    assert results.verify_checksums(out) == []
    run = results.load_run(out)
    assert run.complete
    assert {record["codec"] for record in run.records} >= {"json", "protobuf"}
    assert "@@" in (out / "console.transcript").read_text()
    assert console_line.noise.written > 0
    assert (console_user.home / ".evbench" / "agent" / "evbench-agent.pyz").is_file()
    # Every file the run leaves, here (results, transcripts, logs) and on the board, holds
    # neither secret: not in its bytes, not in a transcript's reassembled stream.
    assert assert_no_secret_in_files([tmp_path, console_user.home / ".evbench"], env) > 10
    transcripts = [*tmp_path.rglob("*.transcript")]
    assert len(transcripts) >= 2  # results/console/... and the copy beside the results
    for path in transcripts:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        for stream in transcript_streams(path).values():
            assert console_user.password.encode() not in stream, path
