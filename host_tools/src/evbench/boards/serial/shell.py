"""A predictable shell on a console, and exact command results through it.

After login the shell is made predictable: a unique prompt, no line editing
(so no bracketed paste), no history, no echo, a wide terminal, and kernel
messages quietened on the console where the user may do so. Everything is
restored on close (or the session logs out, when evbench logged in).
Commands go out base64-encoded (so no byte of them can act as a terminal
control character) and come back as checksummed frames (frames.py).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import math
import re
import shlex
from collections.abc import Callable

from evbench.boards.base import shown
from evbench.boards.serial import frames
from evbench.boards.serial.frames import FileState, Frame, Reply
from evbench.boards.serial.link import ConsoleLink, Deadline
from evbench.boards.serial.login import LoginStrategy, shows_login

#: A terminal's input line holds 4095 bytes; commands stay well inside it.
MAX_COMMAND = 2048
#: How often one frame that a noisy line spoiled (a chunk, a description) is asked for again.
MAX_RETRIES = 8
#: Chunks asked for again in one shell line (about 80 bytes of the line each).
REPAIR_BATCH = 40
#: With the command done, a line that stays silent this long has failed.
SILENCE = 6.0
#: After a login: how long the shell may take to run its first command, and how
#: long each ask waits for the answer before asking again.
READY_TIMEOUT = 30.0
READY_ASK_AGAIN = 2.0
#: Each set-up line's prompt: how long to wait, and how often to ask for it.
SET_UP_WAIT = 3.0
SET_UP_ASKS = 3
#: How long a sync waits for its answer before asking again.
SYNC_AGAIN = 3.0
NEEDS = re.compile(rb"evbench-needs:([a-z0-9]+)")
#: The console's last bytes a LoginWatch looks at: a prompt and the kernel lines after it.
WATCHED = 4096
TOOLS = ("base64", "sha256sum", "dd", "cut", "tr", "wc", "mktemp", "cat")

Progress = Callable[[int, int], None]


def _repair_parts(tag: str, wanted: list[tuple[str, int]], paths: dict[str, str]) -> list[str]:
    """The requests for the first of the `wanted` chunks: at most REPAIR_BATCH, and no more
    than one command line holds (MAX_COMMAND: a long path makes each request longer, and a
    line past the terminal's 4095 bytes is cut, its requests lost)."""
    parts: list[str] = []
    length = len(f" __evb_f {tag} E\r")
    for name, index in wanted[:REPAIR_BATCH]:
        part = f"__evb_x {tag} {name} {paths[name]} {index} {index + 1};"
        if parts and length + len(part) + 1 > MAX_COMMAND:
            break
        parts.append(part)
        length += len(part) + 1
    return parts


log = logging.getLogger(__name__)


class LoginWatch:
    """Notices getty asking again mid-session (the board rebooted, or its shell died): the
    line gone quiet on a login or password prompt. A request typed there is only a user
    name, and its answer never comes: ConnectionLost instead, so a reconnect logs in again."""

    def __init__(self, link: ConsoleLink) -> None:
        self.link = link
        # Unread lines may hold the prompt: it came while no request was reading.
        self.recent = bytes(link.buffer[-WATCHED:])

    def saw(self, came: bytes) -> None:
        """After each read, with what it brought (nothing: the line is quiet)."""
        if came:
            self.recent = (self.recent + came)[-WATCHED:]
        elif shows_login(self.recent):
            raise self.link.lost(f"{self.link.address.url} shows a login prompt (rebooted?)")


class ShellSession:
    """A logged-in, predictable shell on one console line."""

    def __init__(self, link: ConsoleLink, login: LoginStrategy) -> None:
        self.link = link
        self.login = login
        self.prompt_tag = frames.new_tag()
        #: The shell prints it after every request: it ends one whose end frame was spoiled.
        self.prompt = f"evb-{self.prompt_tag}> ".encode()
        #: Frames spoiled on the line and asked for again (reported in the transcript).
        self.retried = 0

    # -- opening and closing -------------------------------------------------

    def open(self) -> None:
        self.login.open_shell()
        self._wait_until_ready(Deadline(READY_TIMEOUT))
        # Save what we change, then change it; line editing off first, so the
        # definitions that follow are read as plain lines. One line at a time,
        # each after the prompt of the one before: typed-ahead lines can be
        # garbled while the terminal switches out of line editing (seen on an
        # emulated board, whose UART delivers a burst at once).
        self._set_up(
            b"__evb_o=$(set +o); __evb_q=$(stty -g 2>/dev/null); __evb_ps1=$PS1;"
            b" set +o emacs +o vi +o history 2>/dev/null; stty -echo -ixon cols 1000 2>/dev/null;"
            b" unset PROMPT_COMMAND; PS2=''; PS1=\"$(printf 'evb-%s> ' "
            + self.prompt_tag.encode()
            + b')"; export PAGER=cat SYSTEMD_PAGER=cat HISTFILE=/dev/null\r'
        )
        self._set_up(
            b"__evb_k=$(cut -f1 /proc/sys/kernel/printk 2>/dev/null);"
            b" dmesg -n 1 2>/dev/null && __evb_kq=1\r"
        )
        for definition in frames.BOARD_FUNCTIONS:
            self._set_up(definition.encode("ascii") + b"\r")
        self.sync(timeout=15.0, first=True)
        log.info("shell ready on %s (prompt marker evb-%s)", self.link.address.url, self.prompt_tag)

    def _set_up(self, line: bytes) -> None:
        """Send one set-up line and wait for the prompt that follows it.

        A kernel line can break the prompt's text; then an empty line asks
        for a new prompt (the set-up line itself is not sent twice). Should the
        prompt still not come, the sync that ends `open` tells what is wrong.
        """
        prompt = re.compile(re.escape(self.prompt))
        self.link.write(line)
        for _ in range(SET_UP_ASKS):
            if self.link.expect(prompt, Deadline(SET_UP_WAIT)):
                return
            self.link.write(b"\r")

    def _wait_until_ready(self, deadline: Deadline) -> None:
        """Ask until the shell runs a command, before sending the set-up lines.

        Right after a login the terminal is still being set up (login, then the
        shell's profile); lines typed ahead then can be flushed or garbled, as
        seen on an emulated board whose login takes seconds.
        """
        tag = frames.new_tag()
        # The echo of the typed line shows "%s" between the halves: only the output matches.
        answer = re.compile(b"evb-ready-" + tag.encode())
        probe = f"printf 'evb-ready-%s\\n' {tag}\r".encode()
        while not deadline.expired:
            self.link.write(probe)
            if self.link.expect(answer, Deadline(min(READY_ASK_AGAIN, deadline.remaining))):
                return
        raise self.link.error(
            f"the shell on {self.link.address.url} did not run a command after logging in"
            f" (within {deadline.seconds:.0f} s)",
            hint="is it a POSIX shell? look with `evbench console`",
        )

    def sync(self, timeout: float, first: bool = False) -> None:
        """Wait until the shell answers a fresh tag: everything before it is done."""
        tag = frames.new_tag()
        checks = " ".join(TOOLS)
        line = (
            f"for __evb_m in {checks}; do command -v $__evb_m >/dev/null"
            f" || printf 'evbench-needs:%s\\n' $__evb_m; done; __evb_f {tag} Y\r"
        ).encode()
        deadline = Deadline(timeout)
        missing: set[str] = set()
        again = Deadline(0)
        watch = LoginWatch(self.link)
        while not deadline.expired:
            if again.expired:
                # The same question again: a kernel line may have spoiled the answer.
                self.link.write(line)
                again = Deadline(SYNC_AGAIN)
            watch.saw(self.link.read_some(deadline))
            missing.update(name.decode() for name in NEEDS.findall(self.link.buffer))
            if any(frame.kind == "Y" for frame in frames.take_frames(self.link.buffer, tag)):
                return
        if missing:
            raise self.link.error(
                f"the board's shell lacks {', '.join(sorted(missing))}, which evbench needs"
                " on a console"
            )
        what = "after logging in" if first else "after stopping the command"
        raise self.link.error(
            f"the shell on {self.link.address.url} did not answer {what} (within {timeout:.0f} s)",
            hint="is it a POSIX shell? look with `evbench console`",
        )

    def close(self) -> None:
        """Restore the console (or log out), then release the line."""
        try:
            restore = (
                b'[ -n "$__evb_kq" ] && dmesg -n "$__evb_k" 2>/dev/null;'
                b' rm -rf "$__evb_d"; stty "$__evb_q" 2>/dev/null;'
                b' PS1=$__evb_ps1; eval "$__evb_o"\r'
            )
            self.link.write(b"\x03" + restore)
            if self.login.logged_in:
                self.link.write(b"exit\r")
            self.link.quiet_for(0.3, Deadline(2.0))
        except Exception as error:  # closing must not hide the error that made us close
            self.link.transcript.note(f"restoring the console failed: {error}")
        finally:
            self.link.close()

    # -- requests --------------------------------------------------------------

    def _command_line(self, function: str, tag: str, *arguments: str) -> bytes:
        line = " ".join((function, tag, *arguments)).encode("ascii") + b"\r"
        if len(line) > 4000:
            raise ValueError("request longer than a terminal line")
        return line

    def collect(
        self,
        tag: str,
        reply: Reply,
        deadline: Deadline,
        started: Callable[[Reply], bool] = lambda reply: True,
        on_frame: Callable[[Frame], None] | None = None,
    ) -> bool:
        """Add `tag`'s frames to `reply` until its end frame; False if it never came.

        A kernel line can spoil the end frame itself, and keeps the line busy
        meanwhile; so the request also counts as answered when the shell's
        unique prompt follows frames of this tag, and as silent when none of
        its frames came for SILENCE seconds (once `started(reply)` holds: a
        running command may be quiet). What is missing is asked for again. A login
        prompt instead (LoginWatch) is ConnectionLost.
        """
        quiet = Deadline(SILENCE)
        reader = frames.FrameReader(self.link.buffer, (tag,), self.prompt)
        watch = LoginWatch(self.link)
        while not deadline.expired:
            watch.saw(self.link.read_some(deadline))
            for frame in reader.take():
                quiet = Deadline(SILENCE)
                try:
                    reply.add(frame)
                except ValueError as error:
                    raise self.link.error(str(error)) from error
                if on_frame:
                    on_frame(frame)
                if frame.kind == "E":
                    return True
            if reader.prompt_after:
                return False
            if started(reply) and quiet.expired:
                return False
        return False

    def request(self, line: bytes, tag: str, reply: Reply, deadline: Deadline) -> bool:
        """Send `line` and gather its frames; False if not one byte came back (a dead line)."""
        before = self.link.received
        self.link.write(line)
        self.collect(tag, reply, deadline)
        return self.link.received > before

    def repair(
        self,
        reply: Reply,
        paths: dict[str, str],
        deadline: Deadline,
        describe: Callable[[str], bytes],
        need_status: bool = True,
    ) -> None:
        """Ask again for the status, descriptions and chunks that the line spoiled.

        `paths` maps each file's frame name to its shell path; `describe(tag)`
        is the request that sends the status and descriptions again.

        The bound is per chunk, as for an upload: a large file on a slightly noisy
        line needs many rounds (it once stopped after 8 rounds, 320 chunks in all),
        but a chunk the line spoils MAX_RETRIES times over is given up.
        """
        descriptions = 0
        asked: dict[tuple[str, int], int] = {}
        while not deadline.expired:
            described = (reply.files.get(name) for name in paths)
            if (need_status and reply.status is None) or any(
                s is None or s.size is None for s in described
            ):
                if descriptions == MAX_RETRIES:
                    return
                descriptions += 1
                self.retried += 1
                tag = frames.new_tag()
                if not self.request(describe(tag), tag, reply, deadline):
                    return
                continue
            wanted = [
                (name, index)
                for name, state in reply.files.items()
                if name in paths
                for index in state.missing()
            ]
            tag = frames.new_tag()
            parts = _repair_parts(tag, wanted, paths)
            batch = wanted[: len(parts)]
            if not batch or any(asked.get(chunk, 0) == MAX_RETRIES for chunk in batch):
                return
            for chunk in batch:
                asked[chunk] = asked.get(chunk, 0) + 1
            self.retried += len(batch)
            said = f"asking again for {len(batch)} of {len(wanted)} spoiled chunk(s)"
            self.link.transcript.note(said)
            log.debug(said)
            line = (" ".join(parts) + f" __evb_f {tag} E\r").encode("ascii")
            if not self.request(line, tag, reply, deadline):
                return

    def fetch(
        self, path: str, deadline: Deadline, on_frame: Callable[[Frame], None] | None = None
    ) -> Reply:
        """A file on the board (`path` as the shell should read it) as chunks, repaired.

        The reply's file "f" has size -1 when the board cannot read it.
        """
        tag = frames.new_tag()
        reply = Reply()
        self.link.write(
            f"__evb_s {tag} f {path}; __evb_x {tag} f {path} 0 999999; __evb_f {tag} E\r".encode()
        )
        finished = self.collect(tag, reply, deadline, on_frame=on_frame)
        state = reply.files.get("f")
        if state is not None and state.size == -1:
            return reply
        if not finished or state is None or state.size is None or state.missing():
            self.repair(
                reply,
                {"f": path},
                deadline,
                lambda again: f"__evb_s {again} f {path}; __evb_f {again} E\r".encode(),
                need_status=False,
            )
        return reply

    def describe(self, path: str, deadline: Deadline) -> FileState | None:
        """Size and SHA-256 of a file on the board (size -1: unreadable), asked until they come."""
        for _ in range(MAX_RETRIES):
            tag = frames.new_tag()
            reply = Reply()
            line = f"__evb_s {tag} f {path}; __evb_f {tag} E\r".encode()
            alive = self.request(line, tag, reply, deadline)
            state = reply.files.get("f")
            if state is not None and state.size is not None:
                return state
            if not alive or deadline.expired:
                break
            self.retried += 1
        return None

    def encode_command(self, command: str) -> str:
        raw = command.encode("utf-8", "surrogateescape")
        if len(raw) > MAX_COMMAND:
            raise self.link.error(
                f"command of {len(raw)} bytes is too long for a console line"
                f" (at most {MAX_COMMAND})",
                hint="put a script on the board and run that",
            )
        return base64.b64encode(raw).decode("ascii")

    def interrupt_and_resync(self) -> None:
        self.link.transcript.note("interrupting the command with Ctrl-C")
        log.debug("interrupting the command with Ctrl-C")
        self.link.write(b"\x03")
        self.link.quiet_for(0.3, Deadline(2.0))
        self.link.write(b"\r")
        self.sync(timeout=10.0)

    def run(self, command: str, timeout: float, stdin_path: str = "") -> tuple[int, bytes, bytes]:
        """Exit status, standard output and standard error of `command`, exactly."""
        tag = frames.new_tag()
        line = self._command_line(
            "__evb_r", tag, self.encode_command(command), shlex.quote(stdin_path), "999999"
        )
        reply = Reply()
        self.link.write(line)
        finished = self.collect(tag, reply, Deadline(timeout), started=_command_done)
        if not _command_done(reply):
            self.interrupt_and_resync()
            raise self.link.error(
                f"the command did not return within {timeout:.0f} s and was interrupted:"
                f" {command[:80]!r}",
                hint="give it more time, or check that it does not wait for input",
            )
        paths = {"o": '"$__evb_d/o"', "e": '"$__evb_d/e"'}
        # Each round of asking again may have to wait out the silence limit once (the
        # line can spoil every frame of its answer, the end frame too), so the budget
        # holds every round's; a line that stays silent still ends the first round.
        transfer = Deadline(MAX_RETRIES * (self.transfer_seconds(reply) + SILENCE))
        if not finished or reply.status is None or _incomplete(reply):
            self.repair(reply, paths, transfer, lambda tag: self._command_line("__evb_m", tag, "0"))
        stdout, stderr = self.verified(reply, "o"), self.verified(reply, "e")
        log.debug(
            "command %s: %s -> exit status %s, %d bytes out, %d bytes err in %d chunks",
            tag,
            shown(command),
            reply.status,
            len(stdout),
            len(stderr),
            sum(state.count for state in reply.files.values()),
        )
        return reply.status if reply.status is not None else -1, stdout, stderr

    def transfer_seconds(self, reply: Reply) -> float:
        """How long the files described so far take over the line as base64."""
        size = sum(max(state.size or 0, 0) for state in reply.files.values())
        return estimate_seconds(size, self.link.address.baud)

    def verified(self, reply: Reply, name: str) -> bytes:
        state = reply.files.get(name)
        if state is None or state.size is None or state.missing():
            have = 0 if state is None else len(state.chunks)
            want = "?" if state is None else state.count
            raise self.link.error(
                f"the line went silent or stayed too noisy: {have} of {want} chunks came back",
                hint="check the cable; kernel messages can be quietened with `dmesg -n 1`",
            )
        data = state.data()
        if len(data) != state.size or hashlib.sha256(data).hexdigest() != state.sha256:
            raise self.link.error(f"the data from the board failed its SHA-256 check ({name})")
        return data


def estimate_seconds(size: int, baud: int) -> float:
    """Seconds to move `size` bytes as base64 frames (8N1: 10 bits a byte on the wire)."""
    wire = size * 4 / 3 * 1.06 + 60 * math.ceil(size / frames.CHUNK)
    return wire / (baud / 10)


def _command_done(reply: Reply) -> bool:
    return reply.status is not None or bool(reply.files) or reply.ended


def _incomplete(reply: Reply) -> bool:
    return any(state.size is None or state.missing() for state in reply.files.values()) or (
        set(reply.files) != {"o", "e"}
    )
