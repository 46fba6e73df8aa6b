"""Every byte of a console session, timestamped, with the password redacted.

One record a line: seconds since the session opened, the direction (`<` from
the board, `>` to the board) and the bytes as a Python bytes literal, so the
raw bytes come back exactly with `ast.literal_eval`. Each record is flushed
as it is written: a session that dies still leaves its transcript.
"""

from __future__ import annotations

import datetime
import os
import shutil
import time
from pathlib import Path

FORMAT_LINE = "# evbench console transcript, version 1"
REDACTED = b"<password redacted>"
#: Where transcripts go when the command has no output directory of its own.
DEFAULT_DIRECTORY = Path("results") / "console"


def default_path(label: str) -> Path:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    safe = "".join(c if c.isalnum() else "-" for c in label).strip("-")[-40:] or "console"
    return DEFAULT_DIRECTORY / f"{stamp}-{safe}.transcript"


class Transcript:
    """An append-only record of one console session."""

    def __init__(self, path: Path, url: str) -> None:
        self.path = path
        self._secrets: list[bytes] = []
        self._start = time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        # Only the user may read it: a console can show more than evbench asked for.
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self._file = os.fdopen(descriptor, "w", encoding="ascii", errors="backslashreplace")
        opened = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        self._file.write(f"{FORMAT_LINE}\n# console {url}, opened {opened}\n")
        self._file.write("# seconds direction(< board, > host) bytes\n")
        self._file.flush()

    def add_secret(self, secret: bytes) -> None:
        """Never write these bytes, in either direction."""
        if secret:
            self._secrets.append(secret)

    def _redact(self, data: bytes) -> bytes:
        for secret in self._secrets:
            data = data.replace(secret, REDACTED)
        return data

    def _record(self, direction: str, data: bytes) -> None:
        if self._file.closed or not data:
            return
        elapsed = time.monotonic() - self._start
        self._file.write(f"{elapsed:.6f} {direction} {self._redact(data)!r}\n")
        self._file.flush()

    def received(self, data: bytes) -> None:
        self._record("<", data)

    def sent(self, data: bytes) -> None:
        self._record(">", data)

    def sent_secret(self) -> None:
        """The password went out: record that it did, never what it was."""
        self._record(">", REDACTED)

    def note(self, text: str) -> None:
        """An evbench remark (what it was waiting for, why it gave up)."""
        if not self._file.closed:
            elapsed = time.monotonic() - self._start
            self._file.write(f"{elapsed:.6f} # {text}\n")
            self._file.flush()

    def copy_to(self, directory: Path, name: str = "console.transcript") -> Path:
        """A copy beside a command's other results."""
        self._file.flush()
        target = directory / name
        shutil.copyfile(self.path, target)
        return target

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
