"""A run on a remote board: started detached, followed, fetched and verified.

Written against the Board protocol only, so every transport (SSH, serial
console) shares it. The run lives on the board under WORK_DIR/runs/RUN_ID
(see evbench_agent.run.detached): it survives the connection, and when the
connection drops the host reconnects with backoff and picks the run up by its
id, during the run or during the fetch. Fetching resumes file by file: a file
already fetched and matching SHA256SUMS is kept, never overwritten.
"""

from __future__ import annotations

import errno
import functools
import json
import logging
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from evbench.boards.base import Board, ConnectionLost
from evbench_agent.run import detached
from evbench_core import results, write_failures
from evbench_core.errors import CheckFailed, EvbenchError, ExitCode, FormatError, UserError

T = TypeVar("T")

COMMAND_TIMEOUT = 120.0
#: How long the host keeps trying to reconnect after one drop.
RECONNECT_DEADLINE = 300.0
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 10.0
#: `follow` ends by itself when the run ends; this only bounds a stuck channel.
FOLLOW_EXIT_TIMEOUT = 60.0
#: After an interrupt: how long the run on the board may take to seal itself.
STOP_TIMEOUT = 60.0
STOP_POLL = 0.3
#: One command of the stopping (the board is answering: it was a moment ago).
STOP_COMMAND_TIMEOUT = 20.0


log = logging.getLogger(__name__)


