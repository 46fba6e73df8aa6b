"""evbench run: run the suites on a board, gather the results, print the table."""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import sys
import tempfile
from pathlib import Path

from evbench.boards import Board, RemoteBoard, open_board
from evbench.commands._board_options import add_board_options, open_board_from
from evbench.history.after_run import add_history_options, record_run
from evbench.progress import ProgressView, quiet
from evbench.report import answer, glance, runtimes, table, terminal
from evbench.report.headline import partial_headline
from evbench.usecases import link_peer, schema
from evbench_agent import options
from evbench_core import results, write_failures
from evbench_core.comparison import Comparison, compare_recorded
from evbench_core.errors import EvbenchError, ExitCode, UserError
from evbench_core.run_ids import new_run_id

logger = logging.getLogger(__name__)

NAME = "run"
HELP = "run benchmarks on a board and print the comparison table"

#: A run that stops making progress for this long is broken, not slow.
AGENT_EXIT_TIMEOUT = 60.0


def setup_parser(parser: argparse.ArgumentParser) -> None:
    add_board_options(parser, default="local")
    options.add_run_options(parser)  # the agent's run options, passed on as given
    schema.add_schema_options(parser)  # host only: protoc compiles the .proto here
    parser.add_argument("--out", type=Path, help="the run directory (default: results/RUN_ID)")
    parser.add_argument(
        "--details",
        action="store_true",
        help="print the full table, each codec's medians and the bus budget after the run "
        "(default: the answer and the key rows; later: evbench report --terminal RUN)",
    )
    parser.add_argument("--baseline-codec", default="json", help="table baseline (default json)")
    parser.add_argument("--candidate-codec", default="protobuf", help="table candidate")
    add_history_options(parser)  # host only: where the run is indexed at its end
    parser.add_argument(  # host only: the agent gets the bus, never this machine's end of it
        "--host-transport",
        metavar="URL",
        help="with --peer host and --link-transport: this PC's end of the bus, where evbench "
        "runs the responder for the run: pycan://socketcan/can0?tx=0x7E8&rx=0x7E0 "
        "(python-can), isotp://... or uart://... (docs/buses.md)",
    )


def _agent_arguments(args: argparse.Namespace, run_id: str, out: Path | str) -> list[str]:
    """`out`: the run directory here, or the results directory on the board."""
    argv = ["run", "--progress", "json", "--run-id", run_id, "--out", str(out)]
    if getattr(args, "debug", False):  # the agent's own traceback, for the hint's --debug
        argv.append("--debug")
    if getattr(args, "agent_spec", None):  # a user's schema travels as a spec file
        argv += ["--spec", args.agent_spec]
    return argv + options.agent_argv(args)


def print_tables(run: results.Run, args: argparse.Namespace) -> Comparison | None:
    """The answer and the tables, fitted to the terminal's width (report/terminal.py: 120
    columns when the output is not a terminal); returns the comparison, computed once for
    the report."""
    codec_names = run.manifest.get("spec", {}).get("codecs", [])
    samples = list(run.samples())
    comparison = None
    baseline, candidate = args.baseline_codec, args.candidate_codec
    from evbench.report import unrepresentative

    width = terminal.width()
    tables = terminal.table_width()  # None when piped: the tables keep their shape
    warned = unrepresentative.warnings(run.manifest)  # as terminal_lines, to the width
    if warned:  # before the answer it qualifies
        prose = min(terminal.prose(width), 100)
        said = [line for text in warned for line in terminal.wrap(f"WARNING: {text}", prose, "  ")]
        print("\n".join(said), end="\n\n")
    if run.manifest.get("arms"):  # --arm: each codec under each environment
        from evbench.report import arms

        text, comparison = arms.render(samples, run.manifest)
        print(text)
        return comparison
    aa = run.manifest.get("aa")
    if aa:  # an A/A control: the codec against its identical copy
        baseline, candidate = aa["codec"], aa["copy"]
    details = getattr(args, "details", True)  # `evbench report --terminal`: everything
    pairs = runtimes.comparisons(samples, run.manifest, codec_names)  # C and C++ runtimes
    if baseline in codec_names and candidate in codec_names:
        comparison = compare_recorded(samples, run.manifest, baseline, candidate)
        if not details:  # one screen: the answer, the key rows, where the rest is
            from evbench.report import bus_budget
            from evbench_agent.buses import measured

            sized = measured.size_records(samples)
            rows, _skipped, rate = bus_budget.budget_of(run.manifest, sized)
            print(glance.render(comparison, run.directory, rows, rate, pairs, width))
            return comparison
        print(answer.render_comparison(comparison, tables))
    for heading, pair in pairs:  # each pair's answer and table (runtimes.render's, fitted)
        said = answer.answer_lines(pair) or ["no row both codecs ran."]
        print()
        print("\n".join(terminal.wrap(f"The answer ({heading}, on this machine):", width)))
        print("\n".join(line for text in said for line in terminal.wrap(f"- {text}", width)))
        print()
        print(table.format_rows(*table.comparison_cells(pair), width=tables))
    if codec_names:  # each codec's own medians, apart from the test's estimate
        print()
        print("Medians per codec:")
        print(table.render_codec_medians(samples, codec_names, tables))
    _print_bus_budget(run, samples, tables)
    _print_bus_counters(samples, width)
    return comparison


