"""report.md names a native codec's version as its harness reported it (issue 44, item 4,
the report's part): the context and environment boxes read only `platform.codecs`, the
Python codecs' versions, so every C and C++ runtime showed `?`.

Real parts: the host's documented build of the nlohmann::json harness (native_cross), a
quick codec run of the agent with it, and the report's boxes read from that run. The
expected version is Debian's package's (dpkg-query), not what the harness said.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_command
from native_cross import CODEC, build_host_harness

from evbench.report import context

pytestmark = pytest.mark.integration

#: The Debian package whose headers the harness is built from (tests/system-packages.txt).
PACKAGE = "nlohmann-json3-dev"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    harnesses = build_host_harness(tmp_path_factory)
    out = tmp_path_factory.mktemp("native-run") / "run"
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent", "run", "--suite", "codec", "--quick",
         "--profile", "seed", "--codecs", f"json,{CODEC}", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
        env=dict(os.environ, EVBENCH_NATIVE_DIR=str(harnesses)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def _upstream_version() -> str:
    dpkg_query = require_command("dpkg-query")
    argv = [dpkg_query, "-W", "-f", "${Version}", PACKAGE]
    version = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout  # 3.11.2-2
    upstream = version.split(":")[-1].split("-")[0].split("+")[0]
    assert upstream.count(".") == 2, version
    return upstream


def test_the_context_box_names_the_native_codecs_version(run_dir):
    rows = dict(context.context_rows(context.load_context(run_dir)))
    named = rows["Codecs"].split(", ")
    assert f"{CODEC} nlohmann::json {_upstream_version()}" in named, rows["Codecs"]
    assert f"json Python {sys.version.split()[0]} standard library" in named, rows["Codecs"]


def test_the_environment_box_names_the_native_codecs_version(run_dir):
    rows = dict(context.environment_rows(context.load_context(run_dir)))
    named = rows["Codecs"].split("; ")
    assert f"{CODEC} nlohmann::json {_upstream_version()}" in named, rows["Codecs"]
    assert not [n for n in named if n.endswith(" ?")], rows["Codecs"]
