"""The release as a lab installs it, against the real previous release (docs/releases.md): both
built offline by .venv-build's hatchling (the previous one from the commit CHANGELOG.md names)
and installed from their wheels into clean venvs: the quick local run, pip refusing the mixed
pair, each reading the other's run, each host refusing the other's agent over a real sshd.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT, require, require_command
from packaging.requirements import Requirement
from test_release import previous_release

import evbench
from evbench_core import results

pytestmark = pytest.mark.integration

BUILD_PYTHON = ROOT / ".venv-build" / "bin" / "python"
BOARD_PYTHON = "/usr/bin/python3"
INSTALL_TIMEOUT = 900
RUN_TIMEOUT = 600
#: A run of the previous release's agent for this one to read (options it knew).
SHORT_RUN = ["--quick", "--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf"]


@dataclass(frozen=True)
class Release:
    version: str
    wheels: dict[str, Path]  # distribution name -> wheel file
    env: Path  # the clean virtual environment it is installed in

    def bin(self, name: str) -> str:
        return str(self.env / "bin" / name)


def run(argv: list, timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`argv` without the checkout's packages, or the user's, on an installed release's path."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONNOUSERSITE"] = "1"
    argv = [str(part) for part in argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return archive.read(name).decode()


def build_wheels(source: Path, out: Path) -> dict[str, Path]:
    require(BUILD_PYTHON.is_file(), f"hatchling's environment {BUILD_PYTHON.parent.parent}")
    out.mkdir(parents=True)
    offline = ["--no-deps", "--no-build-isolation", "--no-index", "--quiet", "--wheel-dir", out]
    trees = [source / "agent", source / "host_tools"]
    built = run([BUILD_PYTHON, "-m", "pip", "wheel", *offline, *trees], timeout=300)
    assert built.returncode == 0, built.stderr
    wheels = {}
    for wheel in out.glob("*.whl"):
        name = re.search(r"^Name: (.+)$", metadata(wheel), re.M)
        assert name is not None, wheel
        wheels[name[1].strip()] = wheel
    assert sorted(wheels) == ["evbench", "evbench-agent"], sorted(wheels)
    return wheels


def release(version: str, source: Path, top: Path) -> Release:
    """The release of the tree at `source`: its wheels built, then installed with their
    dependencies in a new virtual environment under `top`."""
    wheels, env = build_wheels(source, top / "wheels"), top / "env"
    made = run([sys.executable, "-m", "venv", env], timeout=120)
    assert made.returncode == 0, made.stderr
    pip = [env / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    done = run([*pip, wheels["evbench-agent"], wheels["evbench"]], timeout=INSTALL_TIMEOUT)
    assert done.returncode == 0, done.stderr
    return Release(version, wheels, env)


def previous_built(top: Path) -> Release:
    """The previous release, its tree taken from git at the commit the changelog names."""
    version, commit = previous_release()
    git = require_command("git")
    known = run([git, "-C", ROOT, "cat-file", "-e", f"{commit}^{{commit}}"], timeout=60)
    require(known.returncode == 0, f"release {version}'s commit {commit} (a clone with history)")
    archive = top / "source.tar"
    trees = [commit, "agent", "host_tools", "LICENSE"]
    taken = run([git, "-C", ROOT, "archive", "--output", archive, *trees], timeout=120)
    assert taken.returncode == 0, taken.stderr
    (top / "source").mkdir()
    unpacked = run([require_command("tar"), "-xf", archive, "-C", top / "source"], timeout=120)
    assert unpacked.returncode == 0, unpacked.stderr
    return release(version, top / "source", top)


def quick_run(current: Future[Release], out: Path) -> Path:
    """The acceptance: the installed release's quick run on the local board."""
    argv = [current.result().bin("evbench"), "run", "--board", "local", "--quick", "--out", out]
    done = run(argv, timeout=RUN_TIMEOUT, cwd=out.parent)
    assert done.returncode == 0, done.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future]]:
    """This checkout's release (then its quick run) and the previous release, made at once."""
    top = tmp_path_factory.mktemp
    with ThreadPoolExecutor(3) as pool:
        current = pool.submit(release, evbench.__version__, ROOT, top("current"))
        yield {
            "current": current,
            "current_run": pool.submit(quick_run, current, top("current-run") / "run"),
            "previous": pool.submit(previous_built, top("previous")),
        }


