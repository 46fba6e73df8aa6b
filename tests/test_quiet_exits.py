"""--quiet prints only errors; a full disk is the user's error, told in one line, with the
run kept and marked partial: real runs of `evbench run`, a real tmpfs for the full disk."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require, require_command

pytestmark = pytest.mark.integration  # real agent runs, a real tmpfs mount

EVBENCH = [sys.executable, "-m", "evbench"]
#: The smallest run that measures something: one profile, two codecs, the quick plan.
SMALL_RUN = ["run", "--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf"]


def _evbench(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*EVBENCH, *argv], capture_output=True, text=True, timeout=600)


@contextlib.contextmanager
def _tmpfs(where: Path, size: str):
    """A real small file system: writes past `size` fail with ENOSPC."""
    require(os.geteuid() == 0, "root, to mount a tmpfs")
    mount = require_command("mount")
    where.mkdir()
    subprocess.run([mount, "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run([require_command("umount"), str(where)], check=False)


def test_quiet_run_prints_nothing_at_all_when_all_goes_well(tmp_path):
    out = tmp_path / "run"
    done = _evbench(*SMALL_RUN, "--quick", "--quiet", "--out", str(out))
    assert done.returncode == 0, done.stderr
    # A cron job mails whatever a command prints: a good night prints nothing.
    assert done.stderr == "" and done.stdout == ""
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert (out / "report.html").is_file()  # quiet, not idle: the report is still written


def test_a_disk_filling_up_during_the_run_is_exit_4_in_one_line_with_a_partial_run(tmp_path):
    # 280 KiB: a 256 KiB reserve, the manifest and the first samples (of some 35 KB), then ENOSPC.
    with _tmpfs(tmp_path / "small", "280k") as disk:
        out = disk / "run"
        done = _evbench(*SMALL_RUN, "--quick", "--quiet", "--out", str(out))
        lines = done.stderr.splitlines()
        assert done.returncode == 4, done.stderr
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"PARTIAL run (cannot write the results in {out}: No space")
        assert "internal error" not in done.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["status"] == "partial"
        assert "No space left on device" in manifest["reason"]
        # What was written is whole: every line of samples.jsonl is a JSON object.
        samples = (out / "samples.jsonl").read_text().splitlines()
        assert samples and all(json.loads(line)["suite"] for line in samples)


def test_a_disk_too_small_to_start_is_a_usage_error_and_nothing_is_left_running(tmp_path):
    with _tmpfs(tmp_path / "tiny", "64k") as disk:
        out = disk / "run"
        done = _evbench(*SMALL_RUN, "--quick", "--out", str(out))
        assert done.returncode == 2, done.stderr
        errors = [line for line in done.stderr.splitlines() if ": error: " in line]
        full = f"cannot write the results in {out}: No space left on device"
        assert errors == [f"evbench: error: {full}"]
        assert "internal error" not in done.stderr
        assert not (out / "manifest.json").exists()  # refused before the run began


def test_vv_shows_evbench_s_own_steps_and_no_third_party_chatter(tmp_path):
    out = tmp_path / "run"
    done = _evbench("-vv", *SMALL_RUN, "--quick", "--out", str(out))
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert any(line.startswith("evbench: info: run ") and str(out) in line for line in said)
    assert "evbench: info: suite codec: started (9 steps)" in said  # 1 calibration + 8 workers
    assert "evbench: info: suite codec: finished" in said
    assert "evbench: info: the agent exited with 0" in said
    assert f"evbench: info: writing the report into {out}" in said
    assert any(line.startswith("evbench: info: history: adding run ") for line in said)
    # -vv's detail names the module it comes from: evbench's own, never a library's.
    detail = [line for line in said if line.startswith("evbench: debug: ")]
    agent = "evbench: debug: [evbench.commands.run] the agent: "
    assert any(line.startswith(agent) for line in detail)
    own = ("evbench: debug: [evbench.", "evbench: debug: [evbench_agent.")
    assert [line for line in detail if not line.startswith(own)] == []
    # matplotlib's font search (292 lines at -vv before; still there with --debug)
    # stays capped at warnings
    assert not [line for line in said if "findfont" in line or "matplotlib" in line]