def _print_bus_budget(run: results.Run, samples: list, width: int | None = None) -> None:
    """Does it fit at N Hz? The bus budget of the run's measured sizes, after the table;
    with `width`, its sentences wrapped to it and a profile's table too wide for it laid
    out by table.format_rows (names shortened, then column groups repeating bus, codec)."""
    from evbench.report import bus_budget, terminal
    from evbench_agent.buses import measured, render

    sized = measured.size_records(samples)
    said = bus_budget.text(run.manifest, sized)
    if not said:
        return
    print()
    if width is None or max(len(line) for line in said.splitlines()) <= width:
        print(said)
        return
    rows, _skipped, _rate = bus_budget.budget_of(run.manifest, sized)
    lines: list[str] = []
    profile = None  # the profile whose table the lines are in, after its 'profile X:'
    block: list[str] = []
    for line in [*said.splitlines(), ""]:
        if profile is not None and line:
            block.append(line)
            continue
        if profile is not None:  # the table's end: kept, or laid out again to fit
            if max(len(row) for row in block) > width:
                cells = [render.cells(row) for row in rows if row.profile == profile]
                block = table.format_rows(render.HEADERS, cells, width=width).splitlines()
            lines += [*block, ""]
            profile, block = None, []
            continue
        if line.startswith("profile ") and line.endswith(":"):
            profile = line.removeprefix("profile ").removesuffix(":")
        lines += terminal.wrap(line, width, "  ")
    print("\n".join(lines).rstrip("\n"))


def _print_bus_counters(samples: list, width: int = 120) -> None:
    """Bus errors per phase of a link run over a bus (none: one line), within `width`."""
    from evbench.report import bus_counters, terminal

    said = bus_counters.text(samples)
    if said:
        print()
        print(
            "\n".join(
                line for text in said.splitlines() for line in terminal.wrap(text, width, "  ")
            )
        )


def _write_report(out: Path, comparison: Comparison | None = None) -> None:
    """Render the run; a report that fails only warns, the measured run is kept."""
    from evbench.report.writer import write_report  # matplotlib: only once results exist

    try:
        logger.info("writing the report into %s", out)
        write_report(out, comparison)
        if not quiet():  # named once it exists: the screen's last pointer, a path to copy
            pointer = f"Report with plots: {out / 'report.html'}"  # a long path: own line
            print("\n".join(terminal.wrap(pointer, terminal.width())))
    except Exception as error:  # a report bug must not cost the run or its exit code
        said = error.strerror if isinstance(error, OSError) and error.strerror else error
        logger.warning(  # --quiet hides it: the run itself is whole, as its exit code says
            "no report (%s: %s); the results are kept: try 'evbench report %s'",
            type(error).__name__,
            said,
            out,
        )


def run(args: argparse.Namespace) -> int:
    document = schema.schema_document(args)  # a bad schema stops here: no run directory
    if document is None:
        return _run(args)
    with tempfile.TemporaryDirectory(prefix="evbench-schema-") as scratch:
        spec_file = schema.write_spec(document, Path(scratch))
        return _run(argparse.Namespace(**{**vars(args), "agent_spec": str(spec_file)}))


