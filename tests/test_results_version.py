"""The results format's MAJOR.MINOR version, and a manifest documented key by key."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evbench_core import results
from evbench_core.errors import FormatError

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "results-format.md"
GOLDEN = ROOT / "tests" / "data" / "runs"


def _write(run: Path, version: object) -> None:
    """A copy of a golden run (written by an evbench of format 1) with another version."""
    for name in ("manifest.json", "summary.json"):
        document = json.loads((GOLDEN / "core-v1" / name).read_text(encoding="utf-8"))
        document["version"] = version
        (run / name).write_text(json.dumps(document), encoding="utf-8")


MALFORMED = ["1", "1.", ".1", "1.1.1", "01.1", "1.01", "v1.1", " 1.1", 1.1, True, None, -1]
NEWER = "a newer evbench wrote this run (format {}): update evbench to read it"
OLDER = (
    "an older evbench wrote this run (format {}) and this one does not convert it: read it "
    "with the evbench that wrote it, or measure again"
)
DAMAGED = "the file is damaged or not written by evbench: measure again"


@pytest.mark.parametrize(
    ("version", "hint"),
    # every minor of a known major, and the integer runs written before minors still say;
    # what to do about another depends on its age
    [(v, None) for v in (1, "1.0", "1.1", "1.7", "1.123456")]
    + [(v, NEWER) for v in ("2.0", "2.3", 2, "10.1")]
    + [(v, OLDER) for v in (0, "0.9")]
    + [(v, DAMAGED) for v in MALFORMED],  # damage, not an age
)
def test_a_minor_reads_another_major_is_named_by_age_and_a_malformed_version_is_damage(
    tmp_path, version, hint
):
    _write(tmp_path, version)
    if hint is None:
        run = results.load_run(tmp_path)
        assert run.manifest["version"] == version and run.records
        return
    with pytest.raises(FormatError) as raised:
        results.load_run(tmp_path)
    assert raised.value.hint == hint.format(version)
    message = str(raised.value)
    assert f"results format version {version!r}" in message and "reads 1.x" in message
    assert "\n" not in message


# --- every manifest key documented -------------------------------------------------


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _tables(section: str) -> list[dict[str, str]]:
    """Each markdown table of `section` as {first-column name: the row's content}."""
    tables: list[dict[str, str]] = []
    rows: dict[str, str] | None = None
    for line in section.splitlines():
        if not line.startswith("|"):
            rows = None
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if rows is None:
            rows = {}
            tables.append(rows)  # the header row
            continue
        if set(cells[0]) <= {"-", " "}:
            continue
        for name in re.findall(r"`([a-z_]+)`", cells[0]):
            rows[name] = cells[1]
    return tables


def _documented() -> list[dict[str, str]]:
    """The manifest's top-level keys and its platform section's keys, as documented."""
    return _tables(_section("The manifest"))[:2]


@pytest.fixture(scope="module")
def real_manifest(tmp_path_factory) -> dict:
    """The manifest of a real, small A/A run of the agent (the A/A section and its result)."""
    out = tmp_path_factory.mktemp("manifest") / "run"
    argv = [sys.executable, "-m", "evbench_agent", "run", "--suite", "codec", "--profile"]
    argv += ["int", "--aa", "json", "--processes", "2", "--values", "1", "--payloads", "5"]
    argv += ["--min-time", "0.0001", "--out", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def test_a_real_run_writes_only_documented_keys(real_manifest):
    top, platform = _documented()
    assert set(real_manifest) <= set(top), sorted(set(real_manifest) - set(top))
    assert set(real_manifest["platform"]) <= set(platform)
    # the sections documented inline name each of their keys
    for section in ("board_identity", "memory", "aa"):
        for key in real_manifest[section]:
            assert re.search(rf"\b{key}\b", top[section]), (section, key)
    for key in real_manifest["aa"]["result"]:
        assert re.search(rf"\b{key}\b", top["aa"]), key
    for key in real_manifest["platform"]["clock"]:
        assert re.search(rf"\b{key}\b", platform["clock"]), key
    assert results.parse_version(real_manifest["version"]) >= (1, 1)


def test_the_writer_refuses_a_key_outside_its_list_and_the_list_is_the_documented_one(tmp_path):
    """Optional keys (arms, lab, notes, reason, source) appear in few runs: the writer
    refuses every key outside its list, and the list must be the document's."""
    top, _ = _documented()
    assert sorted(results.MANIFEST_KEYS) == sorted(top)
    writer = results.RunWriter(tmp_path / "run", "r1")
    writer.release_reserve()
    with pytest.raises(ValueError, match="'bogus'"):
        writer.write_manifest({"status": "running", "bogus": 1})
    assert not (tmp_path / "run" / "manifest.json").exists()


@pytest.mark.parametrize(
    ("results_format", "usable"),
    [(1, True), ("1.0", True), ("1.9", True), ("2.0", False), (2, False), ("x", False)],
)
def test_a_board_agent_is_usable_when_the_host_reads_its_format(results_format, usable):
    """An image's agent written before minors says 1; a newer minor is still read."""
    import evbench_agent
    from evbench import deploy

    info = {"agent": evbench_agent.__version__, "results_format": results_format}
    assert deploy.compatible(info) is usable
