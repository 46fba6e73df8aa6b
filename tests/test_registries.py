"""Every registry entry (codecs, native runtimes, profiles, suites) has its row in docs/running.md's
and docs/native-codecs.md's tables, and every row is an entry; the agent's pyproject installs each
codec's distribution; a module added is collected without a list."""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from conftest import ROOT

from evbench_agent import codecs, payloads, registry
from evbench_agent.native import codec as native_codec
from evbench_agent.native import runtimes
from evbench_core.analysis import metrics

RUNNING = ROOT / "docs" / "running.md"
NATIVE = ROOT / "docs" / "native-codecs.md"
AGENT = ROOT / "agent" / "src" / "evbench_agent"
PROJECT = tomllib.loads((ROOT / "agent" / "pyproject.toml").read_text())["project"]
#: A table row's first cell: the `names` it documents.
NAME = re.compile(r"`([^`]+)`")
#: Profile rows that are no registry entry: a team's own message (docs/own-messages.md).
NOT_REGISTERED = {"schema:FULL.NAME"}


def table_names(doc: Path, heading: str) -> list[str]:
    """The backticked names in the first column of the first table under `heading`."""
    lines = doc.read_text().splitlines()
    start = lines.index(heading)
    names: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|") and not set(line) <= set("|- "):
            names += NAME.findall(line.split("|")[1])
        elif names and not line.startswith("|"):
            break
    return names


def differences(documented: list[str], declared: list[str]) -> list[str]:
    """One line per entry the table lacks, or per row no entry declares."""
    return [f"no row for {name}" for name in declared if name not in documented] + [
        f"a row for {name}, which is not declared" for name in documented if name not in declared
    ]


def test_the_table_reader_finds_the_rows_worked_out_by_hand_and_names_a_missing_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Doc\n\n## Codecs\n\nText before the table.\n\n"
        "| codec | what |\n| --- | --- |\n| `a` | one |\n| `b`, `c` | two `d` |\n\n"
        "After the table.\n\n| `e` | a second table |\n\n## Next\n\n| `f` | |\n"
    )
    assert table_names(doc, "## Codecs") == ["a", "b", "c"]
    assert table_names(doc, "## Next") == ["f"]
    # a codec declared without a row is named
    added = codecs.Codec("scratch", "evbench_scratch", None, codecs.PLAIN, "", None, yocto=None)
    monkeypatch.setitem(codecs.CODECS, "scratch", added)
    assert differences(table_names(RUNNING, "## Codecs"), list(codecs.CODECS)) == [
        "no row for scratch"
    ]


@pytest.mark.parametrize(
    ("doc", "heading", "declared"),
    [
        (RUNNING, "## Suites", list(registry.REGISTRY)),
        (RUNNING, "## Payload profiles", list(payloads.PROFILES)),
        (RUNNING, "## Codecs", list(codecs.CODECS)),
        (NATIVE, "# Native codecs: C and C++ runtimes", list(runtimes.RUNTIMES)),
    ],
    ids=["suites", "profiles", "codecs", "native-codecs"],
)
def test_every_entry_has_its_row_and_every_row_is_an_entry(doc, heading, declared) -> None:
    documented = [name for name in table_names(doc, heading) if name not in NOT_REGISTERED]
    assert differences(documented, declared) == []


def _distributions(requirements: list[str]) -> set[str]:
    """The distribution each requirement names, lower-cased."""
    return {re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower() for line in requirements}


