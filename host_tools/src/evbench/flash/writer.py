"""Streams an image into a sink and verifies it, range by range.

With a bmap: only the mapped ranges are written, and each range's data is
checked against the bmap's checksum as it streams past, before the next range
starts (as bmaptool does). Ranges without a checksum (bmap 1.0-1.2), and
images without a bmap, are verified by reading the target back after fsync,
with the page cache dropped, against a digest taken while writing.

Whatever stops a flash once writing has begun (corrupt or cut-off image data,
a range checksum, a write, sync or read-back error) leaves the target neither
its old contents nor the image: write_image adds how many bytes were written,
and that the target is incomplete, to every such error in one place.

A sink is where bytes go: `FileSink` writes a local file or device;
emmc.BoardSink sends them to a receiver on a board, which reads back every range.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

from evbench.flash.bmap import BlockRange, Bmap
from evbench.flash.progress import FlashProgress
from evbench.flash.readback import read_back_digest
from evbench.flash.source import ImageSource
from evbench_core.errors import CheckFailed, EvbenchError

log = logging.getLogger(__name__)

MiB = 1024 * 1024


@dataclass
class FlashReport:
    """What one flash did; `seconds` runs from the first read to the end of verification."""

    bytes_written: int = 0
    #: None while unknown: a compressed image without a bmap tells its size only at its end.
    bytes_total: int | None = None
    image_size: int = 0
    ranges_checked: int = 0
    seconds: float = 0.0
    method: list[str] = field(default_factory=list)
    #: Every byte has gone to the sink: a failure now is the target not holding them.
    all_sent: bool = False

    def summary(self) -> str:
        rate = self.bytes_written / self.seconds / MiB if self.seconds else 0.0
        return (
            f"wrote {self.bytes_written} bytes ({self.bytes_written / MiB:.1f} MiB) of a "
            f"{self.image_size / MiB:.1f} MiB image in {self.seconds:.2f} s "
            f"({rate:.1f} MiB/s; one run, wall clock including sync and verification); "
            "verified: " + "; ".join(self.method)
        )

    def progress_note(self) -> str:
        """How far a flash that failed got, for the end of its error message."""
        if self.all_sent:
            return (
                f"all {self.bytes_written} bytes were written, but the target does not hold "
                "them: it is incomplete, flash it again"
            )
        of_total = f" of {self.bytes_total}" if self.bytes_total is not None else ""
        return (
            f"wrote {self.bytes_written}{of_total} bytes before stopping; "
            "the target is incomplete: flash it again"
        )


class Sink(Protocol):
    def write(self, offset: int, data: bytes) -> None:
        """Write `data` at byte `offset` of the target."""

    def end_range(
        self, offset: int, length: int, algorithm: str, digest: str, checked: bool
    ) -> None:
        """A range is complete; `checked` when its data already matched the bmap."""

    def finish(self) -> list[str]:
        """Sync and verify what is still unverified; say how it was verified."""


class _Flusher:
    """fdatasync in the background while writing goes on.

    Without it the whole image sits in the page cache until the final fsync:
    progress reaches 100 % long before a slow card has the data, and the
    final sync does all the device's work at once instead of overlapping it
    with decompression.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.error: OSError | None = None
        self._wanted = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._stopping:
                return
            try:
                os.fdatasync(self.fd)
            except OSError as error:
                self.error = error
                return

    def kick(self) -> None:
        self._wanted.set()

    def stop(self) -> None:
        self._stopping = True
        self._wanted.set()
        self._thread.join()


class FileSink:
    """A local file or block device, open read-write."""

    #: Start a background sync after this many bytes.
    FLUSH_EVERY = 16 * MiB

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._read_back: list[tuple[int, int, str, str]] = []
        self._flusher = _Flusher(fd)
        self._unflushed = 0

    def write(self, offset: int, data: bytes) -> None:
        if self._flusher.error is not None:
            raise self._flusher.error
        view = memoryview(data)
        while view:
            written = os.pwrite(self.fd, view, offset)
            view = view[written:]
            offset += written
        self._unflushed += len(data)
        if self._unflushed >= self.FLUSH_EVERY:
            self._unflushed = 0
            self._flusher.kick()

    def end_range(
        self, offset: int, length: int, algorithm: str, digest: str, checked: bool
    ) -> None:
        if not checked:  # bmap-checked ranges are trusted, as bmaptool does
            self._read_back.append((offset, length, algorithm, digest))

    def close(self) -> None:
        """Stop the background sync (after a failure, or after finish)."""
        self._flusher.stop()

    def finish(self) -> list[str]:
        self._flusher.stop()
        if self._flusher.error is not None:
            raise self._flusher.error
        os.fsync(self.fd)
        for offset, length, algorithm, expected in self._read_back:
            found = read_back_digest(self.fd, offset, length, algorithm)
            if found != expected:
                raise CheckFailed(
                    f"read-back mismatch for bytes {offset}-{offset + length - 1}: the target "
                    f"holds {algorithm} {found}, {expected} was written",
                    hint="the card may be failing or fake (smaller than it claims)",
                )
        if not self._read_back:
            return []
        return [f"{len(self._read_back)} range(s) read back after fsync, cache dropped"]


