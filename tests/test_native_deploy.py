"""A cross-built aarch64 harness (tests/native_cross.py), deployed with `evbench deploy
--native`, measures in a codec run over SSH: a real sshd on loopback stands for the board, and
the aarch64 executable runs through qemu-user (binfmt_misc, qemu-user-static) as it would run
natively on the AM62x. tests/board/test_e2e_native.py runs it on the QEMU board.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import require
from native_cross import build_aarch64_harness

from evbench.cli import evbench

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BOARD_PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="module")
def aarch64_harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require(Path("/proc/sys/fs/binfmt_misc/qemu-aarch64").exists(), "qemu-aarch64 in binfmt_misc")
    return build_aarch64_harness(tmp_path_factory)


def test_a_deployed_aarch64_harness_measures_in_a_codec_run(
    aarch64_harness, sshd, ssh_home, tmp_path, capsys
):
    work = tmp_path / "board"
    url = f"ssh://{sshd.address}?dir={work}&python={BOARD_PYTHON}"
    assert evbench(["deploy", "--board", url, "--native", str(aarch64_harness)]) == 0
    assert "native executables: evbench-native-cpp-nlohmann" in capsys.readouterr().err
    deployed = work / "agent" / "libexec" / "evbench-native" / "evbench-native-cpp-nlohmann"
    assert deployed.read_bytes() == (aarch64_harness / deployed.name).read_bytes()
    responder = deployed.with_name("evbench-link-responder")  # the build's, shipped with it
    assert responder.read_bytes() == (aarch64_harness / responder.name).read_bytes()
    out = tmp_path / "out"
    argv = ["run", "--board", url, "--quick", "--suite", "codec", "--profile", "seed"]
    code = evbench([*argv, "--codecs", "json,cpp:nlohmann", "--out", str(out)])
    assert code == 0, capsys.readouterr().err[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    stated = manifest["platform"]["native_codecs"]["cpp:nlohmann"]
    assert stated["executable"] == str(deployed)
    assert stated["library"] == "nlohmann::json"
    sets = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    timed = [s for s in sets if s["codec"] == "cpp:nlohmann" and s["metric"] == "encode"]
    assert timed and all(v > 0 for s in timed for v in s["values"])


def test_deploy_refuses_a_directory_without_harnesses(sshd, ssh_home, tmp_path, capsys):
    url = f"ssh://{sshd.address}?dir={tmp_path / 'board'}&python={BOARD_PYTHON}"
    assert evbench(["deploy", "--board", url, "--native", str(tmp_path)]) == 2
    assert "holds no harness" in capsys.readouterr().err
