"""Runs that outlive the connection that started them (the host drives them).

A host over SSH or a serial console starts a run, loses the connection, and
picks the same run up again by its id. Each run has a directory on the board:

- ``launch.json``: pid of the detached run and the boot id it started under;
- ``progress.jsonl``: the agent's JSON progress lines (its standard output);
- ``agent.log``: what the agent wrote to standard error;
- ``exit``: the agent's exit code, written when it ends (or when sealed);
- ``reason``: why a run that could not end by itself was sealed as partial;
- ``results/``: the run directory in the results format.

Creating the directory claims the run id (``mkdir`` is atomic), so a second
start of the same id is refused even when two hosts race.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import evbench_agent
from evbench_agent.processes import private_environment
from evbench_core import results
from evbench_core.errors import ExitCode, UserError

log = logging.getLogger(__name__)

LAUNCH = "launch.json"
PROGRESS = "progress.jsonl"
LOG = "agent.log"
EXIT = "exit"
REASON = "reason"
RESULTS = "results"

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
#: How often `follow` looks for new progress lines.
POLL_SECONDS = 0.2
HEARTBEAT_SECONDS = 5.0
#: Not part of progress.jsonl: followers skip it (and do not count its bytes).
HEARTBEAT = b'{"event": "heartbeat"}\n'
#: A run directory without launch.json this long after its creation never started.
START_GRACE_SECONDS = 30.0


def boot_id() -> str:
    """This boot's id: it changes on every reboot, so a host can tell one happened."""
    try:
        return BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return "unknown"


