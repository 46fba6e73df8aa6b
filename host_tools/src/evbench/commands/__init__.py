"""Subcommands of `evbench`: each module has NAME, HELP, setup_parser() and run().

`SUMMARIES` is the listing `evbench --help` prints, one line per command in that
order: the listing needs only these lines, not the commands. Importing every
command module (protobuf, the report table, SSH and serial boards) cost
`evbench --help` about 0.4 s of CPU, against about 0.08 s for one command. Each
line is the command module's HELP; tests/test_command_summaries.py keeps the two
equal. Modules whose names start with `_` are the commands' helpers, not commands.
"""

from __future__ import annotations

import importlib
from types import ModuleType

SUMMARIES: dict[str, str] = {
    "run": "run benchmarks on a board and print the comparison table",
    "deploy": "install or update the agent on a board",
    "fetch": "collect a run from a board by its id (waits for it to end)",
    "report": "render a run directory: report.md, self-contained report.html, CSV and JUnit",
    "compare": "compare runs (boards, platforms, nights); --baseline fails on regressions",
    "history": "index runs in a results store; trends, change points, checks and a trend page",
    "lava": "LAVA: write a job definition for a device type; turn a job's results into a run",
    "budget": (
        "bus budget: frames per message and share of each period on CAN, CAN FD, UART (no board)"
    ),
    "lab": "run a matrix of boards x suites x profiles x codecs (LAB.yaml), or show its status",
    "flash": (
        "write an image (plain, xz, gz, bz2, zstd; bmap-aware) to a card, a file or a board's eMMC"
    ),
    "diag": (
        "report a board's state: model, kernel, clocks, temperatures, memory, disk, network, agent"
    ),
    "console": "an interactive terminal on a board's serial console (Ctrl-] quits)",
    "serve": "the link responder on this PC's CAN adapter (python-can) or UART, until SIGTERM",
}

#: Imported explicitly, in the order `evbench --help` lists them.
COMMANDS = tuple(SUMMARIES)


def load() -> list[ModuleType]:
    return [importlib.import_module(f"evbench.commands.{name}") for name in COMMANDS]