class RemoteRun:
    """One run on `board`, by id: start, follow, seal and fetch, resuming after drops."""

    def __init__(
        self,
        board: Board,
        agent: Sequence[str],
        run_id: str,
        reconnect_deadline: float = RECONNECT_DEADLINE,
    ) -> None:
        self.board = board
        self.agent = list(agent)
        self.run_id = run_id
        self.run_dir = f"{board.work_dir}/runs/{run_id}"
        self.results_dir = f"{self.run_dir}/{detached.RESULTS}"
        self.reconnect_deadline = reconnect_deadline
        self.offset = 0  # bytes of progress.jsonl already shown

    # -- resilience -------------------------------------------------------

    def resilient(self, operation: Callable[[], T]) -> T:
        """Run `operation`; after a dropped connection reconnect with backoff and run it again."""
        while True:
            try:
                return operation()
            except ConnectionLost as error:
                log.warning("%s; reconnecting", error)
                self._reconnect()

    def _reconnect(self) -> None:
        """Reconnect with backoff: one line for each attempt that fails, one on success."""
        deadline = time.monotonic() + self.reconnect_deadline
        delay = FIRST_BACKOFF
        attempt = 0
        while True:
            time.sleep(delay)
            attempt += 1
            try:
                self.board.reconnect()
                log.warning("reconnected to %s (attempt %d)", self.board.url, attempt)
                return
            except ConnectionLost as error:
                log.warning(
                    "reconnect attempt %d failed (%s); next in %.0f s",
                    attempt,
                    _first_line(str(error)),
                    min(delay * 2, MAX_BACKOFF),
                )
                if time.monotonic() + delay > deadline:
                    raise ConnectionLost(
                        f"lost {self.board.url} and could not reconnect within "
                        f"{self.reconnect_deadline:.0f} s ({error})",
                        hint="the run goes on on the board: collect it later with "
                        f"`{fetch_command(self.board.url, self.run_id)}`",
                    ) from None
                delay = min(delay * 2, MAX_BACKOFF)

    # -- agent commands ---------------------------------------------------

    def _agent_status(self, command: str, *argv: str) -> dict[str, Any]:
        argv = (*self.agent, command, "--run-dir", self.run_dir, *argv)
        result = self.board.run(argv, COMMAND_TIMEOUT)
        if result.returncode != 0:
            lines = result.stderr.decode(errors="replace").strip().splitlines()
            message = lines[0].removeprefix("evbench-agent: error: ") if lines else "no output"
            error = UserError(f"on {self.board.url}: {message}")
            hint = next((line for line in lines if "hint:" in line), None)
            error.hint = hint.split("hint:", 1)[1].strip() if hint else None
            raise error
        return _last_status(result.stdout.decode(errors="replace").splitlines())

    def status(self) -> dict[str, Any]:
        return _with_state(self.resilient(lambda: self._agent_status("status")), self.board.url)

    def start(self, run_argv: Sequence[str]) -> None:
        """Launch the run detached; a launch cut off by a drop is not repeated."""
        log.info("launching run %s on %s in %s", self.run_id, self.board.url, self.run_dir)
        try:
            self._agent_status("launch", "--", *run_argv)
        except ConnectionLost as error:
            log.warning("%s; reconnecting", error)
            self._reconnect()
            if self.status()["state"] == "absent":
                self.resilient(lambda: self._agent_status("launch", "--", *run_argv))

    def follow(self, show: Callable[[str], None]) -> dict[str, Any]:
        """Show the run's progress lines until it ends; return its final status."""
        return self.resilient(lambda: self._follow_once(show))

    def _follow_once(self, show: Callable[[str], None]) -> dict[str, Any]:
        argv = [*self.agent, "follow", "--run-dir", self.run_dir, "--offset", str(self.offset)]
        log.debug("following run %s from byte %d of its progress", self.run_id, self.offset)
        command = self.board.stream(argv)
        final = None
        try:
            for line in command.lines():
                event = _parse(line) or {}
                if event.get("event") == "heartbeat":
                    continue
                if event.get("event") == "status" and _well_formed(event):
                    final = event
                    continue
                self.offset += len(line.encode()) + 1
                show(line)
            code = command.wait(FOLLOW_EXIT_TIMEOUT)
        except KeyboardInterrupt:
            # Ctrl-C ends the following here; stopping the run is stop()'s. A console's
            # one shell would otherwise still be busy with `follow`, and stop()'s requests
            # typed behind it waited out their timeout (then were thrown away).
            try:
                command.interrupt()
            except EvbenchError as error:
                log.warning("could not end following run %s: %s", self.run_id, error)
            raise
        if final is None:
            if code == -1:  # no exit status came back: the channel was cut
                raise ConnectionLost(f"following the run on {self.board.url} stopped short")
            raise EvbenchError(
                f"following the run on {self.board.url} failed (exit {code}): "
                f"{command.stderr().strip()[-300:] or 'no output'}"
            )
        if _with_state(final, self.board.url)["state"] == "absent":
            raise UserError(f"the run {self.run_id} vanished from {self.board.url}")
        return final

    def stop(self) -> dict[str, Any]:
        """Interrupt the run on the board as Ctrl-C does there (SIGINT: it keeps what it
        measured as a partial run) and wait until it has sealed itself; its final status."""
        current = _with_state(self._agent_status("status"), self.board.url)
        pid = current.get("pid")
        if current["state"] == "running" and isinstance(pid, int) and pid > 1:
            self.board.run(["kill", "-INT", str(pid)], STOP_COMMAND_TIMEOUT)
        deadline = time.monotonic() + STOP_TIMEOUT
        while current["state"] == "running":
            if time.monotonic() > deadline:
                raise UserError(f"the run {self.run_id} did not stop within {STOP_TIMEOUT:.0f} s")
            time.sleep(STOP_POLL)
            current = _with_state(self._agent_status("status"), self.board.url)
        return self.settle(current)

    def settle(self, current: dict[str, Any]) -> dict[str, Any]:
        """A run that stopped without ending (reboot, killed agent): seal it as partial."""
        if current["state"] == "stopped":
            log.warning("%s: keeping what exists on the board as a partial run", current["reason"])
            current = self.resilient(lambda: self._agent_status("seal"))
        return current

    # -- fetch ------------------------------------------------------------

    def fetch(self, out: Path, final: dict[str, Any]) -> None:
        """Copy the results directory of the run that ended with status `final` (as follow,
        stop or settle gave it) to `out`, each file verified against SHA256SUMS.

        A run that failed on the board (any exit but 0, 2, 3, 4, 130) is fetched as far
        as it has sealed results, which are then partial (exit 4); with none, its failure
        is a failed check of the board's run (exit 3): neither is a bug of this command,
        which exit 1 would say."""
        code = exit_code(final)
        if code not in (ExitCode.OK, ExitCode.PARTIAL, ExitCode.INTERRUPTED):
            said_log = self.resilient(lambda: self.read_remote(detached.LOG, out, in_results=False))
            tail = said_log.decode(errors="replace").strip().splitlines()[-2:] or ["no output"]
            said = f"the run {self.run_id} failed on {self.board.url} (exit {code}): " + (
                " / ".join(tail)
            )
            sealed = code not in (ExitCode.USAGE, ExitCode.CHECK_FAILED) and self.resilient(
                lambda: self.has_remote(results.CHECKSUMS, out)
            )
            if not sealed:
                error: EvbenchError = CheckFailed(said)
                if code == ExitCode.USAGE:
                    error = UserError(said)
                raise error
            log.warning("%s; fetching what it measured as partial", said)
        log.info("fetching run %s from %s into %s", self.run_id, self.board.url, out)
        listing = self.resilient(
            lambda: self.read_remote(results.CHECKSUMS, out, cap=results.MAX_DOCUMENT)
        )
        # The manifest first: a directory cut off later is recognisable as this run's.
        entries = sorted(
            results.parse_checksums(listing, self.board.url), key=lambda e: e[1] != results.MANIFEST
        )
        for digest, name in entries:
            self.resilient(functools.partial(self._fetch_file, name, digest, out))
        _place(out / results.CHECKSUMS, listing)
        log.info("fetched %d files from %s, each checked by SHA-256", len(entries), self.board.url)
        agent_log = self.resilient(lambda: self.read_remote(detached.LOG, out, in_results=False))
        if agent_log and not (out / detached.LOG).exists():
            results.write_atomic(out / detached.LOG, agent_log)
        # The marker says "complete" only when the board says so: never because a listing
        # names it (parse_checksums refuses that), never for a run that ended partial.
        if final.get("complete") and exit_code(final) == ExitCode.OK:
            marker = self.resilient(lambda: self.read_remote(results.COMPLETE, out))
            _place(out / results.COMPLETE, marker)

    def has_remote(self, name: str, out: Path) -> bool:
        """Whether the run's results directory holds `name` (a small file)."""
        try:
            self.read_remote(name, out, cap=results.MAX_DOCUMENT)
        except ConnectionLost:
            raise
        except (EvbenchError, OSError):
            return False
        return True

    def read_remote(
        self, name: str, out: Path, in_results: bool = True, cap: int | None = None
    ) -> bytes:
        """A small file of the run (listing, log, marker), through a temporary copy in `out`;
        with `cap`, a FormatError for one over `cap` bytes (a board's listing is read whole,
        capped as the results reader caps a local one)."""
        remote = f"{self.results_dir if in_results else self.run_dir}/{name}"
        part = out / f".{name}.part"
        try:
            self.board.get(remote, part)
            size = part.stat().st_size
            if cap is not None and size > cap:
                raise FormatError(
                    f"{name} from {self.board.url} is {size} bytes, over {cap} (no run's is)",
                    hint="the board's run is damaged; nothing was fetched",
                )
            return part.read_bytes()
        finally:
            part.unlink(missing_ok=True)

    def _fetch_file(self, name: str, digest: str, out: Path) -> None:
        """Copy one listed file, check its SHA-256, then move it in place: never over one,
        but for a manifest the host marked partial when a fetch stopped short."""
        target = out / name
        differs = CheckFailed(
            f"{target} exists and differs from the board's copy",
            hint="fetch into a new --out; evbench never overwrites fetched files",
        )
        if target.exists():
            if results.sha256_file(target) == digest:
                log.debug("%s: fetched before the drop, its SHA-256 matches", name)
                return  # fetched before the drop
            if name != results.MANIFEST:
                raise differs
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.parent / f".{target.name}.part"
        try:
            self.board.get(f"{self.results_dir}/{name}", part)
            actual = results.sha256_file(part)
            if actual != digest:
                raise CheckFailed(
                    f"checksum mismatch for {name} from {self.board.url}: got {actual[:16]}..., "
                    f"SHA256SUMS says {digest[:16]}...",
                    hint="the board's copy is damaged (check its storage); "
                    "nothing was written here",
                )
            # A manifest here already differs: only the host's own partial mark may be replaced.
            if target.exists() and not _marked_by_host(target, part):
                raise differs
            with open(part, "rb") as stream:
                os.fsync(stream.fileno())
            part.replace(target)
            log.debug("fetched %s (%d bytes, SHA-256 checked)", name, target.stat().st_size)
        finally:
            part.unlink(missing_ok=True)


