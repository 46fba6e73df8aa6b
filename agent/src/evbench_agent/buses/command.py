"""The budget command, shared: `evbench budget` on the lab PC and `evbench-agent budget` on a
board print the same table (no bus, no board needed)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from evbench_agent.buses import budget
from evbench_agent.buses.render import render
from evbench_core.errors import ExitCode, UserError

HELP = "bus budget: frames per message and share of each period on CAN, CAN FD, UART (no board)"
#: json and protobuf always; dbc (packed CAN FD signals) where cantools is installed and the
#: DBC describes the profile (seed, ev-full).
DEFAULT_CODECS = ("json", "protobuf", "dbc")
#: Payloads encoded per codec: enough for a mean and a largest message, quick on a board.
DEFAULT_COUNT = 50


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", default="seed", help="payload profile (default: seed)")
    parser.add_argument("--rate", type=float, default=20.0, help="messages per second (default 20)")
    parser.add_argument(
        "--codecs",
        help="comma-separated codecs (default: json,protobuf and dbc where cantools is installed)",
    )
    parser.add_argument(
        "--bus",
        action="append",
        help=f"a bus, repeatable, or 'all' (default: {', '.join(budget.DEFAULT_BUSES)}; "
        f"known: {', '.join(budget.BUSES)})",
    )
    parser.add_argument(
        "--ceiling",
        type=float,
        default=budget.DEFAULT_CEILING * 100,
        help="bus-load ceiling in percent of the period (default 40)",
    )
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help="payloads per codec")
    parser.add_argument("--seed", type=int, default=1, help="payload seed (default 1)")
    parser.add_argument("--mode", choices=("ack", "echo"), default="ack", help="the reply")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")


def _codec_names(option: str | None, profile: str) -> list[str]:
    from evbench_agent import codecs  # protobuf and the codec libraries: only when run

    if option is None:
        return [name for name in DEFAULT_CODECS if name in codecs.available([profile])]
    names = [name.strip() for name in option.split(",") if name.strip()]
    for name in names:
        codecs.get(name)  # unknown or not installed: a UserError naming it
    return names


def run(args: argparse.Namespace) -> ExitCode:
    if not 1 <= args.count <= 10_000:
        raise UserError(f"--count {args.count} is outside 1..10000")
    if not 0 < args.ceiling <= 100:
        raise UserError(f"--ceiling {args.ceiling:g} is outside (0, 100] percent")
    if not 0 < args.rate <= 10_000:
        raise UserError(f"--rate {args.rate:g} is outside (0, 10000] Hz")
    names = args.bus or list(budget.DEFAULT_BUSES)
    buses = list(budget.BUSES.values()) if "all" in names else [budget.bus(n) for n in names]
    rows = []
    for codec in _codec_names(args.codecs, args.profile):
        rows += budget.codec_rows(
            codec,
            args.profile,
            buses,
            args.rate,
            args.count,
            args.seed,
            args.mode,
            args.ceiling / 100,
        )
    rows.sort(key=lambda row: (list(budget.BUSES).index(row.bus), row.codec))
    if args.json:
        print(json.dumps([asdict(row) | {"verdict": row.verdict} for row in rows], indent=1))
    else:
        print(render(rows, args.rate, args.mode, args.seed))
    return ExitCode.OK


__all__ = ["HELP", "add_options", "run"]
