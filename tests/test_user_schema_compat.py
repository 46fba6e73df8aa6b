"""The agent builds a user's message classes under every protobuf runtime it supports.

Debian 12's python3 (protobuf 4.21.12, cpp backend: no GetMessageClass), 4.25.8
(Yocto scarthgap) and the newest each run the rich test schema from a spec
holding only its descriptor set, and measure the same payload sizes.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import pytest
from conftest import AGENT_SRC, ROOT, require
from test_compat import _interpreters

pytestmark = pytest.mark.compat

DATA = ROOT / "tests" / "data" / "bms"


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("schema")
    target = out / "rich.binpb"
    done = subprocess.run(
        [
            sys.executable, "-m", "grpc_tools.protoc", f"-I{DATA}", "--include_imports",
            f"--descriptor_set_out={target}", str(DATA / "rich.proto"),
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    descriptor_set = base64.b64encode(target.read_bytes()).decode()
    spec = {
        "schema": {"descriptor_set": descriptor_set, "message": "evbench.test.Rich"},
        "suites": ["codec"], "codecs": ["json", "protobuf", "protobuf-json"], "quick": True,
        "payloads": 40,
    }  # fmt: skip
    path = out / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def _sizes(out) -> dict[str, list]:
    summary = json.loads((out / "summary.json").read_text())
    sizes = [r for r in summary["records"] if r["metric"] == "size"]
    return {r["codec"]: [r["min"], r["median"], r["max"], r["mean"]] for r in sizes}


def test_each_runtime_measures_the_same_user_message(spec_file, tmp_path):
    sizes = {}
    for runtime, python in _interpreters().items():
        require(os.access(python, os.X_OK), f"the interpreter for {runtime} ({python})")
        out = tmp_path / runtime
        env = dict(os.environ, PYTHONPATH=str(AGENT_SRC), PYTHONNOUSERSITE="1")
        done = subprocess.run(
            [python, "-m", "evbench_agent", "run", "--spec", str(spec_file), "--out", str(out)],
            capture_output=True, text=True, env=env, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, f"{runtime}: {done.stderr}"
        assert (out / "complete").exists()
        sizes[runtime] = _sizes(out)
        assert set(sizes[runtime]) == {"json", "protobuf", "protobuf-json"}
    first = next(iter(sizes.values()))
    assert all(value == first for value in sizes.values()), sizes
