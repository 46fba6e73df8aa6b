"""The code type-checks: every mypy line of the Makefile's `lint` recipe (the one list of what
is checked and how strictly) runs here as there, and a failure shows mypy's own report."""

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, require

MYPY = "$(BIN)/mypy"


RECIPE = re.search(r"^lint:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
assert RECIPE, "the Makefile has no lint recipe"
#: The arguments of every mypy command in the Makefile's `lint` recipe.
LINES = [
    line.strip().removeprefix(MYPY).strip()
    for line in RECIPE[1].splitlines()
    if line.strip().startswith(MYPY)
]


def _mypy(arguments: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    require(importlib.util.find_spec("mypy") is not None, "mypy (requirements-dev.txt)")
    argv = [sys.executable, "-m", "mypy", "--cache-dir", str(cache), *arguments]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=500)


def _modules(folder: Path) -> int:
    """The modules mypy reads in `folder`: a stub (.pyi) stands for its module (.py)."""
    sources = [path for path in folder.rglob("*.py*") if path.suffix in (".py", ".pyi")]
    return len({path.with_suffix("") for path in sources})


@pytest.mark.parametrize("line", LINES)
def test_make_lint_mypy_line_passes(line, tmp_path):
    arguments = shlex.split(line)
    done = _mypy(arguments, tmp_path / "cache")
    report = done.stdout + done.stderr
    assert done.returncode == 0, f"`mypy {line}` found errors:\n{report}"
    # Every module of the folders named was read: a wrong path or exclusion cannot pass.
    folders = [ROOT / a for a in arguments if not a.startswith("-") and (ROOT / a).is_dir()]
    assert folders, line
    expected = sum(_modules(folder) for folder in folders)
    assert f"Success: no issues found in {expected} source files" in done.stdout, report


def test_make_lint_checks_the_agent_and_core_strictly_the_host_and_strict_catches(tmp_path):
    assert "--strict agent/src/evbench_agent agent/src/evbench_core" in LINES
    # Default strictness on the host (mypy.ini adds what already holds there); the
    # agent's modules it imports are read, and checked by the line above.
    assert "host_tools/src/evbench" in LINES
    # One untyped function and one Any leaking out: errors under --strict only, so the
    # check above cannot pass by being lax.
    module = tmp_path / "loose.py"
    module.write_text(
        "import json\n\n\n"
        "def untyped(x):\n    return x\n\n\n"
        "def parsed(text: str) -> dict[str, int]:\n    return json.loads(text)\n"
    )
    done = _mypy(["--strict", str(module)], tmp_path / "cache")
    assert done.returncode == 1, done.stdout + done.stderr
    untyped = "loose.py:4: error: Function is missing a type annotation  [no-untyped-def]"
    assert untyped in done.stdout
    assert "loose.py:9: error: Returning Any from function declared to return" in done.stdout
