"""`evbench --help` lists every command without importing any (issue 21, item 1).

The listing comes from evbench.command_summaries; these tests keep it equal to
each command module's own HELP and check, in a fresh interpreter, that printing
it or refusing a typo imports no command module and no protobuf. Not a timing
test: what is imported is what the start-up time follows from.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from evbench.command_summaries import SUMMARIES

ROOT = Path(__file__).resolve().parent.parent
#: From the folder, not from the CLI's table, so a new command without a summary is caught.
COMMANDS = (ROOT / "host_tools/src/evbench/commands").glob("*.py")
COMMAND_NAMES = sorted(path.stem for path in COMMANDS if path.stem != "__init__")

_PROBE = (
    "import json, sys\n"
    "from evbench.cli import evbench\n"
    "try:\n"
    "    code = evbench(sys.argv[1:])\n"
    "except SystemExit as stop:  # --help prints and exits\n"
    "    code = stop.code\n"
    "loaded = sorted(n for n in sys.modules if n.startswith(('evbench.commands.', 'google')))\n"
    "print(json.dumps({'code': int(code), 'loaded': loaded}))\n"
)


def _listing(*argv: str) -> tuple[dict, str]:
    argv_ = [sys.executable, "-c", _PROBE, *argv]
    result = subprocess.run(argv_, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    *printed, last = result.stdout.splitlines()
    return json.loads(last), "\n".join(printed) + result.stderr


def test_every_command_in_the_folder_has_its_own_help_as_its_summary():
    missing = set(COMMAND_NAMES) - set(SUMMARIES)
    assert not missing, f"add the HELP of {sorted(missing)} to evbench/command_summaries.py"
    for name in COMMAND_NAMES:
        module = importlib.import_module(f"evbench.commands.{name}")
        assert SUMMARIES[name] == module.HELP, name


@pytest.mark.parametrize("argv", [["nonsense"], ["-v", "nonsense"], []])
def test_a_line_without_a_command_imports_no_command(argv):
    report, output = _listing(*argv)
    assert report["code"] == 2, output  # a usage error
    assert report["loaded"] == [], output
    if argv:
        for name in COMMAND_NAMES:  # the error names every choice
            assert f"'{name}'" in output


def test_help_lists_every_command_without_importing_one():
    report, output = _listing("--help")
    assert report == {"code": 0, "loaded": []}
    text = " ".join(output.split())  # argparse wraps the lines
    for name in COMMAND_NAMES:
        assert f"{name} {' '.join(SUMMARIES[name].split())[:20]}" in text, name


def test_a_named_command_is_loaded_with_its_options():
    report, output = _listing("flash", "--device")  # flash's own option, missing its value
    assert report["code"] == 2
    assert "expected one argument" in output
    assert report["loaded"] == ["evbench.commands.flash"]
