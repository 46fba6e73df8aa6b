"""The report names a native codec's runtime: one answer per (JSON, protobuf) pair of a
language, and its version as its harness reported it (issue 44, item 4, the report's part:
the context and environment boxes read only `platform.codecs`, the Python codecs' versions,
so every C and C++ runtime showed `?`).

Real parts for the boxes: the host's documented build of the nlohmann::json harness
(native_cross), a quick codec run of the agent with it, and the report's boxes read from
that run. The expected version is Debian's package's (dpkg-query), not what the harness said.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_command
from native_cross import CODEC, build_host_harness

from evbench.report import context, runtimes, table

#: The Debian package whose headers the harness is built from (tests/system-packages.txt).
PACKAGE = "nlohmann-json3-dev"
NATIVE = {"c:protobuf-c": {"library": "protobuf-c", "version": "1.4.1"},
          "c:cjson": {"library": "cJSON", "version": "1.7.15"}}  # fmt: skip
MANIFEST = {"platform": {"native_codecs": NATIVE}}


def test_each_language_pairs_its_json_runtimes_with_its_protobuf_runtimes():
    names = ["json", "protobuf", "c:protobuf-c", "c:cjson", "c:nanopb", "cpp:protobuf",
             "cpp:nlohmann"]  # fmt: skip
    found = [(p.baseline, p.candidate, p.language) for p in runtimes.pairs(names)]
    # C: one JSON runtime x two protobuf runtimes; C++: one x one; Python is the main answer.
    assert found == [
        ("c:cjson", "c:protobuf-c", "C"),
        ("c:cjson", "c:nanopb", "C"),
        ("cpp:nlohmann", "cpp:protobuf", "C++"),
    ]
    # no pair across languages or without both sides
    assert runtimes.pairs(["json", "c:protobuf-c", "cpp:nlohmann"]) == []
    assert runtimes.pairs(["json", "protobuf"]) == []


def test_titles_and_tables_name_library_version_and_language():
    pair = runtimes.pairs(["c:protobuf-c", "c:cjson"])[0]
    title = "Protobuf (protobuf-c 1.4.1) against JSON (cJSON 1.7.15) in C"
    assert runtimes.title(pair, MANIFEST) == title
    # A manifest without the harness's word (an older run): the library, no version.
    assert runtimes.label("c:nanopb", {}) == "Protobuf (nanopb)"
    assert table.display_name("cpp:nlohmann") == "JSON (nlohmann::json)"
    assert table.display_name("protobuf") == "Protobuf"
    assert table.display_name("orjson") == "orjson"


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


@pytest.mark.integration
def test_the_context_and_environment_boxes_name_the_native_codecs_version(run_dir):
    loaded = context.load_context(run_dir)
    named_as = f"{CODEC} nlohmann::json {_upstream_version()}"
    rows = dict(context.context_rows(loaded))
    named = rows["Codecs"].split(", ")
    assert named_as in named, rows["Codecs"]
    assert f"json Python {sys.version.split()[0]} standard library" in named, rows["Codecs"]
    rows = dict(context.environment_rows(loaded))
    named = rows["Codecs"].split("; ")
    assert named_as in named, rows["Codecs"]
    assert not [n for n in named if n.endswith(" ?")], rows["Codecs"]
