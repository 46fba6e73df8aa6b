"""The image as a forward-only stream: plain, xz, gz, bz2 or zstd, never whole in memory.

As bmaptool's TransRead does, the image is decompressed by the xz, gzip,
bzip2 or zstd command in its own process, and a reader thread fills a small
bounded queue ahead of the writer, so decompression on one core overlaps
hashing and writing on the other. Without the command, xz, gz and bz2 fall
back to Python's own modules; zstd needs the command (the standard library
reads it only from Python 3.14).
"""

from __future__ import annotations

import bz2
import contextlib
import fcntl
import gzip
import io
import lzma
import queue
import shutil
import subprocess
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Literal, Protocol

from evbench.boards.base import child_environment
from evbench_core.errors import CheckFailed, UserError

CHUNK = 1024 * 1024
#: Decompressed chunks held ahead of the writer: bounds memory at QUEUE_DEPTH MiB.
QUEUE_DEPTH = 8
MAGIC = {
    "xz": b"\xfd7zXZ\x00",
    "gz": b"\x1f\x8b",
    "bz2": b"BZh",
    "zstd": b"\x28\xb5\x2f\xfd",
}
COMPRESSED_SUFFIXES = {".xz": "xz", ".gz": "gz", ".bz2": "bz2", ".zst": "zstd", ".zstd": "zstd"}
#: What each decompressor raises for damaged or cut-off data.
_STREAM_ERRORS = (lzma.LZMAError, EOFError, gzip.BadGzipFile, zlib.error, OSError, ValueError)


class CorruptImage(CheckFailed):
    """The image stream is damaged, truncated, or disagrees with its bmap."""


def detect_compression(path: Path) -> str:
    """'plain', 'xz', 'gz', 'bz2' or 'zstd', from the first bytes (checked against the name)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(8)
    except OSError as error:
        raise UserError(f"cannot read the image {path}: {error.strerror}") from error
    found = next((kind for kind, magic in MAGIC.items() if head.startswith(magic)), "plain")
    named = COMPRESSED_SUFFIXES.get(path.suffix.lower())
    if named and found != named:
        raise CorruptImage(
            f"{path} is named as {named} but does not start like {named} data; nothing was written",
            hint="the file is damaged or misnamed: download it again",
        )
    return found


#: The decompressor commands, run as a separate process like bmaptool's TransRead does.
#: xz -T0: an image xz wrote in blocks (Yocto's XZ_DEFAULTS compress with threads) is
#: decompressed on every core from xz 5.4 on; one block, or an older xz, runs as plain -dc.
COMMANDS = {
    "xz": ("xz", "-dc", "-T0"),
    "gz": ("gzip", "-dc"),
    "bz2": ("bzip2", "-dc"),
    "zstd": ("zstd", "-dc", "--no-progress"),
}


#: Python's own decoders, used when the command is missing (zstd has none before 3.14).
class _Stream(Protocol):
    """What the reader takes from an image: the plain file, a decompressor's pipe or module."""

    def read(self, size: int, /) -> bytes: ...

    def close(self) -> None: ...


MODULES: dict[str, Callable[[Path, Literal["rb"]], _Stream]] = {
    "xz": lzma.open,
    "gz": gzip.open,
    "bz2": bz2.open,
}
#: A larger pipe means fewer wake-ups for both processes (Linux caps it for non-root users).
PIPE_SIZE = 1024 * 1024


