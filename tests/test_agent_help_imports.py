"""`evbench-agent --help` imports only what the parser needs (issue 21, item 1).

On the board every start-up counts (an A53 imports several times slower than
the lab PC): the help and a usage error never log and never run a suite, so
logging, protobuf, psutil and the suites wait until a command runs. Checked in a
fresh interpreter (tests/test_import_weight.py's probe); not a timing test.
"""

from __future__ import annotations

import pytest
from test_import_weight import among, fresh

#: Loaded only once a command runs; top-level names, or module-name prefixes.
DEFERRED = (
    "logging", "google", "psutil", "evbench_agent.suites", "evbench_agent.codecs",
    "evbench_agent.buses",
    # read by no command's parser, and by no run either (codec versions come from
    # evbench_agent.platform.installed_version): email, zipfile and csv come with it
    "importlib.metadata",
)  # fmt: skip

_PROBE = (
    "import json, sys\n"
    "from evbench_agent.cli import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as stop:\n"
    "    code = stop.code\n"
    "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
)


@pytest.mark.parametrize(("argv", "exits"), [("--help", 0), ("no-such-command", 2)])
def test_help_or_a_usage_error_loads_no_logging_protobuf_psutil_or_suite(argv, exits):
    report = fresh(_PROBE, argv)
    assert report["code"] == exits
    assert "evbench_agent.cli" in report["modules"]  # the probe ran the real program
    assert among(report["modules"], DEFERRED) == []


def test_the_probe_sees_a_deferred_module_once_it_is_imported():
    # The same check on a line that imports logging: it must be reported.
    found = among(["argparse", "logging", "logging.handlers"], DEFERRED)
    assert found == ["logging", "logging.handlers"]


def test_the_budget_line_in_the_listing_is_the_budget_command_s_help():
    from evbench_agent import cli
    from evbench_agent.buses import command

    assert cli.BUDGET_HELP == command.HELP


def test_a_budget_line_loads_the_budget_command_with_its_options():
    from evbench_agent import cli

    args = cli.build_parser(["budget", "--bus", "all"]).parse_args(["budget", "--bus", "all"])
    assert args.bus == ["all"] and args.handler.__module__ == "evbench_agent.buses.command"
