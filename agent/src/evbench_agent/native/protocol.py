"""The agent's side of the native harness protocol (docs/native-codecs.md).

A `Harness` is one running harness executable. Every request waits a bounded
time for its answer and every answer is bounded in length; an answer that is
not the protocol (a crash, a hang, a line of garbage, a length or digest that
does not add up) raises `HarnessError`, a `PartialRun`: the run keeps what it
measured and says which harness failed and how.
"""

from __future__ import annotations

import logging
import os
import select
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass
from typing import Any, NoReturn

from evbench_agent.processes import child_exit
from evbench_core.analysis import metrics
from evbench_core.errors import PartialRun

log = logging.getLogger(__name__)

PROTOCOL = 1
#: The longest answer line (bytes, with its newline); the harness caps requests alike.
MAX_LINE = 4096
#: The largest payload either side sends (bytes).
MAX_PAYLOAD = 16 << 20
#: The most loops one timed request may ask for (the suite's MAX_LOOPS).
MAX_LOOPS = 1 << 24
#: Seconds to start, load a payload or send an encoding.
SHORT_WAIT_S = 10.0
#: Seconds a timed request may take: a sample spans min_time, calibration at most
#: MAX_LOOPS operations; a harness past this is taken for hung.
TIME_WAIT_S = 120.0
#: Bytes of the harness's standard error quoted in an error.
STDERR_TAIL = 2000
OPERATIONS = metrics.CODEC_TIMED


class HarnessError(PartialRun):
    """A native harness broke the protocol: what was measured before is kept."""


@dataclass(frozen=True)
class Loaded:
    """A payload the harness holds: its index there, and its encoding's length and digest."""

    index: int
    length: int
    digest: str


@dataclass(frozen=True)
class Timing:
    elapsed_ns: int
    #: encode and decode: bytes; decode_access: leaves read.
    size: int
    digest: str


def fnv1a64(data: bytes) -> str:
    """The digest the harness reports (FNV-1a, 64 bits, 16 hex digits): a check, not security."""
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


