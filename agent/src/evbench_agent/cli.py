"""evbench-agent: the board side. Standard library only for its interface.

    evbench-agent run [--spec FILE] [--suite ...] [--profile ...] [--codecs ...] [--quick] --out DIR
    evbench-agent info [--json]
    evbench-agent serve [--bind ADDRESS] [--port N]
    evbench-agent lava RUN_DIR [--criteria RULE]     (results as LAVA test-shell signals)
    evbench-agent launch|supervise|status|follow|seal --run-dir DIR   (for evbench, not people)

The run options come from `evbench_agent.options` (the same table `evbench run`
uses); the runner (`evbench_agent.command_line`) adds -v/--verbose, --quiet and
--debug to every command and turns errors into one line and an exit code.

Exit codes (the same for evbench): 0 success, 1 internal error, 2 usage or
user error, 3 a check failed, 4 partial run, 130 interrupted, 141 the output's
reader went away.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evbench_agent import __version__, options
from evbench_agent.command_line import add_command, new_parser, run_program
from evbench_core.errors import ExitCode, UserError

# `evbench-agent --help` imports neither typing nor pathlib nor json (together some 25 ms
# of a start-up of about 100 on the lab PC): the commands import what they use.
TYPE_CHECKING = False  # False at run time; what it guards is for readers and type checkers
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from evbench_agent.command_line import Commands
    from evbench_agent.spec import Spec

PROG = "evbench-agent"
#: LAVA verdict criteria (evbench_agent.integrations.lava.CRITERIA; spelled here to keep
#: start-up light).
LAVA_CRITERIA = ("report", "candidate-not-worse", "candidate-wins")
#: The budget command's line in the listing (evbench_agent.buses.command.HELP; its options
#: import the bus models, about 40 ms: only a line with the word budget loads them).
BUDGET_HELP = (
    "bus budget: frames per message and share of each period on CAN, CAN FD, UART (no board)"
)


def _spec_from_args(args: argparse.Namespace) -> Spec:
    """The spec file's keys (if any), overridden by the run options actually given."""
    # Imported here for start-up time only: the spec loads the codecs (protobuf).
    from evbench_agent import spec as spec_module

    document = spec_module.load(args.spec) if args.spec else {}
    document.update(options.spec_overrides(args))
    return spec_module.from_dict(document)


def _run_dir(args: argparse.Namespace) -> Path:
    from pathlib import Path

    return Path(args.run_dir)


def _run(args: argparse.Namespace) -> ExitCode:
    from pathlib import Path

    from evbench_agent.progress import REPORTERS
    from evbench_agent.run import runner  # the measuring machinery, only for a run
    from evbench_core.run_ids import check_run_id, new_run_id

    if args.run_id is not None:  # it names the run's folder: refused before anything is made
        check_run_id(args.run_id)
    spec = _spec_from_args(args)
    from evbench_agent.processes import host_watch

    host_watch.start("run")
    run_id = args.run_id or new_run_id()
    out = Path(args.out) if args.out else Path("results") / run_id
    progress = REPORTERS[args.progress]()
    progress.message(f"run {run_id} -> {out}")
    try:
        runner.run(spec, out, run_id, progress)
    except KeyboardInterrupt:
        status = _run_status(out)
        if status is None:  # stopped before the run began: none is left
            said = "before the run began; nothing was kept"
        elif status == "running":  # never sealed: no summary, no checksums
            said = f"the run in {out} was left unsealed"
        else:
            said = "the run is kept as partial"
        print(f"{PROG}: interrupted; {said}", file=sys.stderr)
        return ExitCode.INTERRUPTED
    finally:
        # Under LAVA a partial run signals too: its missing records become failing cases.
        if _lava_wanted(args.lava) and out.is_dir():
            _signal_lava(out, args.lava_criteria)
    progress.message(f"complete: {out}")
    return ExitCode.OK


def _run_status(out: Path) -> str | None:
    """The status the run's manifest records (sealed: no longer "running"); None without
    a manifest to read."""
    from evbench_core import results
    from evbench_core.errors import FormatError

    try:
        status = results.read_document(out / results.MANIFEST).get("status")
    except FormatError:
        return None
    return status if isinstance(status, str) else None