#: What the host changes in a fetched manifest when it marks the fetch partial.
HOST_MARK = ("status", "reason")


def _mark_partial(manifest: Path, reason: str) -> None:
    """Mark a fetched manifest partial, saying why (the fetch stopped short here)."""
    document = results.read_document(manifest)
    document["status"] = "partial"
    document["reason"] = reason
    results.write_json(manifest, document)


def _marked_by_host(local: Path, board_copy: Path) -> bool:
    """Whether `local` is the board's manifest `board_copy` as _mark_partial left it (a fetch
    cut short): then the resumed fetch puts the board's own copy back."""
    try:
        mine, theirs = results.read_document(local), results.read_document(board_copy)
    except (OSError, EvbenchError):
        return False
    unmarked = {key: value for key, value in mine.items() if key not in HOST_MARK}
    return mine.get("status") == "partial" and unmarked == {
        key: value for key, value in theirs.items() if key not in HOST_MARK
    }


def _place(path: Path, data: bytes) -> None:
    if path.exists() and path.read_bytes() != data:
        raise CheckFailed(f"{path} exists and differs from the board's copy")
    results.write_atomic(path, data)


def _parse(line: str) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _last_status(lines: list[str]) -> dict[str, Any]:
    for line in reversed(lines):
        event = _parse(line)
        if event is not None and event.get("event") == "status" and _well_formed(event):
            return event
    raise EvbenchError(f"the agent answered without a status: {lines[-1:]}")


