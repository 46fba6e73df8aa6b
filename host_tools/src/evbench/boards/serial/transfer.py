"""Files over the console line: base64 in checksummed chunks, spoiled chunks asked for again.

A file comes back verified against its SHA-256 (computed on the board) or
not at all: nothing unverified is ever written where the caller asked.
Progress reports the bytes so far, the total and an estimate of the time left.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evbench.boards.serial import frames
from evbench.boards.serial.frames import Frame
from evbench.boards.serial.link import Deadline
from evbench.boards.serial.shell import MAX_RETRIES, SILENCE, ShellSession, estimate_seconds
from evbench_core.results import write_atomic

#: (bytes so far, total bytes, seconds left by the estimate)
TransferProgress = Callable[[int, int, float], None]
#: A fetch may take its estimate at the line's baud rate twice over (the first pass, then
#: what a noisy line spoiled) and this much more: at a high baud rate the board's shell,
#: not the line, sets the pace, and a small file must not be hurried either.
FETCH_MARGIN = 3600.0
#: Upload chunks sent as one shell line: three chunks of about 1 KiB of base64 fit
#: one terminal input line (at most 4095 bytes).
WINDOW = 3
MAX_LINE = 3900
#: Upload lines sent before the oldest one's acknowledgements are in. The second
#: line crosses the wire while the shell runs the first, so the line does not idle
#: between them; never more, because the board's terminal holds whole lines waiting
#: for the shell only while one complete line is in it (a second would be cut).
LINES_IN_FLIGHT = 2
#: How long the acknowledgements of one upload line may take.
LINE_WAIT = 30.0

log = logging.getLogger(__name__)


def _quoted(session: ShellSession, path: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in path) or len(path) > 1024:
        raise session.link.error(f"path {path!r} cannot be sent over a console line")
    return shlex.quote(path)


class _FetchProgress:
    """Turns the frames of one fetch into progress reports with the time left.

    The total is the size the board described before the fetch (its S frame may be the one
    the line spoils); chunks asked for again come outside the first pass, so the end is
    reported once the file is verified, and a line left at "n/N" is always finished.
    """

    def __init__(self, baud: int, total: int, progress: TransferProgress) -> None:
        self._baud, self._total, self._progress = baud, total, progress
        self._started = time.monotonic()
        self._received = 0
        self._ended = False

    def on_frame(self, frame: Frame) -> None:
        if frame.kind == "S" and len(frame.fields) == 3 and frame.fields[1].isdigit():
            self._total = self._total or int(frame.fields[1])
            return
        if frame.kind != "D" or len(frame.fields) != 3 or self._total <= 0 or self._ended:
            return
        self._received += len(base64.b64decode(frame.fields[2]))
        done = min(self._received, self._total)
        remaining = self._total - done
        elapsed = time.monotonic() - self._started
        rate = done / elapsed if done and elapsed > 0.5 else None
        left = remaining / rate if rate else estimate_seconds(remaining, self._baud)
        self._ended = done >= self._total
        self._progress(done, self._total, left)

    def finish(self, size: int) -> None:
        if not self._ended:
            self._ended = True
            self._progress(size, size, 0.0)


def read_file(
    session: ShellSession, path: str, what: str, progress: TransferProgress | None = None
) -> bytes:
    """The bytes of `path` (as the shell should read it) on the board, verified.

    The file's size comes first: the time the copy may take follows from it (a 64 MiB
    file, the most a console moves, takes hours at 115200 baud; a command's few lines
    of output, seconds).
    """
    baud = session.link.address.baud
    described = session.describe(path, Deadline(60.0))
    size = max(described.size or 0, 0) if described is not None else 0
    deadline = Deadline(FETCH_MARGIN + 2 * estimate_seconds(size, baud))
    shown = _FetchProgress(baud, size, progress) if progress else None
    reply = session.fetch(path, deadline, shown.on_frame if shown else None)
    state = reply.files.get("f")
    if state is not None and state.size == -1:
        raise session.link.error(f"{what}: no readable file on the board")
    if deadline.expired and (state is None or state.size is None or state.missing()):
        session.interrupt_and_resync()  # the board may still be sending chunks
        raise session.link.error(
            f"fetching {what} ran out of time: {deadline.seconds:.0f} s were allowed"
            f" for its {size} bytes at {baud} baud",
            hint="is the line slower than its baud rate? the transcript shows how far it came",
        )
    data = session.verified(reply, "f")
    if shown:
        shown.finish(len(data))
    log.debug("read %s: %d bytes in %d chunks, verified", what, len(data), reply.files["f"].count)
    return data


def get_file(
    session: ShellSession, remote: str, local: Path, progress: TransferProgress | None = None
) -> int:
    """Copy `remote` from the board to `local`, verified; the number of bytes."""
    data = read_file(session, _quoted(session, remote), repr(remote), progress)
    write_atomic(local, data)
    log.debug("got %s -> %s", remote, local)
    return len(data)


def put_file(
    session: ShellSession, local: Path, remote: str, progress: TransferProgress | None = None
) -> int:
    """Copy `local` to `remote` on the board, each chunk acknowledged with its SHA-256."""
    data = local.read_bytes()
    path = _quoted(session, remote)
    part = shlex.quote(remote + ".evbench-part")
    status, _out, err = session.run(f": > {part}", timeout=15.0)
    if status != 0:
        raise session.link.error(
            f"cannot write {remote!r} on the board: {err.decode(errors='replace')}"
        )
    chunks = [data[i : i + frames.CHUNK] for i in range(0, len(data), frames.CHUNK)]
    pending = list(range(len(chunks)))
    failures = dict.fromkeys(pending, 0)
    acknowledged: set[int] = set()
    started = time.monotonic()
    # As many chunks as fit one line with this path (three, unless the path is long).
    window = max(1, min(WINDOW, MAX_LINE // (len(part) + 4 * frames.CHUNK // 3 + 40)))
    in_flight: list[_UploadLine] = []
    while pending or in_flight:
        while pending and len(in_flight) < LINES_IN_FLIGHT:
            batch, pending = pending[:window], pending[window:]
            in_flight.append(_send_batch(session, part, batch, chunks))
        for line in _gather(session, in_flight, chunks):
            acknowledged |= line.acknowledged
            missed = [index for index in line.batch if index not in line.acknowledged]
            if missed:
                session.link.transcript.note(
                    f"upload chunks {missed} not acknowledged; sending again"
                )
                log.debug("upload chunks %s not acknowledged; sending again", missed)
            for index in missed:
                failures[index] += 1
                if failures[index] >= MAX_RETRIES:
                    raise session.link.error(
                        f"upload chunk {index} failed {MAX_RETRIES} times: the line is too noisy"
                    )
                session.retried += 1
                pending.insert(0, index)
        if progress:
            done = sum(len(chunks[i]) for i in acknowledged)
            rate = done / max(time.monotonic() - started, 1e-3)
            progress(done, len(data), (len(data) - done) / rate if rate else 0.0)
    status, _out, err = session.run(f"mv -f {part} {path}", timeout=15.0)
    if status != 0:
        raise session.link.error(
            f"cannot move the upload into {remote!r}: {err.decode(errors='replace')}"
        )
    state = session.describe(path, Deadline(60.0))
    if state is None or state.size != len(data) or state.sha256 != hashlib.sha256(data).hexdigest():
        raise session.link.error(f"{remote!r} on the board does not match {local} after the upload")
    resent = sum(failures.values())
    log.debug(
        "put %s -> %s: %d bytes in %d chunks (%d sent again), verified",
        local,
        remote,
        len(data),
        len(chunks),
        resent,
    )
    return len(data)


@dataclass
class _UploadLine:
    """One shell line of upload chunks, sent and waiting for its acknowledgements."""

    tag: str
    batch: list[int]
    deadline: Deadline
    acknowledged: set[int] = field(default_factory=set)
    ended: bool = False


def _send_batch(
    session: ShellSession, part: str, batch: list[int], chunks: list[bytes]
) -> _UploadLine:
    """Send a few chunks as one shell line (it must fit the terminal's 4095-byte input
    line, and one line gets one prompt back), each answered with its SHA-256 on the
    board, then an end frame."""
    tag = frames.new_tag()
    commands = []
    for index in batch:
        encoded = base64.b64encode(chunks[index]).decode("ascii")
        commands.append(f"__evb_p {tag} {part} {index} {encoded}")
    line = "; ".join([*commands, f"__evb_f {tag} E"])
    session.link.write(line.encode("ascii") + b"\r")
    return _UploadLine(tag, batch, Deadline(LINE_WAIT))


def _gather(
    session: ShellSession, lines: list[_UploadLine], chunks: list[bytes]
) -> list[_UploadLine]:
    """Read acknowledgements until the oldest line in flight has ended; the lines that
    ended, taken out of `lines` (the oldest always: silent for SILENCE seconds, or out
    of time, it has failed).

    The shell runs the lines in turn, so a frame of a later line ends every line
    before it. A kernel line can spoil a line's end frame; then the shell's unique
    prompt after the oldest line's frames ends it (as in ShellSession.collect).
    """
    oldest = lines[0]
    quiet = Deadline(SILENCE)
    tags = tuple(line.tag for line in lines)
    reader = frames.FrameReader(session.link.buffer, tags, session.prompt)
    while not oldest.deadline.expired and not quiet.expired:
        session.link.read_some(oldest.deadline)
        for frame in reader.take():
            quiet = Deadline(SILENCE)
            position = next(i for i, line in enumerate(lines) if line.tag == frame.tag)
            for earlier in lines[:position]:
                earlier.ended = True
            line = lines[position]
            if frame.kind == "E":
                line.ended = True
            elif frame.kind == "A" and _acknowledges(frame, line.batch, chunks):
                line.acknowledged.add(int(frame.fields[0]))
        # A prompt after any line's frames: the lines before that one ended already.
        if oldest.ended or reader.prompt_after:
            break
    oldest.ended = True
    ended = [line for line in lines if line.ended]
    lines[:] = [line for line in lines if not line.ended]
    return ended


def _acknowledges(frame: Frame, batch: list[int], chunks: list[bytes]) -> bool:
    """Whether an A frame names a chunk of `batch` with that chunk's SHA-256."""
    return (
        len(frame.fields) == 2
        and frame.fields[0].isdigit()
        and int(frame.fields[0]) in batch
        and frame.fields[1] == hashlib.sha256(chunks[int(frame.fields[0])]).hexdigest()
    )