def _check_range(bmap: Bmap, block_range: BlockRange, digest: str, report: FlashReport) -> None:
    if digest != block_range.checksum:
        start, length = bmap.byte_span(block_range)
        raise CheckFailed(
            f"checksum mismatch for blocks {block_range.first}-{block_range.last} "
            f"(bytes {start}-{start + length - 1}): calculated {digest}, the bmap says "
            f"{block_range.checksum}",
            hint="the image or its bmap is damaged: download both again",
        )
    report.ranges_checked += 1


def _new_report(source: ImageSource, bmap: Bmap | None) -> FlashReport:
    """The report before the first byte, with the sizes known ahead."""
    report = FlashReport()
    if bmap is not None:
        report.image_size, report.bytes_total = bmap.image_size, bmap.mapped_bytes
    else:
        report.image_size, report.bytes_total = source.plain_size or 0, source.plain_size
    return report


def write_image(
    source: ImageSource, sink: Sink, bmap: Bmap | None, progress: FlashProgress
) -> FlashReport:
    """Stream the image into `sink`, then sync and verify it.

    Raises CheckFailed on any fault; once the target is open for writing, every
    error (whatever its class) ends by saying how far the flash got.
    """
    started = time.monotonic()
    report = _new_report(source, bmap)
    try:
        _stream(source, sink, bmap, progress, report)
        report.all_sent = True
        _finish(sink, report)
    except EvbenchError as error:
        _add_progress_note(error, report)
        raise
    report.seconds = time.monotonic() - started
    return report


def _add_progress_note(error: EvbenchError, report: FlashReport) -> None:
    """End the error's message with how far the flash got. The error itself is kept,
    not rebuilt: its class sets the exit code and its hint says what to do."""
    error.args = (f"{error}; {report.progress_note()}",)


def _stream(
    source: ImageSource, sink: Sink, bmap: Bmap | None, progress: FlashProgress, report: FlashReport
) -> None:
    """Write every mapped range, checking each against the bmap as it passes."""
    if bmap is not None:
        spans: list[tuple[int, int | None]] = [bmap.byte_span(r) for r in bmap.ranges]
    else:
        spans = [(0, source.plain_size)]
    index, hasher, algorithm, range_end = -1, hashlib.sha256(), "sha256", -1
    for offset, data in source.chunks(spans):
        if offset >= range_end:  # the first chunk of the next range
            index += 1
            start, length = spans[index]
            range_end = start + length if length is not None else 1 << 62
            kind = None
            if bmap is not None and bmap.ranges[index].checksum is not None:
                kind = bmap.checksum_type  # ranges carry checksums only with a type
            checked = kind is not None
            algorithm = kind if kind is not None else "sha256"
            hasher = hashlib.new(algorithm)
        hasher.update(data)
        try:
            sink.write(offset, data)
        except OSError as error:
            raise CheckFailed(
                f"writing at byte {offset} failed: {error.strerror or error}",
                hint="the device may have been removed, be full, or be failing",
            ) from error
        report.bytes_written += len(data)
        progress.advance(len(data))
        if bmap is not None and offset + len(data) == range_end:
            block_range = bmap.ranges[index]
            if block_range.checksum is not None:
                _check_range(bmap, block_range, hasher.hexdigest(), report)
            log.debug(
                "range %d: %d bytes at byte %d, %s %s",
                index,
                range_end - start,
                start,
                algorithm,
                "checked against the bmap" if checked else "sent to be read back",
            )
            sink.end_range(start, range_end - start, algorithm, hasher.hexdigest(), checked)
    if bmap is None:  # the stream's own length is the image size
        report.image_size = report.bytes_total = report.bytes_written
        sink.end_range(0, report.bytes_written, "sha256", hasher.hexdigest(), False)
    if report.ranges_checked:
        report.method.append(f"{report.ranges_checked} range checksums from the bmap")


def _finish(sink: Sink, report: FlashReport) -> None:
    """Sync the target and verify what the bmap did not."""
    log.info("wrote %d bytes; syncing and reading them back", report.bytes_written)
    try:
        report.method += sink.finish()
    except OSError as error:  # a failing card often reports it only when the cache is flushed
        raise CheckFailed(
            f"syncing or reading back the target failed: {error.strerror or error}",
            hint="the device may have been removed or is failing: try another card",
        ) from error