def _agent_environment() -> dict[str, str]:
    # The agent may run from a zipapp: the detached process and its workers
    # (`python -m evbench_agent`) must find the package where this one did.
    package_root = str(Path(evbench_agent.__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if k not in private_environment.PRIVATE_VARIABLES}
    paths = [package_root, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def launch(run_dir: Path, run_argv: list[str]) -> dict[str, Any]:
    """Start `evbench-agent run_argv` detached, in its own session; refuse a taken id.

    Relative paths (the run directory, the agent's --out) mean the same to the
    detached process as to the caller: it keeps the caller's working directory.
    Any OSError (a directory the login user cannot write, a full disk) is a UserError
    naming the path: the board's directory is the user's to choose (dir=PATH).
    """
    run_dir = run_dir.absolute()
    _claim(run_dir)
    try:
        document = _start_detached(run_dir, run_argv)
    except OSError as error:
        where = error.filename if isinstance(error.filename, str) else run_dir
        raise UserError(
            f"cannot start the run in {_shown(where)}: {error.strerror or error}",
            hint="check the board's free space (df) and that the directory is writable",
        ) from None
    log.info("launched run %s detached (pid %d)", run_dir.name, document["pid"])
    return document


def _claim(run_dir: Path) -> None:
    """Create the run's directory: that claims the run id (mkdir is atomic)."""
    try:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # FileExistsError too: a file where the runs' folder goes
        raise _cannot_create(run_dir.parent, error) from None
    try:
        run_dir.mkdir()
    except FileExistsError:
        raise UserError(
            f"a run with id {run_dir.name} already exists on this board",
            hint="collect it with `evbench fetch RUN_ID`, or start a new run",
        ) from None
    except OSError as error:
        raise _cannot_create(run_dir, error) from None


def _cannot_create(path: Path, error: OSError) -> UserError:
    return UserError(
        f"cannot create {_shown(path)} for the run: {error.strerror or error}",
        hint="give the board a directory the login user can write (dir=PATH in its URL)",
    )


def _shown(path: Path | str, limit: int = 200) -> str:
    """A path cut for a one-line message (a run id may be any length the caller gave)."""
    text = str(path)
    return text if len(text) <= limit else f"{text[:limit]}..."


def _start_detached(run_dir: Path, run_argv: list[str]) -> dict[str, Any]:
    """Start the supervisor of the run in `run_dir` (claimed) and record its launch."""
    argv = [sys.executable, "-m", "evbench_agent", "supervise", "--run-dir", str(run_dir)]
    token = private_environment.link_token()
    if token:  # over a pipe: a child's environment is readable in /proc/PID/environ
        argv.append("--token-on-stdin")
    with open(run_dir / PROGRESS, "wb") as progress, open(run_dir / LOG, "wb") as said:
        process = subprocess.Popen(
            [*argv, "--", *run_argv],
            stdin=subprocess.PIPE if token else subprocess.DEVNULL,
            stdout=progress,
            stderr=said,
            env=_agent_environment(),
            # Its own session: no hang-up reaches it when the connection drops.
            start_new_session=True,
        )
        if token:
            assert process.stdin is not None  # stdin=PIPE with a token
            with process.stdin:
                process.stdin.write(token.encode("utf-8", "surrogateescape"))
    document = {"pid": process.pid, "boot_id": boot_id(), "started": time.time()}
    results.write_json(run_dir / LAUNCH, document)
    return document


def receive_token(stream: TextIO) -> None:
    """Read the link token `launch` writes on the detached process's stdin (capped)."""
    token = stream.buffer.read(private_environment.MAX_TOKEN + 1)
    if len(token) > private_environment.MAX_TOKEN:
        raise UserError(
            f"the link token on standard input is over {private_environment.MAX_TOKEN} B"
        )
    private_environment.keep_link_token(token.decode("utf-8", "surrogateescape"))


def supervise(run_dir: Path, run_argv: list[str], agent: Callable[[list[str]], int]) -> int:
    """Run `agent(run_argv)` (the agent's command line) here and record how it ended."""
    code = agent(run_argv)
    results.write_atomic(run_dir / EXIT, f"{int(code)}\n".encode())
    return code


def _process_alive(pid: int, run_dir: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    if stat.rpartition(")")[2].split()[:1] in (["Z"], ["X"]):
        return False  # ended, not yet reaped
    if not cmdline:
        return True  # in the middle of exec: the kernel has not set its arguments yet
    # A recycled pid belongs to another program: it does not name this run.
    return str(run_dir).encode() in cmdline


def status(run_dir: Path) -> dict[str, Any]:
    """Where a run stands: absent, running, finished (with its exit code) or stopped."""
    state: dict[str, Any] = {"run_id": run_dir.name, "boot_id": boot_id()}
    if not run_dir.is_dir():
        return {**state, "state": "absent"}
    exit_path = run_dir / EXIT
    if exit_path.exists():
        reason_path = run_dir / REASON
        reason = reason_path.read_text(encoding="utf-8").strip() if reason_path.exists() else None
        code = int(exit_path.read_text(encoding="ascii").strip() or ExitCode.INTERNAL)
        complete = (run_dir / RESULTS / results.COMPLETE).exists()
        return {**state, "state": "finished", "exit": code, "reason": reason, "complete": complete}
    try:
        launched = json.loads((run_dir / LAUNCH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        started = run_dir.stat().st_mtime
        if time.time() - started < START_GRACE_SECONDS:
            return {**state, "state": "running"}
        return {**state, "state": "stopped", "reason": "the run never started"}
    if launched.get("boot_id") != state["boot_id"]:
        return {**state, "state": "stopped", "reason": "the board rebooted during the run"}
    if _process_alive(int(launched["pid"]), run_dir):
        return {**state, "state": "running", "pid": launched["pid"]}
    # The exit file may have landed between the two looks.
    if exit_path.exists():
        return status(run_dir)
    return {**state, "state": "stopped", "reason": "the agent process ended without a word"}


def seal(run_dir: Path, reason: str) -> None:
    """Close a run that cannot end by itself: what exists is kept, marked partial."""
    directory = run_dir / RESULTS
    if directory.is_dir() and (directory / results.MANIFEST).exists():
        # The core's sealing: a samples line a power cut damaged is left out, not fatal,
        # and a manifest already saying "complete" (killed before the marker) turns partial.
        results.seal_partial(directory, reason)
    results.write_atomic(run_dir / REASON, f"{reason}\n".encode())
    results.write_atomic(run_dir / EXIT, f"{int(ExitCode.PARTIAL)}\n".encode())
    log.info("sealed run %s as partial: %s", run_dir.name, reason)


def follow(run_dir: Path, offset: int) -> dict[str, Any]:
    """Copy progress lines from byte `offset` to standard output until the run ends.

    When nothing new comes for HEARTBEAT_SECONDS a heartbeat line goes out, so
    a follower whose connection is gone finds out (its write fails) and ends.
    """
    path = run_dir / PROGRESS
    last_write = time.monotonic()
    while True:
        current = status(run_dir)
        if current["state"] == "absent":
            return current
        with open(path, "rb") as stream:
            stream.seek(offset)
            for line in stream:
                if not line.endswith(b"\n"):
                    break  # half written: read it whole on the next look
                sys.stdout.buffer.write(line)
                offset += len(line)
                last_write = time.monotonic()
        if time.monotonic() - last_write > HEARTBEAT_SECONDS:
            sys.stdout.buffer.write(HEARTBEAT)
            last_write = time.monotonic()
        sys.stdout.buffer.flush()
        if current["state"] != "running":
            return {**current, "offset": offset}
        time.sleep(POLL_SECONDS)


__all__ = ["LOG", "RESULTS"]
