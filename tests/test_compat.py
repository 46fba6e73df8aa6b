"""The agent under the protobuf runtimes it must support, and its minimum Python.

- protobuf 4.25.8 (Yocto scarthgap) in .venv-pb425;
- the newest protobuf, in the main test environment;
- Debian 12's python3 with its own python3-protobuf (4.21.12, cpp backend).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import AGENT_SRC, ROOT, require

pytestmark = pytest.mark.compat

DEBIAN_PYTHON = "/usr/bin/python3"


def _interpreters() -> dict[str, str]:
    return {
        "protobuf-4.25": str(ROOT / ".venv-pb425" / "bin" / "python"),
        "newest": sys.executable,
        "debian": DEBIAN_PYTHON,
    }


def _agent(python: str, *argv: str) -> subprocess.CompletedProcess:
    # Only agent/src on the path: the agent must stand alone, without the host tools.
    env = dict(os.environ, PYTHONPATH=str(AGENT_SRC), PYTHONNOUSERSITE="1")
    return subprocess.run(
        [python, "-m", "evbench_agent", *argv], capture_output=True, text=True, env=env, timeout=600
    )


RUN = ["run", "--quick", "--profile", "seed,ev-full,string-map",
       "--codecs", "json,protobuf,protobuf-json"]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple]:
    """Each runtime's `info --json`, and its quick run where that works, the runtimes at
    once: (info, run or None, the run's folder); no entry for a missing interpreter."""
    top = tmp_path_factory.mktemp("runs")
    found = [name for name, python in _interpreters().items() if os.access(python, os.X_OK)]

    def info_and_run(name: str) -> tuple:
        python, out = _interpreters()[name], top / name
        info = _agent(python, "info", "--json")
        run = _agent(python, *RUN, "--out", str(out)) if info.returncode == 0 else None
        return info, run, out

    with ThreadPoolExecutor(max(len(found), 1)) as pool:
        return dict(zip(found, pool.map(info_and_run, found), strict=True))


@pytest.mark.parametrize("runtime", list(_interpreters()))
def test_agent_runs_a_quick_suite_on_each_runtime(runtime, runs):
    python = _interpreters()[runtime]
    require(runtime in runs, f"the interpreter for {runtime} ({python})")
    probe, done, out = runs[runtime]
    require(probe.returncode == 0 or "google" not in probe.stderr, f"protobuf for {runtime}")
    assert probe.returncode == 0, probe.stderr
    info = json.loads(probe.stdout)
    if runtime == "debian":
        assert info["protobuf"] == "4.21.12" and info["protobuf_backend"] == "cpp"
    elif runtime == "protobuf-4.25":
        assert info["protobuf"] == "4.25.8"
    else:
        assert int(info["protobuf"].split(".")[0]) >= 5
    assert done.returncode == 0, done.stderr
    assert (out / "complete").exists()
    summary = json.loads((out / "summary.json").read_text())
    codec_records = [r for r in summary["records"] if r["suite"] == "codec"]
    # The machine's state around each worker (contention_* records) belongs to no codec.
    measured = {r["codec"] for r in codec_records if not r["metric"].startswith("contention_")}
    assert measured == {"json", "protobuf", "protobuf-json"}
    assert all(r["codec"] is None for r in codec_records if r["metric"].startswith("contention_"))


def test_agent_source_needs_no_python_newer_than_3_10():
    vermin = shutil.which("vermin", path=str(Path(sys.executable).parent))
    require(vermin is not None, "vermin (requirements-dev.txt)")
    argv = [vermin, "--target=3.10-", "--violations", "--no-tips", "--eval-annotations",
            "--backport", "enum", "--backport", "typing",
            str(AGENT_SRC / "evbench_agent")]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