def test_the_agent_installs_every_codecs_distribution_or_it_is_the_standard_librarys() -> None:
    required = _distributions(PROJECT["dependencies"])
    used = {c.distribution for c in codecs.CODECS.values() if c.distribution is not None}
    assert "protobuf" in codecs.AGENT_DEPENDENCIES == used & required
    always = {c.name for c in codecs.CODECS.values() if not c.optional}
    assert {"protobuf", "json", "protobuf-json"} <= always  # as worked out by hand
    # the registry takes these three first (a run's answer is json against protobuf)
    assert list(codecs.CODECS)[:3] == ["protobuf", "json", "protobuf-json"]
    extras = PROJECT["optional-dependencies"].values()
    distributions = required | _distributions([r for e in extras for r in e])
    assert {"protobuf", "orjson", "cantools"} <= distributions  # read as worked out by hand
    missing = [
        f"{c.name}: {c.distribution}"
        for c in codecs.CODECS.values()
        if c.distribution is not None and c.distribution.lower() not in distributions
    ]
    assert missing == [], "add these to an extra of agent/pyproject.toml"
    # A codec without a distribution is the standard library's: Python's own list of its
    # standard library, not the registry's word.
    for codec in (c for c in codecs.CODECS.values() if c.distribution is None):
        assert codec.module.partition(".")[0] in sys.stdlib_module_names, codec.name


def test_the_native_runtime_tests_expect_every_runtime_and_harnesses_carry_one_proto_list() -> None:
    # tests/test_native_runtimes.py states each runtime's format and Debian package by
    # hand (its expectations); a runtime added without them would go untested.
    import test_native_runtimes as native_tests

    expected = [*native_tests.PROTOBUF_RUNTIMES, *native_tests.JSON_RUNTIMES]
    assert sorted(expected) == sorted(runtimes.RUNTIMES)
    assert sorted(native_tests.PACKAGES) == sorted(runtimes.RUNTIMES)
    # Three readers of one fact: the agent (which profiles a native codec carries), the
    # harnesses' type table (protos/native_types.py) and native/CMakeLists.txt.
    sys.path.insert(0, str(ROOT / "protos"))
    try:
        import native_types  # protos/ is no package
    finally:
        sys.path.remove(str(ROOT / "protos"))
    cmake = (ROOT / "native" / "CMakeLists.txt").read_text()
    found = re.search(r"^set\(EVBENCH_PROTO_FILES ([^)]*)\)", cmake, re.M)
    assert found is not None
    listed = found.group(1).split()
    assert listed == ["ev_data.proto", "ev_frame.proto", "shapes.proto", "link.proto"]
    assert list(native_codec.NATIVE_FILES) == listed
    assert list(native_types.NATIVE_PROTOS) == listed


#: What a copy of the agent prints: its profiles, codecs and suites, a line each.
_LISTS = (
    "from evbench_agent import codecs, payloads, registry\n"
    "for names in (payloads.PROFILES, codecs.CODECS, registry.REGISTRY):\n"
    "    print(' '.join(names))\n"
)


