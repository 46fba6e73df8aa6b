"""`evbench --help` lists every command (evbench.commands.SUMMARIES, equal to each module's
HELP) and a fresh interpreter shows it or a typo imports no command module and no protobuf;
`run --help` (host and agent) says what each registered suite, profile and codec is."""

import importlib
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from evbench.commands import SUMMARIES
from evbench_agent import catalogue, codecs, payloads, registry

#: From the folder, not from the CLI's table, so a new command without a summary is caught.
COMMANDS = (ROOT / "host_tools/src/evbench/commands").glob("*.py")
#: A module whose name starts with "_" (`__init__`, the commands' helpers) is no command.
COMMAND_NAMES = sorted(path.stem for path in COMMANDS if not path.stem.startswith("_"))

_PROBE = (
    "import json, sys\n"
    "from evbench.cli import evbench\n"
    "try:\n"
    "    code = evbench(sys.argv[1:])\n"
    "except SystemExit as stop:  # --help prints and exits\n"
    "    code = stop.code\n"
    "loaded = sorted(n for n in sys.modules if n.startswith(('evbench.commands.', 'google'))\n"
    "                and not n.startswith('evbench.commands._'))  # a helper is no command\n"
    "print(json.dumps({'code': int(code), 'loaded': loaded}))\n"
)


def _listing(*argv: str) -> tuple[dict, str]:
    argv_ = [sys.executable, "-c", _PROBE, *argv]
    result = subprocess.run(argv_, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    *printed, last = result.stdout.splitlines()
    return json.loads(last), "\n".join(printed) + result.stderr


def test_every_command_has_its_help_as_summary_and_a_new_codec_is_listed_unedited(monkeypatch):
    missing = set(COMMAND_NAMES) - set(SUMMARIES)
    assert not missing, (
        f"add the HELP of {sorted(missing)} to SUMMARIES in evbench/commands/__init__.py"
    )
    for name in COMMAND_NAMES:
        module = importlib.import_module(f"evbench.commands.{name}")
        assert SUMMARIES[name] == module.HELP, name
    # a codec added to the registry is listed without a hand edit
    added = codecs.Codec(
        "scratch", "evbench_scratch", "scratch", codecs.PLAIN, "Scratch text", None, yocto=None
    )
    monkeypatch.setitem(codecs.CODECS, "scratch", added)
    listing = catalogue.text(width=80)
    assert "Scratch text" in _entry(listing, "scratch")
    assert all(len(line) <= 80 for line in listing.splitlines())


#: A usage error names every choice; --help each command with its summary's start.
CHOICES = [f"'{name}'" for name in COMMAND_NAMES]
LISTED = [f"{name} {' '.join(SUMMARIES.get(name, '').split())[:20]}" for name in COMMAND_NAMES]


@pytest.mark.parametrize(
    ("argv", "code", "loaded", "said"),
    [
        (["nonsense"], 2, [], CHOICES),
        (["-v", "nonsense"], 2, [], CHOICES),
        ([], 2, [], []),
        (["--help"], 0, [], LISTED),
        # flash's own option, missing its value: flash alone is loaded, for its options
        (["flash", "--device"], 2, ["evbench.commands.flash"], ["expected one argument"]),
    ],
    ids=["typo", "option-then-typo", "nothing", "help", "named-command"],
)
def test_only_the_named_command_is_imported(argv, code, loaded, said):
    report, output = _listing(*argv)
    assert report == {"code": code, "loaded": loaded}, output
    text = " ".join(output.split())  # argparse wraps the lines
    assert [line for line in said if line not in text] == []


def _entry(listing: str, name: str) -> str:
    """The line that starts the entry `name` in the listing."""
    (line,) = [line for line in listing.splitlines() if line.strip().startswith(f"{name} ")]
    return line


@pytest.mark.parametrize("program", [("evbench",), ("evbench_agent",)])
def test_run_help_says_what_each_suite_profile_and_codec_is(program):
    environment = {**os.environ, "COLUMNS": "200"}  # wide: the listing caps itself
    argv = [sys.executable, "-m", *program, "run", "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=environment)
    assert done.returncode == 0, done.stderr
    listing = done.stdout.split("suites (--suite):", 1)[1]
    # Hand-checked against the suites' and payloads' own documentation.
    assert "50 ms periodic messages over TCP" in _entry(listing, "link")
    assert "encode, decode" in _entry(listing, "codec")
    assert "BMS with 96 cells" in _entry(listing, "ev-full")
    assert "Protocol Buffers binary" in _entry(listing, "protobuf")
    assert "JSON, the standard library" in _entry(listing, "json")
    assert "CBOR" in _entry(listing, "cbor2")
    for name in [*registry.REGISTRY, *payloads.PROFILES, *codecs.CODECS]:
        assert _entry(listing, name)  # nothing registered is left out
    assert max(len(line) for line in listing.splitlines()) <= catalogue.MAX_WIDTH
