"""evbench serve --transport URL: the link responder on the lab PC's bus, until SIGTERM or Ctrl-C.

`pycan://INTERFACE/CHANNEL?tx=..&rx=..` answers over a CAN adapter through
python-can (evbench.usecases.can_peer), so a board's `--link-transport isotp://...` run
can measure against this PC; uart:// and isotp:// open as `evbench-agent serve
--transport` opens them. The serve loop is the agent's (link.bus_responder):
one line of JSON on standard output once the port is open, exit 0 on SIGTERM.
"""

from __future__ import annotations

import argparse

from evbench_agent.link.framing import DEFAULT_MAX_FRAME
from evbench_core.errors import ExitCode, UserError

NAME = "serve"
HELP = "the link responder on this PC's CAN adapter (python-can) or UART, until SIGTERM"


def setup_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--transport",
        required=True,
        metavar="URL",
        help="pycan://socketcan/can0?tx=0x7E8&rx=0x7E0&fd=1&dlen=64 (any python-can "
        "interface: pcan, kvaser, ...), isotp://... or uart://... (docs/buses.md)",
    )
    parser.add_argument(
        "--max-frame", type=int, default=DEFAULT_MAX_FRAME, metavar="B", help="largest frame, bytes"
    )


def run(args: argparse.Namespace) -> ExitCode:
    # Imported here: python-can is loaded only when a pycan:// port opens.
    from evbench.usecases import can_peer
    from evbench_agent.link.bus_responder import serve_transport

    if args.max_frame < 64:
        raise UserError(f"--max-frame {args.max_frame} is below 64 bytes")
    serve_transport(args.transport, args.max_frame, opener=can_peer.open_port)
    return ExitCode.OK
