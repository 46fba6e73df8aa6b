"""evbench-agent: the board side. Standard library only for its interface.

    evbench-agent run [--spec FILE] [--suite ...] [--profile ...] [--codecs ...] [--quick] --out DIR
    evbench-agent info [--json]

Exit codes (the same for evbench): 0 success, 1 internal error, 2 usage or
user error, 3 a check failed, 4 partial run, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from evbench_agent import __version__
from evbench_agent.errors import ExitCode, UserError, guarded

PROG = "evbench-agent"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 itself; keep one message style
        raise UserError(message, hint=f"see '{self.prog} --help'")


def _spec_from_args(args: argparse.Namespace):
    from evbench_agent import spec as spec_module

    document = spec_module.load(args.spec) if args.spec else {}
    flags = {
        "suites": args.suite,
        "profiles": args.profile,
        "codecs": args.codecs,
        "cpu": args.cpu,
        "processes": args.processes,
        "values": args.values,
        "telemetry_interval_s": getattr(args, "telemetry_interval", None),
        "cool_to": getattr(args, "cool_to", None),
        "governor": getattr(args, "governor", None),
        "link_peer": getattr(args, "peer", None),
        "link_mode": getattr(args, "mode", None),
        "link_rate_hz": getattr(args, "rate", None),
        "link_duration_s": getattr(args, "duration", None),
        "link_count": getattr(args, "count", None),
        "link_window": getattr(args, "window", None),
        "link_profiles": getattr(args, "link_profile", None),
    }
    document.update({key: value for key, value in flags.items() if value is not None})
    if args.quick:
        document["quick"] = True
    if args.no_gc:
        document["gc"] = False
    if getattr(args, "realtime", False):
        document["link_realtime"] = True
    return spec_module.from_dict(document)


def _run(args: argparse.Namespace) -> int:
    from evbench_agent import runner
    from evbench_agent.progress import REPORTERS

    spec = _spec_from_args(args)
    run_id = args.run_id or runner.new_run_id()
    out = Path(args.out) if args.out else Path("results") / run_id
    progress = REPORTERS[args.progress]()
    progress.message(f"run {run_id} -> {out}")
    runner.run(spec, out, run_id, progress)
    progress.message(f"complete: {out}")
    return ExitCode.OK


def _info(args: argparse.Namespace) -> int:
    from evbench_agent import platform_info
    from evbench_agent.telemetry import noise, session

    info = platform_info.collect()
    info["warnings"] = noise.warnings(session.sysfs_root())  # what makes results noisy here
    if args.json:
        print(json.dumps(info, indent=2))
        return ExitCode.OK
    for warning in info.pop("warnings"):
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    for key, value in info.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(map(str, value)) or "-"
        print(f"{key:>22}: {value}")
    return ExitCode.OK


def _worker(_args: argparse.Namespace) -> int:
    from evbench_agent.workers import serve_task

    serve_task(sys.stdin, sys.stdout)
    return ExitCode.OK


def _serve(args: argparse.Namespace) -> int:
    from evbench_agent.link.responder import serve

    if not 0 <= args.port < 65536 or args.max_frame < 64 or args.max_connections < 1:
        raise UserError("--port must be 0-65535, --max-frame >= 64, --max-connections >= 1")
    serve(args.bind, args.port, args.max_frame, args.max_connections, args.realtime)
    return ExitCode.OK


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="evbench agent: benchmarks on the board")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="run suites into a results directory")
    run.add_argument("--spec", help="a JSON spec file ('-' for standard input)")
    run.add_argument("--suite", help="comma list of suites, or 'all'")
    run.add_argument("--profile", help="comma list of payload profiles, or 'all'")
    run.add_argument("--codecs", help="comma list of codecs, or 'all' (the installed ones)")
    run.add_argument("--quick", action="store_true", help="a fixed small sample plan")
    run.add_argument("--no-gc", action="store_true", help="disable the GC while timing")
    run.add_argument("--cpu", type=int, help="pin the measuring processes to this CPU")
    run.add_argument("--processes", type=int, help="worker processes (sample plan)")
    run.add_argument("--values", type=int, help="samples per worker (sample plan)")
    run.add_argument("--out", help="the run directory (must be new or empty)")
    run.add_argument("--run-id", help="the run id (the host gives one)")
    run.add_argument("--progress", choices=("text", "json", "none"), default="text")
    run.add_argument(
        "--telemetry-interval", type=float, metavar="S", help="telemetry sampling (default 1 s)"
    )
    run.add_argument(
        "--cool-to", type=float, metavar="CELSIUS", help="before each phase, wait until cooler"
    )
    run.add_argument("--governor", help="set this cpufreq governor for the run, then restore it")
    run.add_argument("--peer", help="link: loopback (default), or HOST:PORT of a responder")
    run.add_argument("--mode", choices=("ack", "echo"), help="link: responder mode (ack)")
    run.add_argument("--rate", type=float, metavar="HZ", help="link: messages per second (20)")
    run.add_argument("--duration", type=float, metavar="S", help="link: seconds per phase")
    run.add_argument("--count", type=int, help="link: messages per phase, instead of --duration")
    run.add_argument("--window", type=int, help="link: messages in flight, saturation (8)")
    run.add_argument("--link-profile", help="link: comma list of profiles (default: seed)")
    run.add_argument(
        "--realtime", action="store_true", help="link: ask for SCHED_FIFO and 1 ns timer slack"
    )
    run.set_defaults(handler=_run)

    info = commands.add_parser("info", help="platform, versions and codecs")
    info.add_argument("--json", action="store_true")
    info.set_defaults(handler=_info)

    worker = commands.add_parser("worker", help=argparse.SUPPRESS)
    worker.set_defaults(handler=_worker)

    serve = commands.add_parser("serve", help="the link benchmark's responder (until SIGTERM)")
    serve.add_argument("--bind", default="127.0.0.1", help="address (default: loopback only)")
    serve.add_argument("--port", type=int, default=50505, help="TCP port; 0 picks a free one")
    serve.add_argument("--max-frame", type=int, default=1 << 20, help="largest frame, bytes")
    serve.add_argument("--max-connections", type=int, default=16, help="clients at once")
    serve.add_argument("--realtime", action="store_true", help="SCHED_FIFO, 1 ns timer slack")
    serve.set_defaults(handler=_serve)

    from evbench_agent import detached  # runs a host starts and picks up again

    detached.add_commands(commands)
    return parser


def agent(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv`; return the exit code."""

    def dispatch() -> int:
        args = build_parser().parse_args(argv)
        return args.handler(args)

    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    return guarded(PROG, dispatch, debug, "interrupted; the run is kept as partial")


def main() -> None:
    sys.exit(agent())