def _run(args: argparse.Namespace) -> int:
    run_id = new_run_id()
    out = (args.out or Path("results") / run_id).resolve()
    host_bus = link_peer.host_transport(args)  # the options alone: before a board is opened
    with open_board_from(args) as board, contextlib.ExitStack() as responder:
        link_peer.check_peer(board, getattr(args, "peer", None))
        if host_bus:  # open before anything is written or started: its failure stops all here
            responder.enter_context(link_peer.host_bus_responder(host_bus))
        made = not out.exists()
        try:
            results.prepare_output(out)
            outcome = _run_on(board, args, run_id, out)
        except KeyboardInterrupt:
            if not (out / results.MANIFEST).exists():  # before the run began: its folder goes
                results.abandon(out, made)
            raise
    if isinstance(outcome, int):
        return outcome
    status, log = outcome
    return _finish(args, out, status, log)


def _run_on(
    board: Board, args: argparse.Namespace, run_id: str, out: Path
) -> tuple[int, str] | int:
    """The agent's run on `board` into `out`: its exit status and log, or evbench's own exit
    code when the run ended here (the host's disk filled while fetching it)."""
    logger.info("run %s on board %s into %s", run_id, getattr(board, "url", "local"), out)
    place = getattr(board, "place", None)  # a labgrid place: the board's identity
    if place and getattr(args, "board_place", None) is None:
        args = argparse.Namespace(**{**vars(args), "board_place": place})
    if not isinstance(board, RemoteBoard):  # the local board
        return _run_local(board, args, run_id, out)
    from evbench.usecases.remote_run import FetchCutShort

    try:
        return _run_remote(board, args, run_id, out)
    except FetchCutShort as cut:  # the host's disk filled: one line, the run kept
        print(cut.args[0], file=sys.stderr)
        return ExitCode.PARTIAL
    finally:
        # A console session's transcript goes beside the results it brought back.
        if out.is_dir():
            board.save_transcript(out)


def _run_local(board: Board, args: argparse.Namespace, run_id: str, out: Path) -> tuple[int, str]:
    """The agent on this machine, writing straight into `out`."""
    argv = board.agent_command() + _agent_arguments(args, run_id, out)
    logger.debug("the agent: %s", " ".join(argv))
    command = board.stream(argv)
    try:
        with ProgressView() as view:
            for line in command.lines():
                if not view.feed(line):
                    print(line, file=sys.stderr)
        status = command.wait(AGENT_EXIT_TIMEOUT)
        logger.info("the agent exited with %s", status)
    except KeyboardInterrupt:
        command.interrupt()
        status = command.wait(AGENT_EXIT_TIMEOUT)
        if not (out / results.MANIFEST).exists():
            raise  # stopped before the run began (the agent kept nothing): exit 130
    return status, command.stderr()


def _run_remote(
    board: RemoteBoard, args: argparse.Namespace, run_id: str, out: Path
) -> tuple[int, str]:
    """Deploy when needed, run detached on the board, follow, fetch and verify."""
    import tempfile

    from evbench.usecases import deploy, remote_run

    with tempfile.TemporaryDirectory(prefix="evbench-deploy-") as staging:
        install = deploy.ensure_agent(board, Path(staging))
    if not quiet():
        print(f"agent {install.version} ({install.source}, {install.action})", file=sys.stderr)
    peer = getattr(args, "peer", None)
    if peer == "board":  # the roles reversed: this machine measures, the board answers
        with (
            link_peer.board_responder(board, install.command) as address,
            open_board("local") as here,
        ):
            return _run_local(here, _with_peer(args, address), run_id, out)
    args = _spec_on_board(board, args, run_id)
    responder: contextlib.AbstractContextManager[str | None]
    if getattr(args, "host_transport", None):  # _run's responder answers on the bus's far end
        responder = contextlib.nullcontext(None)
    elif peer == "host":
        responder = link_peer.host_responder(board, getattr(args, "realtime", False))
    else:
        responder = contextlib.nullcontext(peer)
    with responder as address:
        return remote_run.run_and_fetch(
            board,
            install.command,
            run_id,
            lambda results_dir: _agent_arguments(_with_peer(args, address), run_id, results_dir),
            out,
        )


