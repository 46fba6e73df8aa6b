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


@pytest.mark.parametrize("runtime", list(_interpreters()))
def test_agent_runs_a_quick_suite_on_each_runtime(runtime, tmp_path):
    python = _interpreters()[runtime]
    require(os.access(python, os.X_OK), f"the interpreter for {runtime} ({python})")
    probe = _agent(python, "info", "--json")
    require(probe.returncode == 0 or "google" not in probe.stderr, f"protobuf for {runtime}")
    assert probe.returncode == 0, probe.stderr
    info = json.loads(probe.stdout)
    if runtime == "debian":
        assert info["protobuf"] == "4.21.12" and info["protobuf_backend"] == "cpp"
    elif runtime == "protobuf-4.25":
        assert info["protobuf"] == "4.25.8"
    else:
        assert int(info["protobuf"].split(".")[0]) >= 5
    out = tmp_path / "run"
    done = _agent(python, "run", "--quick", "--profile", "seed,ev-full,string-map",
                  "--codecs", "json,protobuf,protobuf-json", "--out", str(out))  # fmt: skip
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
