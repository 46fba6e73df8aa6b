"""The run spec is validated before anything runs. One table of run options: both CLIs
and the host's agent call read it; one CLI runner."""

import argparse
import ast
import dataclasses
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import AGENT_SRC, ROOT

from evbench import cli as host_cli
from evbench_agent import cli as agent_cli
from evbench_agent import codecs, command_line, options, spec
from evbench_core.errors import ExitCode, UserError


def test_defaults_all_expansion_and_the_quick_plan():
    default = spec.from_dict({})
    assert default.profiles == ("seed", "ev-full")
    assert default.codecs == tuple(codecs.available())
    assert default.plan.processes * default.plan.values >= 100
    everything = spec.from_dict({"profiles": "all", "suites": "all"})
    assert "skip-nested" in everything.profiles
    assert everything.suites == spec.SUITES
    # quick is a fixed small plan, not a time limit
    assert spec.from_dict({"quick": True}).plan == spec.QUICK_PLAN
    assert spec.from_dict({"quick": True, "processes": 3}).plan.processes == 3
    assert spec.from_dict({"cpu": 0}).cpu == 0  # CPU 0 is a CPU


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"colour": "red"}, "unknown spec key 'colour'"),
        ({"codecs": "json,nope"}, "unknown codec 'nope'"),
        ({"profiles": ["seed", "huge"]}, "unknown profile 'huge'"),
        ({"suites": "codec,warp"}, "unknown suite 'warp'"),
        ({"processes": 0}, "'processes' must be a whole number of at least 1"),
        ({"values": "ten"}, "'values' must be a whole number"),
        ({"quick": "yes"}, "'quick' must be true or false"),
        ({"codecs": []}, "'codecs' must be a non-empty list"),
        ({"cpu": -1}, "'cpu' must be a whole number of at least 0"),
        # the A/A settings
        ({"aa_slowdown": 0.1}, "needs --aa CODEC"),
        ({"aa": "json", "aa_slowdown": -0.1}, "'aa_slowdown' must be a fraction from 0 to 10"),
        ({"aa": "json", "aa_slowdown": 11}, "'aa_slowdown' must be a fraction"),
        ({"aa": "json", "aa_slowdown": True}, "'aa_slowdown' must be a fraction"),
        ({"aa": "json-aa"}, "'aa' must name one installed codec"),
        ({"aa": ["json"]}, "'aa' must be the name of one installed codec"),
        ({"aa": "yaml"}, "unknown codec 'yaml'"),
        ({"cpu": 4096}, "cannot pin to CPU 4096"),
        # capped: a rate no link carries ran 3 x 10^8 messages a phase under a 13 s plan;
        # a window past what sockets hold locked both ends of the link
        ({"link_rate_hz": 1e9}, "'link_rate_hz' must be a number of at least 0.01 and at most"),
        ({"link_window": 1001}, "'link_window' must be a whole number of at least 1 and at most"),
    ],
)
def test_bad_specs_are_refused_naming_what_is_wrong(document, message):
    with pytest.raises(UserError, match=message):
        spec.from_dict(document)


def test_refusals_name_what_is_available():
    for document, hint in [({"profiles": "nope"}, "seed"), ({"colour": 1}, "codecs")]:
        with pytest.raises(UserError) as caught:
            spec.from_dict(document)
        assert hint in caught.value.hint
    with pytest.raises(UserError) as caught:
        spec.from_dict({"cpu": 4096})
    assert "0" in caught.value.hint


