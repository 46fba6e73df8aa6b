"""A cross-built aarch64 harness, deployed with `evbench deploy --native`, measures in a codec
run over a loopback sshd through qemu-user, as on the AM62x; a harness of another
architecture than the machine's (`file` reads the ELF header independently) is said,
recorded and reported."""

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import AGENT_SRC, ROOT, require, require_command
from native_cross import CODEC, build_aarch64_harness, build_host_harness

from evbench.cli import evbench
from evbench.report import unrepresentative
from evbench_agent.native import runtimes

pytestmark = pytest.mark.integration

BOARD_PYTHON = "/usr/bin/python3"
HARNESS = runtimes.RUNTIMES[CODEC].executable_name
RULE = Path("/usr/lib/binfmt.d/qemu-aarch64.conf")
#: `file`'s words for the architectures here, and `uname -m`'s names for them.
FILE_SAYS = {"ARM aarch64": "aarch64", "x86-64": "x86_64"}
RUN = [sys.executable, "-m", "evbench_agent", "run", "--suite", "codec", "--quick",
       "--profile", "seed", "--codecs", f"json,{CODEC}"]  # fmt: skip


@pytest.fixture(scope="module")
def aarch64_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_aarch64_harness(tmp_path_factory)


@pytest.fixture(scope="module")
def host_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_host_harness(tmp_path_factory)


@pytest.mark.slow
def test_a_deployed_aarch64_harness_measures_in_a_codec_run(
    aarch64_dir, sshd, ssh_home, tmp_path, capsys
):
    require(Path("/proc/sys/fs/binfmt_misc/qemu-aarch64").exists(), "qemu-aarch64 in binfmt_misc")
    work = tmp_path / "board"
    url = f"ssh://{sshd.address}?dir={work}&python={BOARD_PYTHON}"
    assert evbench(["deploy", "--board", url, "--native", str(tmp_path)]) == 2  # no harnesses
    assert "holds no harness" in capsys.readouterr().err
    assert evbench(["deploy", "--board", url, "--native", str(aarch64_dir)]) == 0
    assert "native executables: evbench-native-cpp-nlohmann" in capsys.readouterr().err
    deployed = work / "agent" / "libexec" / "evbench-native" / "evbench-native-cpp-nlohmann"
    assert deployed.read_bytes() == (aarch64_dir / deployed.name).read_bytes()
    responder = deployed.with_name("evbench-link-responder")  # the build's, shipped with it
    assert responder.read_bytes() == (aarch64_dir / responder.name).read_bytes()
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


def file_architecture(path: Path) -> str | None:
    said = subprocess.run(
        [require_command("file"), "-b", str(path)], capture_output=True, text=True, timeout=30
    ).stdout
    found = [name for words, name in FILE_SAYS.items() if words in said]
    assert len(found) <= 1, said
    return found[0] if found else None


def test_the_architecture_is_read_from_the_elf_header_as_file_reads_it(aarch64_dir, host_dir):
    aarch64, host = aarch64_dir / HARNESS, host_dir / HARNESS
    assert file_architecture(aarch64) == "aarch64"
    assert runtimes.architecture(str(aarch64)) == "aarch64"
    assert runtimes.architecture(str(host)) == file_architecture(host) == platform.machine()
    # a script (the protocol tests' stand-in) is no ELF file: no architecture to say
    assert runtimes.architecture(str(ROOT / "tests" / "native_stand_in.py")) is None
    assert runtimes.runs_natively(str(runtimes.architecture(str(host))), platform.machine())
    assert not runtimes.runs_natively("aarch64", "x86_64")
    # the board's uname and Debian's names for the same architectures
    assert runtimes.runs_natively("aarch64", "arm64")
    assert runtimes.runs_natively("arm", "armv7l")
    assert runtimes.runs_natively("i386", "i686")


def _emulated(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """argv with Debian's qemu-aarch64 rule registered in a binfmt_misc instance of its own
    (a new user and mount namespace)."""
    require(RULE.exists(), f"{RULE} (apt-get install qemu-user-static)")
    register = RULE.read_text().strip()
    script = (
        "mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc && "
        'printf "%s" "$EVBENCH_TEST_RULE" > /proc/sys/fs/binfmt_misc/register && exec "$@"'
    )
    return subprocess.run(
        [require_command("unshare"), "--user", "--map-root-user", "--mount",
         "sh", "-c", script, "sh", *argv],
        capture_output=True, text=True, timeout=600,
        env=dict(env, EVBENCH_TEST_RULE=register),
    )  # fmt: skip


def test_an_aarch64_harness_run_under_emulation_is_said_recorded_and_reported(
    aarch64_dir, tmp_path
):
    require(platform.machine() == "x86_64", "an x86_64 machine (the emulation under test)")
    installed = tmp_path / "libexec"
    installed.mkdir()
    shutil.copy2(aarch64_dir / HARNESS, installed / HARNESS)
    # this venv's agent, its native harnesses looked for in `installed`
    env = dict(os.environ, EVBENCH_NATIVE_DIR=str(installed), PYTHONPATH=str(AGENT_SRC),
               PYTHONNOUSERSITE="1")  # fmt: skip
    # the emulation is real: the aarch64 harness answers --about through qemu-user
    about = _emulated([str(installed / HARNESS), "--about"], env)
    assert about.returncode == 0 and about.stdout.startswith("ok\t"), about.stderr[-2000:]
    out = tmp_path / "run"
    done = _emulated([*RUN, "--out", str(out)], env)
    assert done.returncode == 0, done.stderr[-3000:]
    # measured, and said while measuring: built for aarch64, on this x86_64 machine
    sets = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert any(s["codec"] == CODEC and s["metric"] == "decode" for s in sets)
    said = [line for line in done.stderr.splitlines() if "under emulation" in line]
    assert len(said) == 1, done.stderr[-3000:]
    assert f"{installed / HARNESS} is built for aarch64" in said[0]
    assert "this machine is x86_64" in said[0]
    # recorded: the harness's architecture beside the board's
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["platform"]["machine"] == "x86_64"
    assert manifest["platform"]["native_codecs"][CODEC]["architecture"] == "aarch64"
    # and the report's warnings (terminal and report.md) say it
    warned = [w for w in unrepresentative.warnings(manifest) if "emulation" in w]
    assert len(warned) == 1 and f"{CODEC} (aarch64)" in warned[0], warned
