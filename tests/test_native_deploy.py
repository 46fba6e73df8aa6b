"""A cross-built aarch64 harness, deployed with `evbench deploy --native`, measures in a codec
run over SSH: a real sshd on loopback stands for the board, and the aarch64 executable runs
through qemu-user (binfmt_misc, qemu-user-static) as it would run natively on the AM62x.

The harness is nlohmann::json's: header-only, so the cross-build needs no arm64 library
packages; it is linked statically (EVBENCH_STATIC), so the board needs nothing but the file.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, require, require_command

from evbench.cli import evbench
from evbench_agent.native import runtimes

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BOARD_PYTHON = "/usr/bin/python3"
TOOLCHAIN = ROOT / "native" / "cmake" / "aarch64-linux-gnu.cmake"


@pytest.fixture(scope="module")
def aarch64_harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cmake = require_command("cmake")
    require_command("aarch64-linux-gnu-g++")
    require(Path("/proc/sys/fs/binfmt_misc/qemu-aarch64").exists(), "qemu-aarch64 in binfmt_misc")
    build = tmp_path_factory.mktemp("native-aarch64")
    subprocess.run(
        [cmake, "-S", str(ROOT / "native"), "-B", str(build), f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}",
         "-DEVBENCH_NATIVE_CODECS=cpp:nlohmann", "-DEVBENCH_STATIC=ON"],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run([cmake, "--build", str(build)], check=True, capture_output=True)
    harness = build / runtimes.RUNTIMES["cpp:nlohmann"].executable_name
    described = subprocess.run(["file", str(harness)], capture_output=True, text=True).stdout
    assert "ARM aarch64" in described and "statically linked" in described, described
    return build


def test_a_deployed_aarch64_harness_measures_in_a_codec_run(
    aarch64_harness, sshd, ssh_home, tmp_path, capsys
):
    work = tmp_path / "board"
    url = f"ssh://{sshd.address}?dir={work}&python={BOARD_PYTHON}"
    assert evbench(["deploy", "--board", url, "--native", str(aarch64_harness)]) == 0
    assert "native harnesses: evbench-native-cpp-nlohmann" in capsys.readouterr().err
    deployed = work / "agent" / "libexec" / "evbench-native" / "evbench-native-cpp-nlohmann"
    assert deployed.read_bytes() == (aarch64_harness / deployed.name).read_bytes()
    out = tmp_path / "out"
    code = evbench(
        ["run", "--board", url, "--quick", "--suite", "codec", "--profile", "seed",
         "--codecs", "json,cpp:nlohmann", "--out", str(out)]
    )  # fmt: skip
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
