"""Checksummed frames: how the board's shell answers evbench over a noisy line.

Kernel messages can break into console output at any byte, and a command's
own output can look like anything (a prompt, a marker, no final newline,
bytes that are not UTF-8). So nothing the board sends is read as it is:
output is stored in a file on the board, then sent as frames, one a line:

    @@<tag> <kind> <fields...> <check>

where `tag` is fresh for every request (8 hex digits, so it can never spell
ERROR or FAIL), and `check` is the first 12 hex digits of the SHA-256 of
"<tag> <kind> <fields...>". Data travel as base64 inside the fields. A frame
whose check fails is dropped and asked for again; everything that is not a
frame (the kernel's lines, a prompt, the shell's noise) is ignored but kept
in the transcript. The frames are written by small shell functions that the
session defines once (POSIX sh, with dd, base64, sha256sum, wc, cut and tr,
all in coreutils and busybox).
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import secrets
from dataclasses import dataclass, field

#: Raw bytes per data frame: 1 KiB of base64 a line, so a kernel line that
#: breaks into one costs little to send again.
CHUNK = 768
CHECK_DIGITS = 12
#: The largest file or output accepted from the board (a length read from the wire).
MAX_FILE = 64 << 20
FRAME = re.compile(rb"@@([0-9a-f]{8}) ([^\r\n@]*) ([0-9a-f]{12})\r?$")

#: The board's side, one definition a line (each well under the 4095-byte
#: limit of a terminal's input line). `__evb_f` frames its arguments;
#: `__evb_s` describes a file, `__evb_x` sends its chunks [first, last);
#: `__evb_m` sends the last command's status (R), file descriptions (S), its
#: first chunks and an end frame (E); `__evb_r` runs a base64-encoded command
#: with its output in files; `__evb_t` runs one and frames its standard output
#: line by line as it comes (L); `__evb_p` writes one chunk of an upload in
#: place (so a retry never duplicates it) and answers with its SHA-256 (A).
BOARD_FUNCTIONS = (
    f"unset IFS; __evb_c={CHUNK}; __evb_d=$(mktemp -d /tmp/evbench-console.XXXXXX)",
    f"__evb_f() {{ __evb_h=$(printf '%s' \"$*\" | sha256sum | cut -c1-{CHECK_DIGITS});"
    ' printf \'\\n@@%s %s\\n\' "$*" "$__evb_h"; }',
    '__evb_s() { if [ -f "$3" ] && [ -r "$3" ]; then __evb_n=$(($(wc -c <"$3")+0));'
    ' __evb_f "$1" S "$2" $__evb_n $(sha256sum <"$3" | cut -c1-64);'
    ' else __evb_f "$1" S "$2" -1 -; fi; }',
    '__evb_x() { __evb_n=$(($(wc -c <"$3")+0)); __evb_i=$4;'
    " while [ $((__evb_i*__evb_c)) -lt $__evb_n ] && [ $__evb_i -lt $5 ]; do"
    ' __evb_f "$1" D "$2" $__evb_i'
    ' "$(dd if="$3" bs=$__evb_c skip=$__evb_i count=1 2>/dev/null | base64 | tr -d \'\\n\')";'
    " __evb_i=$((__evb_i+1)); done; }",
    '__evb_m() { __evb_f "$1" R $(cat "$__evb_d/s"); __evb_s "$1" o "$__evb_d/o";'
    ' __evb_s "$1" e "$__evb_d/e"; __evb_x "$1" o "$__evb_d/o" 0 $2;'
    ' __evb_x "$1" e "$__evb_d/e" 0 $2; __evb_f "$1" E; }',
    '__evb_r() { (eval "$(printf \'%s\' "$2" | base64 -d)") >"$__evb_d/o" 2>"$__evb_d/e"'
    ' <"${3:-/dev/null}"; echo $? >"$__evb_d/s"; __evb_m "$1" 999999; }',
    '__evb_t() { { (eval "$(printf \'%s\' "$2" | base64 -d)") 2>"$__evb_d/e" </dev/null;'
    ' echo $? >"$__evb_d/s"; } | tee "$__evb_d/o" | { __evb_l=0;'
    ' while IFS= read -r __evb_v || [ -n "$__evb_v" ]; do'
    ' __evb_f "$1" L $__evb_l "$(printf \'%s\' "$__evb_v" | base64 | tr -d \'\\n\')";'
    ' __evb_l=$((__evb_l+1)); done; }; __evb_m "$1" 0; }',
    "__evb_p() { printf '%s' \"$4\" | base64 -d"
    ' | dd of="$2" bs=$__evb_c seek=$3 conv=notrunc 2>/dev/null; __evb_f "$1" A $3'
    ' $(dd if="$2" bs=$__evb_c skip=$3 count=1 2>/dev/null | sha256sum | cut -c1-64); }',
)


@dataclass(frozen=True)
class Frame:
    tag: str
    kind: str
    fields: tuple[str, ...]


def new_tag() -> str:
    """A fresh request tag: hex digits only, so no marker ever spells ERROR or FAIL."""
    return secrets.token_hex(4)


def check(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:CHECK_DIGITS]


def parse_line(line: bytes, *tags: str) -> Frame | None:
    """The frame this line ends with, if its check holds and it answers one of `tags`."""
    start = line.rfind(b"@@")
    if start < 0:
        return None
    match = FRAME.match(line, start)
    if not match:
        return None
    body = match.group(1) + b" " + match.group(2)
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        return None
    tag = match.group(1).decode()
    if check(text) != match.group(3).decode("ascii") or tag not in tags:
        return None
    kind, *fields = match.group(2).decode("ascii").split(" ")
    return Frame(tag, kind, tuple(fields))


def take_lines(buffer: bytearray) -> list[bytes]:
    """The complete lines of `buffer`, which loses them (a partial last line stays)."""
    end = buffer.rfind(b"\n")
    if end < 0:
        return []
    lines = bytes(buffer[:end]).split(b"\n")
    del buffer[: end + 1]
    return lines


def take_frames(buffer: bytearray, *tags: str) -> list[Frame]:
    """The verified frames of `tags` among the complete lines of `buffer`, which loses
    those lines."""
    return [frame for line in take_lines(buffer) if (frame := parse_line(line, *tags)) is not None]


class FrameReader:
    """The frames of `tags` as they come, and whether the shell's prompt followed one.

    A kernel line can spoil a request's end frame; the shell's unique prompt after
    the request's frames then says the request is over. The prompt is looked for in
    the lines as they are taken, not only in what is left: a kernel line that comes
    right after the prompt ends that line, and taking it must not lose the prompt
    (it did, and the request waited out the silence limit). A prompt before the
    request's first frame is the one before it, and does not count.
    """

    def __init__(self, buffer: bytearray, tags: tuple[str, ...], prompt: bytes) -> None:
        self.buffer = buffer
        self.tags = tags
        self.prompt = prompt
        #: A frame of `tags` came.
        self.answered = False
        #: The prompt came after a frame of `tags`.
        self.prompt_after = False

    def take(self) -> list[Frame]:
        """The frames among the complete lines now in the buffer, which loses those lines."""
        found = []
        for line in take_lines(self.buffer):
            frame = parse_line(line, *self.tags)
            if frame is not None:
                found.append(frame)
                self.answered = True
            elif self.answered and self.prompt in line:
                self.prompt_after = True
        if self.answered and self.prompt in self.buffer:
            self.prompt_after = True
        return found


@dataclass
class FileState:
    """One file coming back in chunks."""

    size: int | None = None
    sha256: str | None = None
    chunks: dict[int, bytes] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return 0 if not self.size or self.size < 0 else math.ceil(self.size / CHUNK)

    def missing(self) -> list[int]:
        return [i for i in range(self.count) if i not in self.chunks]

    def data(self) -> bytes:
        return b"".join(self.chunks[i] for i in range(self.count))


@dataclass
class Reply:
    """What the board sent back for one request, gathered over one or more tags."""

    status: int | None = None
    files: dict[str, FileState] = field(default_factory=dict)
    lines: dict[int, bytes] = field(default_factory=dict)
    ended: bool = False

    def add(self, frame: Frame) -> None:
        kind, fields = frame.kind, frame.fields
        if kind == "R" and len(fields) == 1 and fields[0].isdigit():
            self.status = int(fields[0])
        elif kind == "S" and len(fields) == 3:
            size = int(fields[1])
            if size > MAX_FILE:
                raise ValueError(
                    f"the board offers {size} bytes; a console moves at most {MAX_FILE}"
                    " (about two hours at 115200 baud)"
                )
            state = self.files.setdefault(fields[0], FileState())
            state.size, state.sha256 = size, fields[2]
        elif kind == "D" and len(fields) in (2, 3) and fields[1].isdigit():
            state = self.files.setdefault(fields[0], FileState())
            state.chunks[int(fields[1])] = base64.b64decode(fields[2] if len(fields) == 3 else "")
        elif kind == "L" and len(fields) in (1, 2) and fields[0].isdigit():
            self.lines[int(fields[0])] = base64.b64decode(fields[1] if len(fields) == 2 else "")
        elif kind == "E":
            self.ended = True
