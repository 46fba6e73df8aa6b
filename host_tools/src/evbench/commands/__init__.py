"""Subcommands of `evbench`: each module has NAME, HELP, setup_parser() and run()."""

from __future__ import annotations

import importlib
from types import ModuleType

#: Imported explicitly, in the order `evbench --help` lists them.
COMMANDS = (
    "run",
    "deploy",
    "fetch",
    "report",
    "compare",
    "history",
    "lava",
    "budget",
    "lab",
    "flash",
    "diag",
    "console",
    "serve",
)


def load() -> list[ModuleType]:
    return [importlib.import_module(f"evbench.commands.{name}") for name in COMMANDS]
