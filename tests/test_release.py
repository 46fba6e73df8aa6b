"""One release version (docs/releases.md): the agent's and host's `__version__`, the host's
requirement on the agent and CHANGELOG.md's newest release agree; the changelog keeps its shape.
"""

import datetime
import re
from pathlib import Path

from conftest import AGENT_SRC, ROOT
from packaging.requirements import Requirement
from packaging.version import Version

HOST_SRC = ROOT / "host_tools" / "src"
CHANGELOG = ROOT / "CHANGELOG.md"
SEMVER = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")
RELEASE = re.compile(r"^## \[(?P<version>[^\]]+)\] - (?P<date>\d{4}-\d{2}-\d{2})$")
SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def version_line(init: Path) -> str:
    found = re.findall(r'^__version__ = "([^"]*)"$', init.read_text(), re.M)
    assert len(found) == 1, f"{init}: one __version__ line, found {found}"
    return found[0]


def releases(text: str) -> list[tuple[str, datetime.date, str]]:
    """(version, date, body) of each `## [X.Y.Z] - DATE` section, in the file's order."""
    found = []
    for part in re.split(r"^(?=## )", text, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        if heading != "## [Unreleased]":
            match = RELEASE.match(heading)
            assert match, f"not a release heading: {heading!r}"
            found.append((match["version"], datetime.date.fromisoformat(match["date"]), body))
    return found


def test_the_agent_the_host_and_the_newest_release_have_one_semver_version():
    agent = version_line(AGENT_SRC / "evbench_agent" / "__init__.py")
    assert agent == version_line(HOST_SRC / "evbench" / "__init__.py")
    assert SEMVER.fullmatch(agent), agent
    assert releases(CHANGELOG.read_text(encoding="utf-8"))[0][0] == agent


def test_the_host_requires_the_agent_of_its_own_major_minor():
    """Any patch of the host's own MAJOR.MINOR, nothing of the minors beside it."""
    version = version_line(HOST_SRC / "evbench" / "__init__.py")
    major, minor, _ = (int(part) for part in version.split("."))
    # The one quoted dependency line naming the agent (pyproject.toml read as text: tomllib
    # is Python 3.11's, and 3.10 is supported).
    text = (ROOT / "host_tools" / "pyproject.toml").read_text()
    found = re.findall(r'^\s*"(evbench-agent\b[^"]*)",?\s*$', text, re.M)
    assert len(found) == 1, found
    accepted = Requirement(found[0]).specifier
    for patch in (0, 1, 17):
        assert accepted.contains(Version(f"{major}.{minor}.{patch}")), (accepted, patch)
    refused = [f"{major}.{minor + 1}.0", f"{major + 1}.0.0"]
    if minor > 0:
        refused += [f"{major}.{minor - 1}.0", f"{major}.{minor - 1}.99"]
    for version in refused:
        assert not accepted.contains(Version(version)), (accepted, version)


def test_the_changelog_keeps_its_shape():
    """Releases newest first, dated, with Keep a Changelog's sections only; each but the newest
    names the full commit it was cut from (test_release_wheels builds the previous one)."""
    text = CHANGELOG.read_text(encoding="utf-8")
    found = releases(text)
    assert len(found) >= 2, "the release and the one before it"
    versions = [Version(version) for version, _, _ in found]
    assert all(SEMVER.fullmatch(version) for version, _, _ in found)
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    dates = [date for _, date, _ in found]
    assert dates == sorted(dates, reverse=True)
    for version, _, body in found:
        sections = re.findall(r"^### (.+)$", body, re.M)
        assert sections, f"{version} has no section"
        assert set(sections) <= SECTIONS, (version, sections)
        assert len(sections) == len(set(sections)), (version, sections)
    for version, _, body in found[1:]:
        assert re.search(r"\bCommit [0-9a-f]{40}\b", body), f"{version} names no commit"


def previous_release() -> tuple[str, str]:
    version, _, body = releases(CHANGELOG.read_text(encoding="utf-8"))[1]
    commit = re.search(r"\bCommit ([0-9a-f]{40})\b", body)
    assert commit, f"{version} names no commit"
    return version, commit[1]