class Harness:
    """One harness process, spoken to over its standard input and output."""

    def __init__(
        self,
        name: str,
        executable: str,
        short_wait_s: float = SHORT_WAIT_S,
        time_wait_s: float = TIME_WAIT_S,
    ) -> None:
        self.name, self.executable = name, executable
        self.short_wait_s, self.time_wait_s = short_wait_s, time_wait_s
        # Closed by _shutdown, with the process: it outlives this call.
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115
        self._buffer = b""
        self._waiting = ("hello", short_wait_s)  # the request answered next, and its wait
        try:
            self._process = subprocess.Popen(
                [executable],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                close_fds=True,
            )
        except OSError as error:
            self._errors.close()
            raise HarnessError(f"native codec {name}: cannot start {executable}: {error}") from None
        log.debug("started %s (%s, pid %d)", name, executable, self._process.pid)
        # Closed when dropped, or at the latest when the worker exits.
        self._finalizer = weakref.finalize(
            self, _shutdown, self._process, self._errors, short_wait_s
        )
        self.about = self._hello()

    # -- requests ----------------------------------------------------------------

    def _hello(self) -> dict[str, str]:
        fields = self._request(f"hello\t{PROTOCOL}", self.short_wait_s)
        about = {}
        for field in fields:
            key, equals, value = field.partition("=")
            if not equals:
                self._fail(f"answered hello with {field!r}, not key=value")
            about[key] = value
        if about.get("protocol") != str(PROTOCOL):
            self._fail(f"speaks protocol {about.get('protocol')!r}, not {PROTOCOL}")
        return about

    def load(self, message_type: str, access: str | None, data: bytes) -> Loaded:
        """Hand over one payload (exchange bytes); the harness answers with its own encoding's
        length and digest."""
        if len(data) > MAX_PAYLOAD:
            raise HarnessError(f"native codec {self.name}: a payload over {MAX_PAYLOAD} bytes")
        for text in (message_type, access or "-"):
            if not text or any(c in text for c in "\t\n\r"):
                raise HarnessError(f"native codec {self.name}: cannot send {text!r}")
        header = f"load\t{message_type}\t{access or '-'}\t{len(data)}"
        fields = self._request(header, self.short_wait_s, data)
        (index, length), digest = self._numbers(fields, 3, "load")
        if length > MAX_PAYLOAD:
            self._fail(f"says its encoding is {length} bytes, over the {MAX_PAYLOAD} cap")
        return Loaded(int(index), int(length), digest)

    def encoded(self, loaded: Loaded) -> bytes:
        """The harness's encoding of a loaded payload, checked against what it announced."""
        fields = self._request(f"encoded\t{loaded.index}", self.short_wait_s)
        (length,), digest = self._numbers(fields, 2, "encoded")
        if int(length) != loaded.length or digest != loaded.digest:
            self._fail(
                f"sent payload {loaded.index} as {length} bytes ({digest}), "
                f"but announced {loaded.length} bytes ({loaded.digest})"
            )
        data = self._read_exact(int(length), time.monotonic() + self.short_wait_s)
        if fnv1a64(data) != digest:
            self._fail(f"sent bytes of payload {loaded.index} whose digest is not {digest}")
        return data

    def time(self, operation: str, loaded: Loaded, loops: int) -> Timing:
        """Nanoseconds for `loops` runs of `operation` on a loaded payload, timed by the harness."""
        if operation not in OPERATIONS or not 1 <= loops <= MAX_LOOPS:
            raise ValueError(f"bad timing request {operation} x {loops}")
        fields = self._request(
            f"time\t{operation}\t{loaded.index}\t{loops}", self.time_wait_s + self.short_wait_s
        )
        (elapsed, size), digest = self._numbers(fields, 3, "time")
        return Timing(int(elapsed), int(size), digest)

    def close(self) -> None:
        """Ask the harness to quit; kill it if it does not within the short wait."""
        self._finalizer()

    # -- framing -----------------------------------------------------------------

    def _request(self, line: str, wait_s: float, data: bytes = b"") -> list[str]:
        stdin = self._process.stdin
        assert stdin is not None  # stdin=PIPE
        try:
            stdin.write(line.encode("ascii") + b"\n" + data)
            stdin.flush()
        except OSError:  # a closed pipe: the harness has gone
            self._fail("stopped taking requests", exited=True)
        self._waiting = (line.split("\t")[0], wait_s)
        answer = self._read_line(time.monotonic() + wait_s)
        status, *fields = answer.split("\t")
        if status == "error":
            message = " ".join(fields)[:500]
            raise HarnessError(
                f"native codec {self.name} refused {line.split(chr(9))[0]!r}: {message}"
            )
        if status != "ok":
            self._fail(f"answered {answer[:80]!r}, not ok or error")
        return fields

    def _numbers(self, fields: list[str], count: int, request: str) -> tuple[list[int], str]:
        """`count` fields: decimal numbers, then a 16-digit hex digest."""
        good = len(fields) == count and all(f.isdigit() and len(f) <= 20 for f in fields[:-1])
        digest = fields[-1] if fields else ""
        if not good or len(digest) != 16 or any(c not in "0123456789abcdef" for c in digest):
            self._fail(f"answered {request} with {fields!r}")
        return [int(f) for f in fields[:-1]], digest

    def _read_line(self, deadline: float) -> str:
        while b"\n" not in self._buffer:
            if len(self._buffer) >= MAX_LINE:
                self._fail(f"printed over {MAX_LINE} bytes without a line end")
            self._fill(deadline)
        raw, _, self._buffer = self._buffer.partition(b"\n")
        if len(raw) >= MAX_LINE:
            self._fail(f"printed a line over {MAX_LINE} bytes")
        text: str | None
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            text = None
        if text is None or not all(c == "\t" or " " <= c <= "~" for c in text):
            self._fail(f"printed garbage: {raw[:80]!r}")
        return text

    def _read_exact(self, length: int, deadline: float) -> bytes:
        while len(self._buffer) < length:
            self._fill(deadline)
        data, self._buffer = self._buffer[:length], self._buffer[length:]
        return data

    def _fill(self, deadline: float) -> None:
        request, wait_s = self._waiting
        stdout = self._process.stdout
        assert stdout is not None  # stdout=PIPE
        left = deadline - time.monotonic()
        ready = select.select([stdout], [], [], max(left, 0))[0] if left > 0 else []
        if not ready:
            self._process.kill()
            self._process.wait()
            self._fail(f"did not answer {request!r} within {wait_s:g} s")
        chunk = os.read(stdout.fileno(), 65536)
        if not chunk:
            try:
                self._process.wait(timeout=self.short_wait_s)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._fail(f"closed its output during {request!r}", exited=True)
        self._buffer += chunk

    def _fail(self, what: str, exited: bool = False) -> NoReturn:
        process = self._process
        if process.poll() is None and not exited:
            process.kill()
            process.wait()
        how = child_exit.describe(process.poll())
        self._errors.seek(0, os.SEEK_END)
        size = self._errors.tell()
        self._errors.seek(max(0, size - STDERR_TAIL))
        tail = self._errors.read().decode("utf-8", "replace").strip()
        message = f"native codec {self.name} ({self.executable}) {what} ({how})"
        if tail:
            message += f"; its stderr: {tail}"
        raise HarnessError(message, hint="rebuild the harness (docs/native-codecs.md)")


def _shutdown(process: subprocess.Popen[bytes], errors: Any, wait_s: float) -> None:
    if process.poll() is None:
        try:
            assert process.stdin is not None  # stdin=PIPE
            process.stdin.write(b"quit\n")
            process.stdin.close()
            process.wait(timeout=wait_s)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None and not stream.closed:
            stream.close()
    errors.close()