def _lava_wanted(choice: str) -> bool:
    from evbench_agent.integrations import lava

    return choice == "on" or (choice == "auto" and lava.in_lava_test_shell())


def _signal_lava(directory: Path, criteria: str) -> None:
    from evbench_agent.integrations import lava

    lava.signal_run(directory, sys.stdout, lava.Criteria(criteria))


def _lava(args: argparse.Namespace) -> ExitCode:
    _signal_lava(_run_dir(args), args.criteria)
    return ExitCode.OK


def _info(args: argparse.Namespace) -> ExitCode:
    from evbench_agent.platform import bus_interfaces
    from evbench_agent.run import platform_info
    from evbench_agent.telemetry import noise, session

    info = platform_info.collect()
    info["warnings"] = noise.warnings(session.sysfs_root())  # what makes results noisy here
    found = bus_interfaces.collect(session.sysfs_root())
    if args.json:
        import json

        print(json.dumps(info | {"buses": found}, indent=2))
        return ExitCode.OK
    for warning in info.pop("warnings"):
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    for key, value in (info | bus_interfaces.describe(found)).items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(map(str, value)) or "-"
        print(f"{key:>22}: {value}")
    return ExitCode.OK


def _worker(_args: argparse.Namespace) -> ExitCode:
    from evbench_agent.processes import host_watch
    from evbench_agent.processes.workers import serve_task

    host_watch.start("worker")
    serve_task(sys.stdin, sys.stdout)
    return ExitCode.OK


def _serve(args: argparse.Namespace) -> ExitCode:
    from evbench_agent.link.responder import serve

    if not 0 <= args.port < 65536 or args.max_frame < 64 or args.max_connections < 1:
        raise UserError("--port must be 0-65535, --max-frame >= 64, --max-connections >= 1")
    from evbench_agent.processes import host_watch

    host_watch.start("responder")
    if args.transport:  # a bus (UART, ISO-TP): one peer, no TCP
        from evbench_agent.link.bus_responder import serve_transport

        serve_transport(args.transport, args.max_frame)
        return ExitCode.OK
    serve(args.bind, args.port, args.max_frame, args.max_connections, args.realtime)
    return ExitCode.OK


def _print_json(document: dict[str, Any]) -> None:
    import json

    print(json.dumps({"event": "status", **document}), flush=True)


def _run_argv(args: argparse.Namespace) -> list[str]:
    # argparse keeps the "--" that separates the run's own arguments on some versions.
    argv: list[str] = args.run_argv
    return argv[1:] if argv[:1] == ["--"] else argv


def _launch(args: argparse.Namespace) -> ExitCode:
    from evbench_agent.run import detached  # start-up time: it loads the results format

    _print_json(detached.launch(_run_dir(args), _run_argv(args)))
    return ExitCode.OK


def _supervise(args: argparse.Namespace) -> ExitCode:
    from evbench_agent.run import detached  # start-up time: it loads the results format

    if args.token_on_stdin:  # launch hands the link token over a pipe, not the environment
        detached.receive_token(sys.stdin)
    return ExitCode(detached.supervise(_run_dir(args), _run_argv(args), agent))


def _status(args: argparse.Namespace) -> ExitCode:
    from evbench_agent.run import detached  # start-up time: it loads the results format

    _print_json(detached.status(_run_dir(args)))
    return ExitCode.OK


def _follow(args: argparse.Namespace) -> ExitCode:
    from evbench_agent.run import detached  # start-up time: it loads the results format

    _print_json(detached.follow(_run_dir(args), args.offset))
    return ExitCode.OK


def _seal(args: argparse.Namespace) -> ExitCode:
    from evbench_agent.run import detached  # start-up time: it loads the results format

    run_dir = _run_dir(args)
    current = detached.status(run_dir)
    if current["state"] == "stopped":
        detached.seal(run_dir, current["reason"])
    _print_json(detached.status(run_dir))
    return ExitCode.OK


