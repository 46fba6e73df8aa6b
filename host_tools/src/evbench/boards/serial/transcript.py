"""Every byte of a console session, timestamped, with the password redacted.

One record a line: seconds since the session opened, the direction (`<` from
the board, `>` to the board) and the bytes as a Python bytes literal, so the
raw bytes come back exactly with `ast.literal_eval`. Each record is flushed
as it is written: a session that dies still leaves its transcript.

Redaction works on each direction's reassembled stream, not per read: bytes
that could begin a secret wait (unwritten) until the next read shows whether
they do, so a password split over many reads (a UART hands them over in any
split) never reaches the file. After the password is sent, what the board
echoes up to the next line break is recorded only as its byte count; the
lines after it ("Login incorrect", the prompt) stay as evidence. Every copy
is readable by the user alone (0600).
"""

from __future__ import annotations

import datetime
import logging
import os
import time
from pathlib import Path

FORMAT_LINE = "# evbench console transcript, version 1"
REDACTED = b"<password redacted>"
#: Where transcripts go when the command has no output directory of its own.
log = logging.getLogger(__name__)

DEFAULT_DIRECTORY = Path("results") / "console"
LINE_BREAKS = b"\r\n"
PRIVATE = 0o600


def default_path(label: str) -> Path:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    safe = "".join(c if c.isalnum() else "-" for c in label).strip("-")[-40:] or "console"
    return DEFAULT_DIRECTORY / f"{stamp}-{safe}.transcript"


def echo_placeholder(count: int) -> bytes:
    """What stands in the transcript for the board's echo after the password."""
    return f"<{count} bytes after the password withheld>".encode()


def _open_private(path: Path) -> int:
    """A file descriptor for writing `path` afresh, 0600 even when it existed."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, PRIVATE)
    os.fchmod(descriptor, PRIVATE)
    return descriptor


class _Redactor:
    """One direction's stream: secrets replaced, a possible start of one held back."""

    def __init__(self, secrets: list[bytes]) -> None:
        self._secrets = secrets
        self._held = b""
        #: After the password went out: bytes of echo counted (None: not counting).
        self.echo: int | None = None

    def _hold_from(self, data: bytes) -> int:
        """Where the longest tail of `data` that begins some secret starts (len: none)."""
        for start in range(max(0, len(data) - max(map(len, self._secrets), default=0)), len(data)):
            tail = data[start:]
            if any(secret.startswith(tail) for secret in self._secrets):
                return start
        return len(data)

    def feed(self, data: bytes) -> bytes:
        """What can be written now of what came so far."""
        out = b""
        if self.echo is not None:
            breaks = [i for i in (data.find(b) for b in (b"\r", b"\n")) if i >= 0]
            if not breaks:
                self.echo += len(data)
                return b""
            end = min(breaks)
            out, data = echo_placeholder(self.echo + end), data[end:]
            self.echo = None
        data = self._held + data
        for secret in self._secrets:
            data = data.replace(secret, REDACTED)
        cut = self._hold_from(data)
        self._held = data[cut:]
        return out + data[:cut]

    def drain(self) -> bytes:
        """The end of the session: what is held back, never a piece of a secret."""
        out = b""
        if self.echo is not None:
            out, self.echo = echo_placeholder(self.echo), None
        if self._held:
            out += (
                echo_placeholder(len(self._held))
                if any(secret.startswith(self._held) for secret in self._secrets)
                else self._held
            )
            self._held = b""
        return out


class Transcript:
    """An append-only record of one console session."""

    def __init__(self, path: Path, url: str) -> None:
        self.path = path
        self._secrets: list[bytes] = []
        self._streams = {"<": _Redactor(self._secrets), ">": _Redactor(self._secrets)}
        self._start = time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        # Only the user may read it: a console can show more than evbench asked for.
        self._file = os.fdopen(
            _open_private(path), "w", encoding="ascii", errors="backslashreplace"
        )
        opened = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        self._file.write(f"{FORMAT_LINE}\n# console {url}, opened {opened}\n")
        self._file.write("# seconds direction(< board, > host) bytes\n")
        self._file.flush()

    def add_secret(self, secret: bytes) -> None:
        """Never write these bytes, in either direction, however they are split."""
        if secret and secret not in self._secrets:
            self._secrets.append(secret)

    def _write(self, direction: str, data: bytes) -> None:
        if self._file.closed or not data:
            return
        elapsed = time.monotonic() - self._start
        self._file.write(f"{elapsed:.6f} {direction} {data!r}\n")
        self._file.flush()

    def _record(self, direction: str, data: bytes) -> None:
        self._write(direction, self._streams[direction].feed(data))

    def received(self, data: bytes) -> None:
        self._record("<", data)

    def sent(self, data: bytes) -> None:
        self._record(">", data)

    def sent_secret(self) -> None:
        """The password went out: record that it did, never what it was; the board's
        echo up to the next line break is counted, not kept."""
        self._write(">", self._streams[">"].drain() + REDACTED)
        self._streams["<"].echo = 0

    def note(self, text: str) -> None:
        """An evbench remark (what it was waiting for, why it gave up)."""
        if not self._file.closed:
            elapsed = time.monotonic() - self._start
            self._file.write(f"{elapsed:.6f} # {text}\n")
            self._file.flush()

    def _drain(self) -> None:
        for direction, stream in self._streams.items():
            self._write(direction, stream.drain())

    def copy_to(self, directory: Path, name: str = "console.transcript") -> Path | None:
        """A copy beside a command's other results, as private as the original; None
        when the transcript was removed while the session ran (the run is kept)."""
        if not self._file.closed:
            self._file.flush()
        target = directory / name
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            # Something cleaned ./results/console under a running session: the results
            # are whole, only the copy is lost; say so instead of failing the run.
            log.warning("the console transcript %s was removed during the session: "
                        "no copy in %s", self.path, directory)  # fmt: skip
            return None
        with os.fdopen(_open_private(target), "wb") as stream:
            stream.write(data)
        return target

    def close(self) -> None:
        if not self._file.closed:
            self._drain()
            self._file.close()