def _well_formed(status: dict[str, Any]) -> bool:
    """A status line as the agent writes it (the board's word is checked before it is used):
    `state` text when given (launch answers without one), `exit` a whole number when given."""
    exit_given = status.get("exit", 0)
    return isinstance(status.get("state", ""), str) and (
        isinstance(exit_given, int) and not isinstance(exit_given, bool)
    )


def _with_state(status: dict[str, Any], where: str) -> dict[str, Any]:
    if "state" not in status:
        raise EvbenchError(f"the agent on {where} answered a status without a state")
    return status


def fetch_command(board_url: str, run_id: str, out: Path | None = None) -> str:
    """The command that collects the run later (into `out`, resuming a fetch there), quoted
    to paste into a shell: a board URL's `&` would send the command to the background, its
    `?` is a glob."""
    where = ["--out", str(out)] if out is not None else []
    return shlex.join(["evbench", "fetch", "--board", board_url, run_id, *where])


def _first_line(text: str, limit: int = 200) -> str:
    return (text.strip().splitlines() or ["no reason given"])[0][:limit]


def _stop_interrupted(session: RemoteRun, board: Board, run_id: str) -> dict[str, Any]:
    """After Ctrl-C, SIGTERM or SIGHUP: stop the run on the board and keep it as partial.
    When the board cannot be told (gone, or a second Ctrl-C), the run goes on there."""
    from evbench.progress import notice

    notice(f"interrupted: stopping run {run_id} on {board.url}")
    try:
        return session.stop()
    except (EvbenchError, KeyboardInterrupt) as error:
        reason = "interrupted again" if isinstance(error, KeyboardInterrupt) else str(error)
        stopped = UserError(
            f"stopped following run {run_id}; it goes on on the board ({reason})",
            hint=f"collect it with `{fetch_command(board.url, run_id)}`",
        )
        stopped.exit_code = ExitCode.INTERRUPTED
        raise stopped from None


def exit_code(final: dict[str, Any]) -> int:
    """The agent's exit code for the run, as the local path would see it."""
    return int(final.get("exit", ExitCode.INTERNAL))


#: A local write failing with these is the host's disk (full, over quota, read-only),
#: never the board's copy being unreadable.
LOCAL_DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


class FetchCutShort(UserError):
    """The host's disk refused the fetch: what came is kept, marked partial (exit 4)."""

    def __init__(self, out: Path, reason: str) -> None:
        super().__init__(f"PARTIAL run ({reason}): partial results in {out}")
        self.reason = reason
        self.exit_code = ExitCode.PARTIAL