def _add_detached_commands(commands: Commands) -> None:
    """The subcommands a host uses to drive a detached run (not meant for people)."""
    for name, handler, what in (
        ("launch", _launch, "start a run detached from this session"),
        ("supervise", _supervise, argparse.SUPPRESS),
        ("status", _status, "where a detached run stands, as JSON"),
        ("follow", _follow, "print a detached run's progress until it ends"),
        ("seal", _seal, "keep a stopped run's results as partial"),
    ):
        command = add_command(commands, name, handler, what)
        command.add_argument("--run-dir", required=True, help="the run's directory on the board")
        if name == "supervise":
            command.add_argument("--token-on-stdin", action="store_true", help=argparse.SUPPRESS)
        if name in ("launch", "supervise"):
            command.add_argument("run_argv", nargs=argparse.REMAINDER, help="-- run arguments")
        if name == "follow":
            command.add_argument("--offset", type=int, default=0, help="bytes already read")


def _not_loaded(args: argparse.Namespace) -> ExitCode:
    raise RuntimeError(f"command {args.command!r} was listed, not loaded")  # a bug if reached


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser, commands = new_parser(PROG, "evbench agent: benchmarks on the board", __version__)

    run = add_command(commands, "run", _run, "run suites into a results directory")
    run.add_argument("--spec", help="a JSON spec file ('-' for standard input)")
    options.add_run_options(run)
    run.add_argument("--out", help="the run directory (must be new or empty)")
    run.add_argument("--run-id", help="the run id (the host gives one)")
    run.add_argument("--progress", choices=("text", "json", "none"), default="text")
    run.add_argument(
        "--lava",
        choices=("auto", "on", "off"),
        default="auto",
        help="LAVA test-shell signals for the results (auto: inside a LAVA test shell)",
    )
    run.add_argument(
        "--lava-criteria",
        choices=LAVA_CRITERIA,
        default=LAVA_CRITERIA[0],
        help="what makes a verdict test case pass (default: report, any verdict passes)",
    )

    lava = add_command(commands, "lava", _lava, "a run directory's results as LAVA signals")
    lava.add_argument("run_dir", help="the run directory")
    lava.add_argument("--criteria", choices=LAVA_CRITERIA, default=LAVA_CRITERIA[0])

    info = add_command(commands, "info", _info, "platform, versions and codecs")
    info.add_argument("--json", action="store_true")

    add_command(commands, "worker", _worker, argparse.SUPPRESS)

    serve = add_command(commands, "serve", _serve, "the link benchmark's responder (until SIGTERM)")
    serve.add_argument("--bind", default="127.0.0.1", help="address (default: loopback only)")
    serve.add_argument("--port", type=int, default=50505, help="TCP port; 0 picks a free one")
    serve.add_argument("--max-frame", type=int, default=1 << 20, help="largest frame, bytes")
    serve.add_argument("--max-connections", type=int, default=16, help="clients at once")
    serve.add_argument("--realtime", action="store_true", help="SCHED_FIFO, 1 ns timer slack")
    serve.add_argument(
        "--transport",
        help="answer on a bus instead of TCP: uart:///dev/ttyS1?baud=115200 or "
        "isotp://can0?tx=0x7E8&rx=0x7E0 (docs/buses.md)",
    )

    if argv is None or "budget" in argv:
        from evbench_agent.buses import command as budget_command

        budget = add_command(commands, "budget", budget_command.run, budget_command.HELP)
        budget_command.add_options(budget)
    else:  # a line without the word cannot run it: listed for --help and usage errors
        add_command(commands, "budget", _not_loaded, BUDGET_HELP)

    _add_detached_commands(commands)  # runs a host starts and picks up again
    return parser


def agent(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv`; return the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    return run_program(PROG, lambda: build_parser(arguments), arguments, "interrupted")


def main() -> None:
    from evbench_agent.processes import private_environment

    # Before anything starts a child: no worker, sampler or responder inherits a secret.
    private_environment.withhold()
    sys.exit(agent())