def _spec_on_board(board: Board, args: argparse.Namespace, run_id: str) -> argparse.Namespace:
    """Copy the run's spec file (a user's schema, the lab place) to the board; the agent
    there reads it and writes the lab place into the manifest it checksums."""
    lab = board.lab_record()
    given = Path(args.agent_spec) if getattr(args, "agent_spec", None) else None
    remote = f"{board.work_dir}/{run_id}.spec.json"
    if lab is not None:
        from evbench_agent import spec

        document = spec.load(given) if given else {}
        document["lab"] = lab
        with tempfile.TemporaryDirectory(prefix="evbench-spec-") as scratch:
            local = Path(scratch) / "spec.json"
            results.write_json(local, document)
            board.put(local, remote)
    elif given is not None:
        board.put(given, remote)
    else:
        return args
    return argparse.Namespace(**{**vars(args), "agent_spec": remote})


def _with_peer(args: argparse.Namespace, peer: str | None) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), "peer": peer})


def _agent_error(status: int, log: str) -> EvbenchError:
    """The agent's own one-line error and hint, relayed; its last lines otherwise."""
    said: dict[str, str | None] = {"error": None, "hint": None}
    for line in log.splitlines():
        for kind in said:
            prefix = f"evbench-agent: {kind}: "
            if line.startswith(prefix):
                said[kind] = line[len(prefix) :]
    message = said["error"]
    if message is None:
        tail = log.strip().splitlines()[-2:] or ["no output"]
        message = f"the agent failed (exit {status}): {' / '.join(tail)}"
    error = EvbenchError(message, hint=said["hint"])
    error.exit_code = (
        ExitCode(status) if status in (ExitCode.USAGE, ExitCode.CHECK_FAILED) else ExitCode.INTERNAL
    )
    return error


def _agent_traceback(log: str) -> str:
    """The last Python traceback in the agent's output (it prints one under --debug)."""
    start = log.rfind("Traceback (most recent call last):")
    return log[start:].rstrip() if start >= 0 else ""


def _save_agent_log(out: Path, log: str) -> None:
    """Keep the agent's output beside its results; a disk too full for it only warns,
    so the agent's own error (often that very full disk) is what the user reads."""
    try:
        results.write_atomic(out / "agent.log", log.encode())
    except OSError as error:
        logger.warning("the agent's log is not saved in %s: %s", out, error.strerror or error)


def _after_a_killed_agent(out: Path, signal_number: int) -> int:
    """The exit status of a run whose agent a signal killed. Killed before it sealed the
    run: what it wrote is kept, sealed partial. Killed after (a lab stopped while the
    agent was exiting): its run is whole, `complete` and every checksum good, and stays
    complete; sealing it partial would throw away a finished measurement."""
    if (out / results.COMPLETE).is_file() and results.verify_checksums(out) == []:
        logger.info("the agent was killed (signal %d) after its run was complete", signal_number)
        return ExitCode.OK
    with write_failures.writing(out):
        results.seal_partial(out, f"the agent was killed (signal {signal_number})")
    return ExitCode.PARTIAL


def _finish(args: argparse.Namespace, out: Path, status: int, log: str) -> int:
    started = (out / results.MANIFEST).exists()  # a refused spec leaves no run behind
    if log and started and not (out / "agent.log").exists():
        _save_agent_log(out, log)
    if status < 0 and started:
        status = _after_a_killed_agent(out, -status)
    if status not in (ExitCode.OK, ExitCode.PARTIAL, ExitCode.INTERRUPTED):
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        traceback = _agent_traceback(log)
        if getattr(args, "debug", False) and traceback:
            print(f"the agent's traceback:\n{traceback}", file=sys.stderr)
        raise _agent_error(status, log)
    logger.info("reading the results in %s", out)
    run_data = results.load_run(out)
    if not run_data.complete and not quiet():  # first: nobody reads the tables as a whole run
        print(partial_headline(run_data.manifest, [results.COMPLETE]), flush=True)
    with contextlib.redirect_stdout(io.StringIO()) if quiet() else contextlib.nullcontext():
        comparison = print_tables(run_data, args)  # --quiet: computed for the report only
    _write_report(out, comparison)
    record_run(args, out)  # a partial run too, marked partial
    if not run_data.complete:
        why = run_data.manifest.get("reason") or "interrupted"
        gap = "" if quiet() else "\n"
        print(f"{gap}PARTIAL run ({why}): partial results in {out}", file=sys.stderr)
        return ExitCode.INTERRUPTED if status == ExitCode.INTERRUPTED else ExitCode.PARTIAL
    if not quiet():
        print(f"\nresults: {out}", file=sys.stderr)
    return ExitCode.OK


__all__ = ["HELP", "NAME", "UserError", "run", "setup_parser"]