def test_an_aa_run_measures_the_codec_against_its_copy_and_specs_round_trip():
    aa = spec.from_dict({"aa": "json", "codecs": "protobuf,orjson"})
    assert aa.codecs == ("json", "json-aa")
    assert aa.slowdown("json") == 0.0 and aa.slowdown("json-aa") == 0.0
    slowed = spec.from_dict({"aa": "protobuf", "aa_slowdown": 0.1})
    assert slowed.slowdown("protobuf-aa") == 0.1 and slowed.slowdown("protobuf") == 0.0
    assert spec.from_dict(slowed.as_dict()) == slowed  # what the manifest keeps loads again
    # any spec round-trips through its dict, and the committed run's spec still loads
    original = spec.from_dict({"profiles": "seed", "codecs": "json,protobuf", "quick": True})
    assert spec.from_dict(original.as_dict()) == original
    manifest = Path(__file__).parent / "data" / "runs" / "core-v1" / "manifest.json"
    document = json.loads(manifest.read_text())["spec"]
    document["codecs"] = [c for c in document["codecs"] if c in codecs.available()]
    loaded = spec.from_dict(document)
    assert loaded.aa is None and loaded.aa_slowdown == 0.0


def test_a_spec_not_a_json_object_or_a_device_or_fifo_is_refused_at_once(tmp_path, capsys):
    out = ["--out", str(tmp_path / "out")]
    path = tmp_path / "spec.json"
    for text in ["[1, 2]", '"quick"', "3"]:
        path.write_text(text)
        with pytest.raises(UserError, match="is not a JSON object"):
            spec.load(path)
        # The agent merges its run options into the spec's keys: one line, exit 2, no traceback.
        assert agent_cli.agent(["run", "--spec", str(path), *out]) == 2
        assert "is not a JSON object" in capsys.readouterr().err
    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)  # no writer: reading it would wait for ever
    for path in ("/dev/zero", fifo):  # /dev/zero: read whole, it would fill the memory
        assert agent_cli.agent(["run", "--spec", str(path), *out]) == 2
        assert f"the spec {path} is not a regular file" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices[name]


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def test_every_option_names_a_spec_field_once_both_commands_have_it_the_host_passes_it():
    fields = {field.name for field in dataclasses.fields(spec.Spec)}
    flags = [option.flag for option in options.RUN_OPTIONS]
    assert len(flags) == len(set(flags))
    assert {option.spec_key for option in options.RUN_OPTIONS} <= fields
    agent_run = _flags(_subparser(agent_cli.build_parser(), "run"))
    host_run = _flags(_subparser(host_cli.build_parser(["run"]), "run"))
    assert set(flags) <= agent_run and set(flags) <= host_run
    # every command with a board has the same board options
    parser = host_cli.build_parser()
    for name in ("run", "deploy", "fetch", "diag", "flash"):
        assert {"--board", "--accept-new-host-key"} <= _flags(_subparser(parser, name)), name
    assert "--board" in _flags(_subparser(parser, "console"))  # serial only: no SSH host key
    # the host passes exactly the given options to the agent
    host_line = [
        "run", "--board", "local", "--codecs", "json,protobuf", "--quick", "--no-gc",
        "--processes", "3", "--rate", "12.5", "--aa", "json", "--aa-slowdown", "0.1",
        "--baseline-codec", "json",
    ]  # fmt: skip
    host_args = host_cli.build_parser(host_line).parse_args(host_line)
    passed = options.agent_argv(host_args)
    # written out by hand: given flags only, host-only ones (--board, --baseline-codec) stay
    assert passed == [
        "--codecs", "json,protobuf", "--quick", "--processes", "3", "--no-gc",
        "--aa", "json", "--aa-slowdown", "0.1", "--rate", "12.5",
    ]  # fmt: skip
    agent_args = agent_cli.build_parser().parse_args(["run", *passed])
    assert options.spec_overrides(agent_args) == {
        "codecs": "json,protobuf", "quick": True, "processes": 3, "gc": False, "aa": "json",
        "aa_slowdown": 0.1, "link_rate_hz": 12.5,
    }  # fmt: skip
    assert options.spec_overrides(agent_args) == options.spec_overrides(host_args)
    # nothing given overrides nothing in a spec file
    agent_args = agent_cli.build_parser().parse_args(["run"])
    assert options.spec_overrides(agent_args) == {}
    assert options.agent_argv(agent_args) == []


