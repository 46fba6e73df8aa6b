"""What the report tests share: evbench as a subprocess, a real local run, the checks of
a JUnit file (xmllint against Jenkins' schema, each case's numbers), and readers of the
tables evbench prints and writes."""

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import ROOT, require_command

QUICK_SEED = ("--quick", "--profile", "seed")
#: The JUnit schema of Jenkins' xUnit plugin, copied unchanged (its source is in its header).
JUNIT_XSD = ROOT / "tests" / "data" / "junit-10.xsd"


def evbench(*argv: str, env: dict | None = None, timeout: float = 300):
    """`evbench ARGV` in a fresh process, as a user runs it (CompletedProcess, never raised)."""
    command = [sys.executable, "-m", "evbench", *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def local_run(out: Path, *extra: str, codecs: str = "json,protobuf", env: dict | None = None):
    """A quick seed run on the local board into `out`; it must succeed."""
    done = evbench("run", "--board", "local", *QUICK_SEED, "--codecs", codecs, "--out", str(out),
                   *extra, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def slow_json_env(folder: Path, loops: int) -> dict:
    """os.environ with a sitecustomize on PYTHONPATH (in `folder`) that makes json.loads do its
    work `loops` times: json really slower in the agent's processes, which run unchanged."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import json\n_loads = json.loads\ndef _slow_loads(text, *args, **kwargs):\n"
        f"    for _ in range({loops - 1}):\n        _loads(text, *args, **kwargs)\n"
        "    return _loads(text, *args, **kwargs)\njson.loads = _slow_loads\n"
    )
    return dict(os.environ, PYTHONPATH=str(folder))


def xmllint_schema(path: Path) -> subprocess.CompletedProcess:
    """`xmllint --noout --schema JUNIT_XSD PATH`: returncode 0 when the file validates."""
    xmllint = require_command("xmllint")
    return subprocess.run(
        [xmllint, "--noout", "--schema", str(JUNIT_XSD), str(path)], capture_output=True, text=True
    )


def junit_numbers(path: Path) -> dict[tuple[str, str], dict[str, dict[str, str]]]:
    """Each test case's fields, read from both places the file carries them: the
    suite's properties `<classname>.<name>.<field>` and the case's `field=value` lines
    in <system-out>. {(classname, name): {"properties": {...}, "system-out": {...}}}."""
    suite = ET.parse(path).getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iterfind("properties/property")}
    cases = {}
    for case in suite.iterfind("testcase"):
        classname, name = case.get("classname"), case.get("name")
        assert (classname, name) not in cases, (classname, name)  # one case per metric
        prefix = f"{classname}.{name}."
        out = case.findtext("system-out") or ""
        cases[(classname, name)] = {
            "properties": {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)},
            "system-out": dict(line.split("=", 1) for line in out.splitlines() if "=" in line),
        }
    return cases


def text_tables(stdout: str) -> list[list[list[str]]]:
    """The terminal's tables: a header 'Profile  | ...', a rule, rows until a non-row."""
    lines = stdout.splitlines()
    tables = []
    for index, line in enumerate(lines):
        if re.match(r"Profile +\| ", line):
            rows = []
            for row in lines[index + 2 :]:
                cells = row.split(" | ")
                if len(cells) < 3:
                    break
                rows.append(cells)
            tables.append([line.split(" | "), *rows])
    return tables


def markdown_tables(markdown: str) -> list[list[list[str]]]:
    """report.md's tables; one split to fit 120 columns ("The same rows, continued: ..."
    before the next part, which repeats the leading cells that name a row) joined back."""
    tables, current, continued = [], None, False
    for line in markdown.splitlines():
        if line.startswith("The same rows, continued: "):
            continued = True
        if line.startswith("| Profile |"):
            current = []
            tables.append(current)
        if current is not None and line.startswith("|"):
            if not line.startswith("|---"):
                cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
                current.append([c.strip().replace("\\|", "|") for c in cells])
        elif current is not None:
            current = None
            if continued and len(tables) >= 2:
                tables[-2:] = [_joined(*tables[-2:])]
                continued = False
    return tables


def _joined(first: list[list[str]], rest: list[list[str]]) -> list[list[str]]:
    keys = next(i for i, (a, b) in enumerate(zip(first[0], rest[0], strict=False)) if a != b)
    pairs = list(zip(first, rest, strict=True))  # the same rows, in the same order
    assert all(a[:keys] == b[:keys] for a, b in pairs)
    return [a + b[keys:] for a, b in pairs]


def verdict_table(tables: list[list[list[str]]]) -> list[list[str]]:
    """The comparison table: the one with a Verdict column."""
    return next(t for t in tables if "Verdict" in [c.strip() for c in t[0]])
