"""The docs a newcomer reads hold (issue 14): every ```sh block of README.md, docs/*.md and the
packages' READMEs runs, in order, one bash per document, from the repository root with
.venv/bin first on PATH, and a comparison table shown as output has the columns and metrics
printed. A block needing what this machine cannot have (a board, a network) is followed by
`*Not run by the tests: needs a board (...).*`, listed by test_skipped_blocks_are_listed."""

import contextlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT
from native_cross import documented_builds_locked

from evbench.report.table import BUSY_MARK

DOCS = ROOT / "docs"
README = ROOT / "README.md"
PACKAGES = ("agent", "host_tools", "meta-evbench", "tests", "benchmarks")
PACKAGE_READMES = [ROOT / package / "README.md" for package in PACKAGES]
FENCE = re.compile(r"^```(\S*)\s*$")
SKIP = re.compile(r"^\*Not run by the tests: (?P<reason>.+?)\.?\*$")
#: Why a block may be left out: what this machine (and CI) cannot have.
ALLOWED_REASONS = ("needs a board", "needs a network", "needs a build farm", "is the test suite")
#: The longest a document's commands may take here (make run's full plan is ~3 minutes).
DOC_TIMEOUT_S = 900
#: The header of a comparison table a document shows as a command's output.
TABLE_HEADER = re.compile(r"^Profile\s*\|")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    text: str
    skip_reason: str | None


def documents() -> list[Path]:
    found = [README, *sorted(DOCS.glob("*.md")), *PACKAGE_READMES]
    return [path for path in found if path.exists()]


