"""What a command module, the agent's help and its run path import (issue 21, items 1, 3): an
A53 imports slowly, so `evbench flash --help` must not load report's matplotlib, nor the agent's
help log or run a suite. Each probe reads a fresh interpreter's sys.modules; a command that needs
a heavy library at import time says so in USES, with the reason. Not a timing test.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evbench_agent import codecs

ROOT = Path(__file__).resolve().parent.parent
#: Heavy or optional third-party libraries (top-level names): the host's, each optional codec's.
OPTIONAL = {codec.module.partition(".")[0] for codec in codecs.CODECS.values() if codec.optional}
HEAVY = ("matplotlib", "paramiko", "serial", *sorted(OPTIONAL))
#: Listed from the folder, not from the CLI's own table, so a new command is checked too.
COMMAND_MODULES = sorted(
    f"evbench.commands.{path.stem}"
    for path in (ROOT / "host_tools/src/evbench/commands").glob("*.py")
    if path.stem != "__init__"
)
MODULES = ["evbench.cli", "evbench_agent.cli", *COMMAND_MODULES]
#: Heavy libraries a module may import, and why it cannot defer them.
USES: dict[str, set[str]] = {
    # A terminal on a serial line (or pyserial's socket://): every run opens one with pyserial.
    "evbench.commands.console": {"serial"},
}
#: What the agent loads only once a command runs; top-level names, or name prefixes.
AGENT_DEFERRED = (
    "logging", "google", "psutil", "evbench_agent.suites", "evbench_agent.codecs",
    "evbench_agent.buses",
    # read by no parser nor run (evbench_agent.platform.installed_version reads codec
    # versions): email, zipfile and csv come with it
    "importlib.metadata",
)  # fmt: skip

_PROBE = (
    "import importlib, json, sys\n"
    "importlib.import_module(sys.argv[1])\n"
    "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))\n"
)
_HELP_PROBE = (
    "import json, sys\n"
    "from evbench_agent.cli import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as stop:\n"
    "    code = stop.code\n"
    "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
)


def fresh(code: str, *argv: str, env: dict[str, str] | None = None):
    command = [sys.executable, "-c", code, *argv]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def among(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def heavy_imports(module: str, extra_path: Path | None = None) -> set[str]:
    env = dict(os.environ)
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra_path), env.get("PYTHONPATH")]))
    return set(fresh(_PROBE, module, env=env)) & set(HEAVY)


def test_every_command_module_is_checked_and_the_checks_catch_what_they_look_for(tmp_path):
    # The glob found the commands (a wrong folder would make every check vacuous).
    assert {"evbench.commands.flash", "evbench.commands.run"} <= set(COMMAND_MODULES)
    found = among(["argparse", "logging", "logging.handlers"], AGENT_DEFERRED)
    assert found == ["logging", "logging.handlers"]
    # Two throwaway command modules: one as light as flash, one with `import matplotlib`.
    package = tmp_path / "weight_demo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "light.py").write_text("import argparse\nNAME = 'light'\n")
    (package / "heavy.py").write_text("import argparse\nimport matplotlib\nNAME = 'heavy'\n")
    assert heavy_imports("weight_demo.light", tmp_path) == set()
    found = heavy_imports("weight_demo.heavy", tmp_path)
    assert found == {"matplotlib"}
    assert not found <= USES.get("weight_demo.heavy", set())  # the parametrized test would fail


@pytest.mark.parametrize("module", MODULES)
def test_importing_a_command_pulls_in_no_heavy_library_it_does_not_use(module):
    found = heavy_imports(module)
    assert found <= USES.get(module, set()), (
        f"importing {module} loads {sorted(found - USES.get(module, set()))}: import it "
        "inside the function that uses it, or add it to USES with the reason"
    )


@pytest.mark.parametrize(("argv", "exits"), [("--help", 0), ("no-such-command", 2)])
def test_agent_help_or_a_usage_error_loads_no_logging_protobuf_psutil_or_suite(argv, exits):
    report = fresh(_HELP_PROBE, argv)
    assert report["code"] == exits
    assert "evbench_agent.cli" in report["modules"]  # the probe ran the real program
    assert among(report["modules"], AGENT_DEFERRED) == []


def test_the_budget_line_is_the_budget_command_s_help_and_loads_it_with_its_options():
    from evbench_agent import cli
    from evbench_agent.buses import command

    assert cli.BUDGET_HELP == command.HELP
    args = cli.build_parser(["budget", "--bus", "all"]).parse_args(["budget", "--bus", "all"])
    assert args.bus == ["all"] and args.handler.__module__ == "evbench_agent.buses.command"


#: Not on the agent's run path (issue 21, item 3): importlib.metadata and what it brings
#: cost about 0.8 MiB of peak RSS; hashlib and hmac load libcrypto, 3.4 MiB (evbench_core.digests).
RUN_PATH_DEFERRED = ("importlib.metadata", "email", "zipfile", "csv", "_hashlib", "hashlib", "hmac")
#: What only a --link-transport run, or a schema with a map field, needs (about 0.75 MiB each).
RUN_PATH_DEFERRED += (
    "evbench_agent.link.bus_connection", "evbench_agent.buses.transport",
    "evbench_agent.telemetry.bus_stats", "google.protobuf.descriptor_pb2",
)  # fmt: skip

_RUN_PATH_PROBE = (
    "import json, sys\n"
    "{prelude}"
    "from evbench_agent.integrations import lava\n"
    "from evbench_agent.run import platform_info, runner\n"
    "from evbench_core import digests, results\n"
    "from evbench_agent.link import client, handshake, service\n"
    "from evbench_agent.suites import codec, link\n"
    "from evbench_agent import payloads\n"
    "for name in ('seed', 'ev-full'):  # builds every message of the default run's profiles\n"
    "    payloads.get(name).payloads(3)\n"
    "listing = platform_info.collect()  # every manifest: each installed codec's version\n"
    "digests.sha256(b'abc').hexdigest(), digests.compare_digest('a', 'a')  # in Python alone\n"
    "print(json.dumps([listing['codecs'], sorted(sys.modules)]))\n"
)


def run_path_deferred_loaded(prelude: str = "") -> tuple[dict, list[str]]:
    listing, modules = fresh(_RUN_PATH_PROBE.format(prelude=prelude))
    assert "evbench_agent.run.runner" in modules and "evbench_agent.codecs" in modules
    return listing, among(modules, RUN_PATH_DEFERRED)


def test_the_agent_s_run_path_loads_neither_importlib_metadata_nor_openssl():
    listing, found = run_path_deferred_loaded()
    assert found == [], f"the agent's run path loads {found}: see RUN_PATH_DEFERRED"
    assert listing.get("protobuf") not in (None, "unknown")  # the versions were really read
    # The check catches each coming back (none is loaded without its import, above).
    _, found = run_path_deferred_loaded(
        "import importlib.metadata, hmac\nfrom evbench_agent.link import bus_connection\n"
    )
    assert {"importlib.metadata", "email", "_hashlib", "hmac"} <= set(found)
    assert "evbench_agent.link.bus_connection" in found