def _run_copy(tmp_path: Path, code: str, added: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`code` run against a copy of the agent with `added` (path -> text) written into it."""
    copy = tmp_path / "evbench_agent"
    shutil.copytree(AGENT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for path, text in added.items():
        (copy / path).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    argv = [sys.executable, "-c", code]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


#: A codec as docs/contributing.md says to write one: the standard library's marshal.
_MARSHAL_CODEC = """
from types import ModuleType

from evbench_agent.codecs.registry import PLAIN, Pair, codec
from evbench_agent.payloads import Profile


@codec("added-by-test", module="marshal", distribution=None, yocto="python3-core",
       carries=PLAIN, description="a throwaway")
def bind(module: ModuleType, _profile: Profile) -> Pair:
    return module.dumps, module.loads
"""
_PROFILE = (
    "from evbench_agent.payloads.profile import Profile\n"
    "from evbench_agent.schema import shapes_pb2\n"
    "PROFILE = Profile('added-by-test', 'a throwaway', shapes_pb2.OneInt, "
    "lambda rng, _: {'value': rng.randrange(9)})\n"
)


def test_profile_codec_suite_modules_are_collected_without_a_list_or_refused_if_wrong(tmp_path):
    # A helper module (its name starts with `_`) beside the codec is not a codec.
    round_trip = (
        "item = payloads.get('seed').payloads(1)[0]\n"
        "bound = codecs.get('added-by-test').bind(payloads.get('seed'))\n"
        "assert bound.decode(bound.encode(item.plain)) == item.plain\n"
    )
    added = {
        "payloads/profiles/added_by_test.py": _PROFILE,
        "codecs/added_by_test.py": _MARSHAL_CODEC,
        "codecs/_helper.py": "HELPER = 1\n",
        "suites/added_by_test.py": 'SUITE = "added-by-test"\n',
    }
    done = _run_copy(tmp_path, _LISTS + round_trip, added)
    assert done.returncode == 0, done.stderr
    profiles, listed_codecs, suites = (line.split() for line in done.stdout.splitlines())
    assert profiles[:2] == ["seed", "ev-full"] and "skip-nested" in profiles
    assert sorted(profiles) == sorted([*payloads.PROFILES, "added-by-test"])
    assert listed_codecs[:3] == ["protobuf", "json", "protobuf-json"]
    assert sorted(listed_codecs) == sorted([*codecs.CODECS, "added-by-test"])
    assert sorted(suites) == sorted([*registry.REGISTRY, "added-by-test"])
    # a module declaring nothing, or a name already taken, is refused
    for path, text, refusal in [
        ("payloads/profiles/added_by_test.py", "HELPER = 1\n",
         "payloads.profiles.added_by_test declares no PROFILE or PROFILES"),
        ("codecs/added_by_test.py", "HELPER = 1\n", "codecs.added_by_test declares no codec"),
        ("suites/added_by_test.py", 'SUITE = "codec"\n',
         "suite 'codec' is declared by evbench_agent.suites.added_by_test and"),
    ]:  # fmt: skip
        done = _run_copy(tmp_path / path.partition("/")[0], _LISTS, {path: text})
        assert done.returncode == 1 and refusal in done.stderr, path


def test_every_suite_module_is_registered_by_its_name_and_records_name_those_real_runs_do() -> None:
    # A module of suites/ (or a suite's package) declaring SUITE is a suite the registry
    # must find, read with ast (not its line pattern) so a declaration it misses fails.
    declared = {}
    for path in sorted((AGENT / "suites").rglob("*.py")):
        top = path.relative_to(AGENT / "suites").parts[0].removesuffix(".py")
        for node in ast.parse(path.read_text()).body:
            if (
                isinstance(node, ast.Assign)
                and [getattr(t, "id", None) for t in node.targets] == ["SUITE"]
                and isinstance(node.value, ast.Constant)
            ):
                declared[node.value.value] = f"evbench_agent.suites.{top}"
    assert declared["codec"] == "evbench_agent.suites.codec"  # the scan finds the known ones
    assert declared["link"] == "evbench_agent.suites.link"
    assert declared == registry.REGISTRY
    # and each, loaded, calls itself by its registry name
    assert {name: registry.load(name).SUITE for name in declared} == {n: n for n in declared}
    # A stored codec and link run with telemetry has records of every kind: the LAVA
    # importer and the report's order take this tuple.
    summary = ROOT / "tests" / "data" / "runs" / "codec-link-v1" / "summary.json"
    named = {record["suite"] for record in json.loads(summary.read_text())["records"]}
    assert named == {"codec", "link", "telemetry"}
    assert set(registry.RECORD_SUITES) == named
    # The codec suite times encode, decode, decode_access and measures the size plain and
    # deflated (docs/method.md); a stored run's codec records say the same.
    summary = ROOT / "tests" / "data" / "runs" / "core-v1" / "summary.json"
    records = json.loads(summary.read_text())["records"]
    recorded = {record["metric"] for record in records if record["suite"] == "codec"}
    assert recorded == {"encode", "decode", "decode_access", "size", "size_deflate"}
    assert set(metrics.CODEC_TIMED) | set(metrics.CODEC_SIZES) == recorded
    assert all(metrics.METRICS[name].unit == "s" for name in metrics.CODEC_TIMED)
    assert all(metrics.METRICS[name].unit == "bytes" for name in metrics.CODEC_SIZES)