def blocks(path: Path) -> list[Block]:
    """The ```sh blocks of a Markdown file, each with the reason it is skipped, if any."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening or not opening.group(1):
            index += 1
            continue
        language, start = opening.group(1), index + 1
        end = start
        while end < len(lines) and not FENCE.match(lines[end]):
            end += 1
        after = end + 1
        while after < len(lines) and not lines[after].strip():
            after += 1
        skip = SKIP.match(lines[after]) if after < len(lines) else None
        if language in ("sh", "bash", "console"):
            text = "\n".join(lines[start:end])
            found.append(Block(path, start, text, skip.group("reason") if skip else None))
        index = end + 1
    return found


@dataclass
class ShownTable:  # its metrics are added as its rows are read
    line: int
    columns: list[str]
    metrics: list[str]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("|")]


def shown_tables(path: Path) -> list[ShownTable]:
    """The comparison tables a Markdown file shows as output, in ``` or ```text blocks:
    a `Profile | ...` header and the lines with a `|` right under it. "..." stands for
    columns left out."""
    found: list[ShownTable] = []
    language, table = None, None  # the open block's language; the table being read
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            language, table = (fence.group(1) if language is None else None), None
        elif language in ("", "text") and TABLE_HEADER.match(line):
            table = ShownTable(number, [cell for cell in _cells(line) if cell != "..."], [])
            found.append(table)
        elif table is not None and line and set(line) <= set("-+| "):
            continue  # the rule under the header
        elif table is not None and "|" in line:
            table.metrics.append(_cells(line)[1].removesuffix(BUSY_MARK))
        else:
            table = None
    return found


def not_printed(table: ShownTable, output: str) -> list[str]:
    """The columns and metrics `table` shows that no table in `output` has."""
    printed = [_cells(line) for line in output.splitlines() if "|" in line]
    headers = {cell for cells in printed if cells[0] == "Profile" for cell in cells}
    metrics = {cells[1].removesuffix(BUSY_MARK) for cells in printed if len(cells) > 1}
    return [f"column {name!r}" for name in table.columns if name not in headers] + [
        f"metric {name!r}" for name in table.metrics if name not in metrics
    ]


def test_blocks_and_shown_tables_are_found_and_what_the_output_lacks_is_named(tmp_path: Path):
    sample = tmp_path / "sample.md"
    sample.write_text(
        "```sh\nevbench run\n```\n\n```text\nseed: Protobuf - 3.6x smaller\n\n"
        "Profile | Metric    | JSON   | % Diff (est.) | ...\n"
        "--------+-----------+--------+---------------\n"
        "seed    | Size *    | 995 B  | -72%\n"
        "seed    | Encode    | 16 µs  | -97%\n\nProfile is not a table here\n```\n"
        "```sh\nProfile | Metric  # a command, not output\n```\n"
    )
    (table,) = shown_tables(sample)
    assert (table.line, table.columns) == (8, ["Profile", "Metric", "JSON", "% Diff (est.)"])
    assert table.metrics == ["Size", "Encode"]
    printed = (
        "The answer: ...\n"
        "Profile | Metric            | JSON  | Change (est.)\n"
        "seed    | Size *            | 990 B | 3.6x smaller\n"
        "seed    | Serialization     | 16 µs | 45x faster\n"
    )
    assert not_printed(table, printed) == ["column '% Diff (est.)'", "metric 'Encode'"]
    # a skip needs its marker
    sample.write_text(
        "text\n\n```sh\necho one\n```\n\n```sh\necho two\n```\n"
        "*Not run by the tests: needs a board (ssh://root@192.0.2.7).*\n\n"
        "```json\n{}\n```\n\n```\nplain\n```\n"
    )
    found = blocks(sample)
    assert [(b.text, b.skip_reason) for b in found] == [
        ("echo one", None),
        ("echo two", "needs a board (ssh://root@192.0.2.7)"),
    ]


def _label(path: Path) -> str:
    return str(path.relative_to(ROOT))


#: A file of the repository a document names in backticks, e.g. `tests/test_docs.py`.
FOLDERS = "|".join((*PACKAGES, "docs", "native", "protos"))
NAMED_PATH = re.compile(rf"`((?:{FOLDERS})/[\w./-]+)`")
#: Names that stand for a file the reader makes: NAME, X.Y.Z.
PLACEHOLDER = re.compile(r"NAME|X\.Y\.Z")


def _exists(name: str, beside: Path) -> bool:
    """From the root, or (a package's README) from its folder or its sources."""
    return any((base / name).exists() for base in (ROOT, beside, *beside.glob("src/*")))


def test_every_file_a_document_names_exists_and_the_readme_links_every_doc() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 220  # a newcomer's page
    assert [p.name for p in DOCS.glob("*.md") if f"docs/{p.name}" not in text] == []
    named = {
        (path, match.group(1).rstrip("."))
        for path in documents()
        for match in NAMED_PATH.finditer(path.read_text(encoding="utf-8"))
    }
    assert len(named) > 100  # the pattern still finds what the documents name
    gone = [
        f"{_label(path)}: {name}"
        for path, name in sorted(named)
        if not PLACEHOLDER.search(name) and not _exists(name, path.parent)
    ]
    assert gone == []


def test_skipped_blocks_are_listed() -> None:
    skipped = [b for doc in documents() for b in blocks(doc) if b.skip_reason]
    for block in skipped:
        print(f"skipped: {_label(block.path)}:{block.line}: {block.skip_reason}")
    bad = [b for b in skipped if not b.skip_reason.startswith(ALLOWED_REASONS)]
    assert [f"{_label(b.path)}:{b.line}: {b.skip_reason}" for b in bad] == []


def _scratch_environment(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["EVBENCH_HISTORY"] = str(tmp_path / "history.sqlite")
    env.pop("EVBENCH_PASSWORD", None)
    return env


def _with_commands() -> list[Path]:
    return [doc for doc in documents() if any(b.skip_reason is None for b in blocks(doc))]


@pytest.mark.slow
# One at a time (tests/run-tiers.sh runs a file's tests on one pytest-xdist worker): each
# removes what appeared in results/ while it ran, so two at once would remove each other's.
@pytest.mark.parametrize("document", _with_commands(), ids=_label)
def test_every_command_a_document_shows_runs(
    document: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    runnable = [b for b in blocks(document) if b.skip_reason is None]
    results = ROOT / "results"
    before = set(results.iterdir()) if results.exists() else set()
    script = "set -euo pipefail\n" + "\n".join(
        f"# {_label(b.path)}:{b.line}\n{b.text}" for b in runnable
    )
    # A document that builds native/ does it where the native tests build (native_cross),
    # under their locks: one build for both, never two builds in one directory at once.
    native = "native/build" in script
    try:
        with documented_builds_locked(tmp_path_factory) if native else contextlib.nullcontext():
            finished = subprocess.run(
                ["bash", "-c", script], cwd=ROOT, env=_scratch_environment(tmp_path),
                capture_output=True, text=True, timeout=DOC_TIMEOUT_S, stdin=subprocess.DEVNULL,
            )  # fmt: skip
    finally:
        # The docs write into results/ (ignored by git) as a user would; leave it as found.
        for made in (set(results.iterdir()) if results.exists() else set()) - before:
            shutil.rmtree(made) if made.is_dir() else made.unlink()
    assert finished.returncode == 0, (
        f"{_label(document)}: exit {finished.returncode}\n"
        f"--- stdout (end)\n{finished.stdout[-3000:]}\n--- stderr (end)\n{finished.stderr[-3000:]}"
    )
    stale = {t.line: not_printed(t, finished.stdout) for t in shown_tables(document)}
    assert {line: lacks for line, lacks in stale.items() if lacks} == {}, (
        f"{_label(document)}: a table shown at these lines has what its commands do not print"
    )