def _program(handler):
    def build() -> argparse.ArgumentParser:
        parser, commands = command_line.new_parser("prog", "a test program", "1.0")
        command_line.add_command(commands, "go", handler, "do it")
        return parser

    return build


def test_the_runner_sets_log_levels_before_or_after_the_command_and_exits_as_it_should(capsys):
    levels = []

    def handler(_args):
        levels.append((logging.getLogger("evbench_agent").level, logging.getLogger().level))
        logging.getLogger("evbench_agent.test").info("said at info")
        logging.getLogger("evbench.test").debug("said at debug")
        logging.getLogger("somelibrary.module").info("a library's chatter")
        return ExitCode.OK

    build = _program(handler)
    for argv in (["go"], ["-v", "go"], ["go", "-vv"], ["go", "--quiet"], ["-vv", "go", "--debug"]):
        assert command_line.run_program("prog", build, argv, "stopped") == ExitCode.OK
    # evbench's own loggers follow the flags; the root logger, whose level every
    # library inherits, stays at warnings but for --debug.
    warning, info, debug, error = logging.WARNING, logging.INFO, logging.DEBUG, logging.ERROR
    assert levels == [
        (warning, warning), (info, warning), (debug, warning), (error, error), (debug, debug)
    ]  # fmt: skip
    said = capsys.readouterr().err.splitlines()
    assert said.count("prog: info: said at info") == 3  # -v, -vv, --debug -vv
    # At -vv a debug line names the module that logged it.
    assert said.count("prog: debug: [evbench.test] said at debug") == 2
    assert said.count("prog: info: a library's chatter") == 1  # --debug only
    # no exit code is an internal error; a usage error is one line and exit 2
    build = _program(lambda _args: None)
    assert command_line.run_program("prog", build, ["go"], "stopped") == ExitCode.INTERNAL
    assert "returned None, not an ExitCode" in capsys.readouterr().err
    build = _program(lambda _args: ExitCode.OK)
    assert command_line.run_program("prog", build, ["go", "--nope"], "x") == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "prog: error: unrecognized arguments: --nope" in err and "Traceback" not in err


#: What configures logging: only evbench_core.log_output may call these.
CONFIGURING = {"basicConfig", "dictConfig", "fileConfig", "setLevel", "addHandler"}


def _logging_problems(path: Path, root: Path) -> list[str]:
    """Calls in `path` that configure logging, or take a logger not named after the module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name, args = node.func.attr, node.args
        own = len(args) == 1 and isinstance(args[0], ast.Name) and args[0].id == "__name__"
        if name in CONFIGURING or (name == "getLogger" and not own):
            found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_only_log_output_configures_logging_and_each_module_has_its_own_logger(tmp_path):
    sources = [*AGENT_SRC.rglob("*.py"), *(ROOT / "host_tools" / "src").rglob("*.py")]
    allowed = AGENT_SRC / "evbench_core" / "log_output.py"
    problems = [p for path in sources if path != allowed for p in _logging_problems(path, ROOT)]
    assert len(sources) > 100 and problems == []
    # the check itself finds a basicConfig and a shared logger
    module = tmp_path / "module.py"
    module.write_text(
        "import logging\nlogging.basicConfig()\nlog = logging.getLogger('evbench')\n"
        "logging.getLogger().setLevel(logging.DEBUG)\nmine = logging.getLogger(__name__)\n"
    )
    assert _logging_problems(module, tmp_path) == [
        "module.py:2 basicConfig", "module.py:3 getLogger", "module.py:4 setLevel",
        "module.py:4 getLogger",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("program", "argv"), [("evbench_agent", ["--help"]), ("evbench", ["flash", "--help"])]
)
def test_help_loads_no_codec_or_protobuf(program, argv):
    # the start-up budget: the runner and the options table import no measuring machinery
    probe = (
        "import sys, contextlib, io\n"
        f"from {program}.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        f"    sys.argv = ['x', *{argv!r}]; main()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('google', 'evbench_agent.codecs',"
        " 'evbench_agent.spec'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