class _DecompressPipe:
    """`xz -dc FILE` (and friends) as a readable stream; their exit status is checked at EOF."""

    def __init__(self, command: str, arguments: tuple[str, ...], path: Path) -> None:
        self.name = Path(command).name
        self._command = command
        self._process = subprocess.Popen(
            [command, *arguments, str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_environment(),
        )
        assert self._process.stdout is not None and self._process.stderr is not None  # PIPEs
        self._stdout, self._stderr = self._process.stdout, self._process.stderr
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(self._stdout, fcntl.F_SETPIPE_SZ, PIPE_SIZE)

    def read(self, size: int) -> bytes:
        data = self._stdout.read(size)
        if not data:
            self._process.wait()
            if self._process.returncode != 0:
                message = self._stderr.read(4096).decode(errors="replace").strip()
                line = message.splitlines()[-1] if message else "failed"
                for own in (self._command, self.name):  # the tool names itself: once is enough
                    line = line.removeprefix(f"{own}: ")
                raise OSError(f"{self.name}: {line}")
        return data

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._stdout.close()
        self._stderr.close()


def _xz_size(path: Path) -> int | None:
    """The uncompressed size from the xz index, as `xz --robot --list` reads it."""
    command = shutil.which("xz")
    if command is None:
        return None
    done = subprocess.run(
        [command, "--robot", "--list", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_environment(),
    )
    for line in done.stdout.splitlines() if done.returncode == 0 else ():
        fields = line.split("\t")
        if fields[0] == "totals" and len(fields) > 4:
            return int(fields[4])
    return None


#: zstd frames (RFC 8878): the magic of a frame, and the range of skippable frames.
_ZSTD_FRAME = 0xFD2FB528
_ZSTD_SKIPPABLE = range(0x184D2A50, 0x184D2A60)


def _zstd_size(path: Path) -> int | None:
    """The sum of the Frame_Content_Size of every frame (RFC 8878, 3.1.1), walking the
    blocks to find each next frame; None when a frame does not declare its size."""
    total = 0
    with path.open("rb") as stream:

        def take(count: int) -> int:
            data = stream.read(count)
            if len(data) != count:
                raise ValueError("cut short")
            return int.from_bytes(data, "little")

        while magic := stream.read(4):
            if len(magic) != 4:
                return None
            number = int.from_bytes(magic, "little")
            if number in _ZSTD_SKIPPABLE:
                stream.seek(take(4), 1)
                continue
            if number != _ZSTD_FRAME:
                return None
            descriptor = take(1)
            single_segment = descriptor >> 5 & 1
            if not single_segment:
                take(1)  # window descriptor
            stream.seek((0, 1, 2, 4)[descriptor & 3], 1)  # dictionary id
            size_bytes = (single_segment, 2, 4, 8)[descriptor >> 6]
            if size_bytes == 0:
                return None
            total += take(size_bytes) + (256 if size_bytes == 2 else 0)
            last = 0
            while not last:
                header = take(3)
                last, kind, size = header & 1, header >> 1 & 3, header >> 3
                stream.seek(1 if kind == 1 else size, 1)  # an RLE block stores one byte
            if descriptor >> 2 & 1:
                stream.seek(4, 1)  # content checksum
    return total


def _open_stream(path: Path, compression: str) -> _Stream:
    if compression == "plain":
        return path.open("rb")
    program, *arguments = COMMANDS[compression]
    command = shutil.which(program)
    if command is not None:
        return _DecompressPipe(command, tuple(arguments), path)
    if compression in MODULES:
        return MODULES[compression](path, "rb")
    raise UserError(
        f"{path} is {compression}-compressed and the '{program}' command is missing",
        hint=f"install it (Debian/Ubuntu: apt-get install {program})",
    )


class ImageSource:
    """Streams the mapped spans of an image, in order, from a reader thread.

    `spans` are (offset, length) pairs in increasing order; a length of None
    means "to the end of the image" (an image without a bmap). With a known
    `image_size` the stream is read to its end, so the compressed format's own
    integrity check runs and a size that disagrees with the bmap is caught.
    """

    def __init__(self, path: Path, image_size: int | None = None) -> None:
        self.path = path
        self.compression = detect_compression(path)
        self.image_size = image_size
        self._queue: queue.Queue = queue.Queue(QUEUE_DEPTH)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def plain_size(self) -> int | None:
        """The image's size when it is not compressed (known before reading)."""
        return self.path.stat().st_size if self.compression == "plain" else None

    def declared_size(self) -> int | None:
        """The decompressed size the compressed file declares, where its format keeps
        one (xz's index, zstd's frame headers; bzip2 and gzip keep none that holds):
        a card too small for it is refused before anything is written. None when the
        file does not say (or cannot be read: the stream's own checks then speak)."""
        if self.compression == "plain":
            return self.plain_size
        try:
            if self.compression == "xz":
                return _xz_size(self.path)
            if self.compression == "zstd":
                return _zstd_size(self.path)
        except (OSError, ValueError, subprocess.SubprocessError):
            return None
        return None

    def chunks(self, spans: Sequence[tuple[int, int | None]]) -> Iterator[tuple[int, bytes]]:
        """(offset, data) pieces of every span, at most CHUNK bytes each."""
        self._thread = threading.Thread(target=self._read, args=(list(spans),), daemon=True)
        self._thread.start()
        while True:
            kind, offset, payload = self._queue.get()
            if kind == "data":
                yield offset, payload
            elif kind == "error":
                raise payload
            else:
                return

    def _put(self, item: tuple) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def _read(self, spans: list[tuple[int, int | None]]) -> None:
        position = 0
        try:
            stream = _open_stream(self.path, self.compression)
        except (UserError, OSError) as error:
            self._put(("error", 0, error))
            return
        try:
            for offset, length in spans:
                position = self._skip(stream, position, offset)
                end = offset + length if length is not None else None
                while (end is None or position < end) and not self._stop.is_set():
                    data = stream.read(CHUNK if end is None else min(CHUNK, end - position))
                    if not data:
                        if end is None:
                            break
                        raise self._truncated(position, end)
                    self._put(("data", position, data))
                    position += len(data)
            if self.image_size is not None:
                position = self._check_end(stream, position)
            self._put(("end", position, None))
        except _STREAM_ERRORS as error:
            self._put(("error", position, self._corrupt(position, error)))
        except CorruptImage as error:
            self._put(("error", position, error))
        finally:
            stream.close()

    def _skip(self, stream: _Stream, position: int, offset: int) -> int:
        if isinstance(stream, io.BufferedReader):  # the plain image file: it seeks
            stream.seek(offset)
            return offset
        while position < offset and not self._stop.is_set():
            data = stream.read(min(CHUNK, offset - position))
            if not data:
                raise self._truncated(position, offset)
            position += len(data)
        return position

    def _check_end(self, stream: _Stream, position: int) -> int:
        if self.compression == "plain":
            size = self.path.stat().st_size
        else:
            while not self._stop.is_set() and (data := stream.read(CHUNK)):
                position += len(data)
            size = position
        if size != self.image_size:
            raise CorruptImage(
                f"the image {self.path} holds {size} bytes, its bmap says {self.image_size}",
                hint="the image and its bmap do not belong together, or the image is cut off",
            )
        return size

    def _truncated(self, position: int, needed: int) -> CorruptImage:
        return CorruptImage(
            f"the image {self.path} ends at byte {position}, but data is mapped up to byte "
            f"{needed}: the image is truncated",
            hint="download the image again",
        )

    def _corrupt(self, position: int, error: Exception) -> CorruptImage:
        reason = str(error) or type(error).__name__
        return CorruptImage(
            f"the {self.compression} image {self.path} is corrupt near byte {position} of its "
            f"data: {reason}",
            hint="download the image again",
        )

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> ImageSource:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