def _disk_error(error: BaseException) -> OSError | None:
    """The host-disk OSError behind a failed fetch (raised, or the cause of a UserError)."""
    for found in (error, error.__cause__):
        if isinstance(found, OSError) and found.errno in LOCAL_DISK_ERRORS:
            return found
    return None


def fetch_or_keep(session: RemoteRun, out: Path, final: dict[str, Any]) -> None:
    """`session.fetch(out, final)`; when the host's disk refuses it, the files already fetched
    stay and the manifest says partial and why (FetchCutShort, exit 4); with no manifest
    fetched, or no room even to say so, it is WriteFailed (exit 2). Interrupted, it is the
    same kept and marked, and exit 130 naming the command that resumes it. Never an internal
    error, never a manifest left saying what the board said of its own complete copy."""
    try:
        session.fetch(out, final)
    except KeyboardInterrupt:
        raise _fetch_interrupted(session, out) from None
    except (OSError, UserError) as error:
        cause = _disk_error(error)
        if cause is None:
            raise
        failed = write_failures.failure(out, cause)
        manifest = out / results.MANIFEST
        if not manifest.exists():
            raise failed from error
        reason = failed.args[0]  # "cannot write the results in OUT: No space left on device"
        try:
            _mark_partial(manifest, reason)
        except OSError as again:  # not even room for the manifest: say so, exit 2
            raise write_failures.failure(out, again) from error
        log.info("the fetch stopped: %s", reason)
        raise FetchCutShort(out, reason) from error


def _fetch_interrupted(session: RemoteRun, out: Path) -> UserError:
    """Ctrl-C (SIGTERM, SIGHUP) during the fetch: the files fetched stay, the manifest says
    partial and why (never "complete"), and the command that resumes the fetch is named."""
    reason = "interrupted during the fetch"
    manifest = out / results.MANIFEST
    if manifest.exists():
        try:
            _mark_partial(manifest, reason)
        except (OSError, EvbenchError) as error:
            log.warning("could not mark %s partial: %s", manifest, error)
    stopped = UserError(
        f"PARTIAL run ({reason}): partial results in {out}",
        hint=f"resume the fetch with `{fetch_command(session.board.url, session.run_id, out)}`",
    )
    stopped.exit_code = ExitCode.INTERRUPTED
    return stopped


def run_and_fetch(
    board: Board,
    agent: Sequence[str],
    run_id: str,
    run_argv_for: Callable[[str], list[str]],
    out: Path,
) -> tuple[int, str]:
    """Start the run detached, show its progress, fetch it; the agent's exit code and log.

    `run_argv_for(results_dir)` gives the agent's run arguments for the board's
    results directory. A run that failed before measuring is not fetched.
    """
    from evbench.progress import ProgressView, notice

    session = RemoteRun(board, agent, run_id)
    session.start(run_argv_for(session.results_dir))
    notice(f"run {run_id} started on {board.url}")
    try:
        with ProgressView(sys.stderr) as view:

            def show(line: str) -> None:
                if not view.feed(line):
                    print(line, file=sys.stderr)

            final = session.settle(session.follow(show))
    except KeyboardInterrupt:
        final = _stop_interrupted(session, board, run_id)
        status = exit_code(final)
        if status in (ExitCode.OK, ExitCode.PARTIAL, ExitCode.INTERRUPTED):
            fetch_or_keep(session, out, final)
        status = ExitCode.INTERRUPTED  # whatever the board said: the user stopped it
        log_path = out / detached.LOG
        return status, log_path.read_text(errors="replace") if log_path.exists() else ""
    status = exit_code(final)
    log.info("run %s on %s ended with exit %d", run_id, board.url, status)
    if status not in (ExitCode.OK, ExitCode.PARTIAL, ExitCode.INTERRUPTED):
        said = session.resilient(lambda: session.read_remote(detached.LOG, out, in_results=False))
        return status, said.decode(errors="replace")
    fetch_or_keep(session, out, final)
    log_path = out / detached.LOG
    return status, log_path.read_text(errors="replace") if log_path.exists() else ""
