"""evbench budget: what a profile's messages cost on CAN, CAN FD, UART and 100BASE-T1 (no board).

The command lives in the agent (evbench_agent.buses.command), so a board prints the same table
with `evbench-agent budget`."""

from __future__ import annotations

import argparse

from evbench_agent.buses import command

NAME = "budget"
HELP = command.HELP


def setup_parser(parser: argparse.ArgumentParser) -> None:
    command.add_options(parser)


def run(args: argparse.Namespace) -> int:
    return command.run(args)