def test_the_wheels_carry_the_release_pin_its_agent_and_run_a_quick_local_run(made):
    current, current_run = made["current"].result(), made["current_run"].result()
    assert current.version == evbench.__version__
    major, minor, _ = current.version.split(".")
    for name, wheel in current.wheels.items():
        assert wheel.name == f"{name.replace('-', '_')}-{current.version}-py3-none-any.whl"
    requires = re.findall(r"^Requires-Dist: (.+)$", metadata(current.wheels["evbench"]), re.M)
    agent = [Requirement(line) for line in requires if line.startswith("evbench-agent")]
    assert [str(requirement.specifier) for requirement in agent] == [
        f"<{major}.{int(minor) + 1},>={major}.{minor}"
    ]
    # Installed from the wheels, not the checkout: in the venv, no editable project.
    probe = (
        "import json, evbench, evbench_agent; print(json.dumps({"
        "'host': [evbench.__version__, evbench.__file__], "
        "'agent': [evbench_agent.__version__, evbench_agent.__file__]}))"
    )
    done = run([current.bin("python"), "-c", probe], timeout=60, cwd=current.env)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    for part in ("host", "agent"):
        version, path = found[part]
        assert version == current.version
        assert Path(path).is_relative_to(current.env / "lib"), (part, path)
    editable = run([current.bin("python"), "-m", "pip", "list", "--editable"], timeout=60)
    assert editable.returncode == 0 and editable.stdout.strip() == "", editable.stdout
    assert (current_run / results.COMPLETE).is_file()
    manifest = json.loads((current_run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["platform"]["agent"] == current.version
    assert (current_run / "report.md").is_file()


def test_pip_refuses_this_host_with_the_previous_releases_agent(made):
    """The rule in one Python environment: the host takes its own MAJOR.MINOR only."""
    current, previous = made["current"].result(), made["previous"].result()
    assert previous.version.split(".")[:2] != current.version.split(".")[:2]
    pip = [current.bin("python"), "-m", "pip", "install", "--dry-run", "--no-index"]
    mixed = run([*pip, current.wheels["evbench"], previous.wheels["evbench-agent"]], timeout=300)
    assert mixed.returncode != 0
    assert "ResolutionImpossible" in mixed.stderr, mixed.stderr
    assert f"evbench-agent {previous.version}" in mixed.stderr, mixed.stderr
    # With the release's own agent it resolves: the agent's version alone made the refusal.
    matched = run([*pip, current.wheels["evbench"], current.wheels["evbench-agent"]], timeout=300)
    assert matched.returncode == 0, matched.stderr


def test_each_release_reads_the_other_releases_run(made, tmp_path):
    """Results travel across releases while the format's major is the same."""
    current, previous = made["current"].result(), made["previous"].result()
    current_run = made["current_run"].result()
    old_run = tmp_path / "previous-run"
    argv = [previous.bin("evbench-agent"), "run", *SHORT_RUN, "--processes", "1", "--out", old_run]
    made = run(argv, timeout=RUN_TIMEOUT, cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-4000:]
    assert (old_run / results.COMPLETE).is_file()
    old_manifest = json.loads((old_run / "manifest.json").read_text())
    assert old_manifest["platform"]["agent"] == previous.version
    new_manifest = json.loads((current_run / "manifest.json").read_text())
    # The rule's premise: both releases write a format of one major.
    old_format = results.parse_version(old_manifest["version"])
    new_format = results.parse_version(new_manifest["version"])
    assert old_format and new_format and old_format[0] == new_format[0], (old_format, new_format)
    for reader, written in ((current, old_run), (previous, current_run)):
        copy = tmp_path / f"read-by-{reader.version}"
        shutil.copytree(written, copy)
        for name in ("report.md", "report.html"):
            (copy / name).unlink(missing_ok=True)
        shown = run([reader.bin("evbench"), "report", "--terminal", copy], RUN_TIMEOUT, tmp_path)
        assert shown.returncode == 0, (reader.version, shown.stderr[-4000:])
        assert "Protobuf" in shown.stdout and "JSON" in shown.stdout, shown.stdout[-2000:]
        rendered = run([reader.bin("evbench"), "report", copy], RUN_TIMEOUT, tmp_path)
        assert rendered.returncode == 0, (reader.version, rendered.stderr[-4000:])
        assert "Protobuf" in (copy / "report.md").read_text()


@pytest.mark.parametrize("host_is", ["current", "previous"])
def test_each_releases_host_refuses_the_others_agent_in_an_image_then_deploys_its_own(
    host_is, made, sshd, ssh_home, tmp_path
):
    require(os.access(BOARD_PYTHON, os.X_OK), f"the board's interpreter {BOARD_PYTHON}")
    other = "previous" if host_is == "current" else "current"
    host, agent = made[host_is].result(), made[other].result()
    image_agent = sshd.image_bin / "evbench-agent"  # on the board's PATH: the other's agent
    image_agent.write_text(f'#!/bin/sh\nexec {agent.bin("evbench-agent")} "$@"\n')
    image_agent.chmod(0o755)
    work = tmp_path / "board"
    url = f"ssh://{sshd.address}?dir={work}&python={BOARD_PYTHON}"
    try:
        refused = run([host.bin("evbench"), "deploy", "--board", url], 300, tmp_path)
        assert refused.returncode == 2, refused.stderr
        said = " ".join(refused.stderr.split())
        assert f"image is {agent.version}" in said and f"needs {host.version}" in said, said
        assert "--force" in said, said
        assert not (work / "agent").exists()
        forced = run([host.bin("evbench"), "deploy", "--board", url, "--force"], 300, tmp_path)
        assert forced.returncode == 0, forced.stderr
        zipapp = work / "agent" / "evbench-agent.pyz"
        assert zipapp.is_file()
        info = run([BOARD_PYTHON, zipapp, "info", "--json"], 120, tmp_path)
        assert info.returncode == 0, info.stderr
        assert json.loads(info.stdout)["agent"] == host.version
    finally:
        image_agent.unlink()
