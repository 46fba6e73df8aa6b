"""evbench diag through a real login shell on a serial line, directly and through ser2net."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import require_command
from console_rig import Ser2net

from evbench.cli import evbench

pytestmark = pytest.mark.integration


def _check_report(out, capsys, board_url):
    text = capsys.readouterr().out
    report = json.loads((out / "diag.json").read_text())
    assert report["format"] == "evbench-diag" and report["board"] == board_url
    assert report["sections"]["kernel"]["kernel"].startswith("Linux ")
    assert report["sections"]["uptime"]["uptime"]["unit"] == "s"
    assert report["sections"]["memory"]["MemTotal"]["value"] > 0
    assert "lo" in report["sections"]["network"]["interfaces"]
    assert "kernel:      Linux" in text and "memory:" in text
    transcript = (out / "console.transcript").read_text()
    assert "# evbench console transcript" in transcript
    return report, text


def test_diag_over_serial_without_agent(console_line, console_user, tmp_path, capsys):
    # The user is the session's: a console test run before this one in the same worker
    # (in any order, under xdist) may have deployed the agent; this test needs none.
    shutil.rmtree(console_user.home / ".evbench" / "agent", ignore_errors=True)
    url = f"{console_line.url}?user={console_user.name}"
    out = tmp_path / "diag"
    assert evbench(["diag", "--board", url, "--out", str(out)]) == 0
    report, text = _check_report(out, capsys, url)
    # The throwaway user has no agent: the report says so and what it leaves out.
    assert report["agent"] is None
    assert any(item.startswith("agent: not on the board") for item in report["missing"])
    assert "agent:       not found" in text
    # The throwaway user reads the kernel log only where the kernel allows anyone to.
    open_log = Path("/proc/sys/kernel/dmesg_restrict").read_text().strip() == "0"
    assert report["sections"]["kernel_errors"]["readable"] is open_log
    assert open_log or any(item.startswith("kernel errors: ") for item in report["missing"])


def test_diag_through_ser2net_rfc2217_with_agent(console_line, console_user, tmp_path, capsys):
    # The agent where `evbench deploy` puts it; placed here as root to save the
    # minute its upload takes at 115200 baud (test_console_run uploads it).
    console_user.install_agent()
    server = Ser2net(require_command("ser2net"), str(console_line.host_link.resolve()), tmp_path)
    try:
        url = f"{server.url}?user={console_user.name}"
        out = tmp_path / "diag"
        assert evbench(["diag", "--board", url, "--out", str(out)]) == 0
    finally:
        server.stop()
    report, text = _check_report(out, capsys, url)
    assert report["agent"]["info"]["agent"]
    assert report["codec_check"]["json"]["round_trip"] is True
    assert report["codec_check"]["protobuf"]["round_trip"] is True
    assert "codec protobuf: round trip ok" in text


def test_diag_local_and_over_ssh_is_the_same_report(sshd, ssh_home, tmp_path, capsys):
    # One report, written once against the Board protocol: this machine
    # directly, then over a real sshd before and after the agent is deployed.
    local = tmp_path / "local"
    assert evbench(["diag", "--board", "local", "--out", str(local)]) == 0
    capsys.readouterr()
    report = json.loads((local / "diag.json").read_text())
    assert report["codec_check"]["protobuf"]["round_trip"] is True
    url = f"ssh://{sshd.user}@127.0.0.1:{sshd.port}?dir={tmp_path}/board&python=/usr/bin/python3"
    before, after = tmp_path / "before", tmp_path / "after"
    assert evbench(["diag", "--board", url, "--out", str(before)]) == 0
    assert evbench(["deploy", "--board", url]) == 0
    assert evbench(["diag", "--board", url, "--out", str(after)]) == 0
    capsys.readouterr()
    without = json.loads((before / "diag.json").read_text())
    with_agent = json.loads((after / "diag.json").read_text())
    assert without["agent"] is None and "codec_check" not in without
    assert with_agent["codec_check"]["json"]["round_trip"] is True
    for name in ("kernel", "memory", "network", "disk"):
        assert set(without["sections"][name]) == set(report["sections"][name]), name
    assert without["sections"]["kernel"] == report["sections"]["kernel"]
