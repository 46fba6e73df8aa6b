"""Sparse images for the flash tests, mapped by the real `bmaptool create` (Debian bmap-tools,
not evbench); targets are pre-filled with PATTERN, so a test proves unmapped ranges unwritten.
"""

import hashlib
import os
import random
import re
import subprocess
from pathlib import Path

import pytest
from conftest import require_command

from evbench.cli import evbench

MiB = 1024 * 1024
BOARD_PYTHON = "/usr/bin/python3"
PATTERN = b"\xa5\x5a"
#: The commands that make each compressed form (all from Debian: xz-utils, gzip, bzip2, zstd).
COMPRESSORS = {
    "xz": ["xz", "-0", "-T1", "-c"],
    "gz": ["gzip", "-1", "-c"],
    "bz2": ["bzip2", "-1", "-c"],
    "zst": ["zstd", "-1", "-q", "-c"],
}


def piece(seed: int, index: int, length: int) -> bytes:
    """Deterministic data that compresses fast but is different in every 4 KiB block."""
    base = random.Random(f"{seed}:{index}").randbytes(4096)
    blocks = [
        hashlib.sha256(b"%d:%d" % (index, n)).digest() + base[32:]
        for n in range(-(-length // 4096))
    ]
    return b"".join(blocks)[:length]


def make_image(path: Path, size: int, extents: list[tuple[int, int]], seed: int = 1) -> Path:
    """A sparse file of `size` bytes with data in the (offset, length) extents."""
    with path.open("wb") as handle:
        handle.truncate(size)
        for index, (offset, length) in enumerate(extents):
            handle.seek(offset)
            handle.write(piece(seed, index, length))
    return path


def make_bmap(bmaptool: str, image: Path, bmap: Path) -> Path:
    subprocess.run([bmaptool, "create", "-o", str(bmap), str(image)], check=True)
    return bmap


def compress(image: Path, kind: str, out: Path) -> Path:
    with out.open("wb") as handle:
        subprocess.run([*COMPRESSORS[kind], str(image)], stdout=handle, check=True)
    return out


def fill(path: Path, size: int) -> Path:
    """A target of `size` bytes holding PATTERN everywhere (no holes)."""
    block = PATTERN * (MiB // len(PATTERN))
    with path.open("wb") as handle:
        for _ in range(size // MiB):
            handle.write(block)
        handle.write(block[: size % MiB])
    return path


def mapped_spans(bmap_text: str, block_size: int, image_size: int) -> list[tuple[int, int]]:
    """(offset, length) of every <Range> in a bmap, read independently of evbench's parser."""
    spans = []
    for first, last in re.findall(r"<Range[^>]*>\s*(\d+)(?:-(\d+))?\s*</Range>", bmap_text):
        end = (int(last or first) + 1) * block_size
        spans.append((int(first) * block_size, min(end, image_size) - int(first) * block_size))
    return spans


def _assert_unmapped(fd: int, start: int, end: int, holes: bool) -> None:
    while start < end:
        length = min(4 * MiB, end - start)
        if holes:
            expected = bytes(length)
        else:
            expected = (PATTERN * (length // 2 + 2))[start % 2 : start % 2 + length]
        assert os.pread(fd, length, start) == expected, f"unmapped bytes near {start} were written"
        start += length


def assert_flashed(
    target: Path | str, image: Path, spans: list[tuple[int, int]], as_file: bool = False
) -> None:
    """Mapped spans equal the image byte for byte; everything else still holds PATTERN, or with
    `as_file` (a file target made exactly the image, as bmaptool does) reads as holes."""
    with open(target, "rb") as handle, image.open("rb") as source:
        fd, position = handle.fileno(), 0
        if as_file:
            assert os.fstat(fd).st_size == image.stat().st_size, "the file is not the image's size"
        for offset, length in [*spans, (image.stat().st_size, 0)]:
            _assert_unmapped(fd, position, offset, as_file)
            source.seek(offset)
            assert os.pread(fd, length, offset) == source.read(length), f"range at {offset}"
            position = offset + length


#: The small image of the fault tests: 4 MiB and 1000 bytes, the last block partial.
SMALL_SIZE = 4 * MiB + 1000
SMALL_EXTENTS = [
    (0, 64 * 1024),
    (MiB + 3 * 4096, 100 * 1024),
    (3 * MiB, 200 * 1024),
    (4 * MiB, 1000),
]


@pytest.fixture(scope="module")
def module_images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """disk.img, its bmap and its xz/gz/bz2/zst forms, keyed 'plain', 'bmap', 'xz', ...: made
    once for a test module that says `images = module_images`."""
    for command in (*(argv[0] for argv in COMPRESSORS.values()), "bmaptool"):
        require_command(command)
    folder = tmp_path_factory.mktemp("images")
    image = make_image(folder / "disk.img", SMALL_SIZE, SMALL_EXTENTS)
    bmap = make_bmap(require_command("bmaptool"), image, folder / "disk.img.bmap")
    made = {"plain": image, "bmap": bmap}
    for kind in COMPRESSORS:
        made[kind] = compress(image, kind, folder / f"disk.img.{kind}")
    return made


def small_spans(images: dict[str, Path]) -> list[tuple[int, int]]:
    return mapped_spans(images["bmap"].read_text(), 4096, SMALL_SIZE)


@pytest.fixture(params=["local", "ssh"])
def flash_board(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """Where `evbench flash` writes: "host" (None: no --board), the local board, or this machine
    over the loopback sshd (tests/sshd.py), the receiver under Debian's python3 as a board's."""
    if request.param in ("host", "local"):
        return None if request.param == "host" else "local"
    sshd = request.getfixturevalue("sshd")
    request.getfixturevalue("ssh_home")
    return f"ssh://{sshd.user}@127.0.0.1:{sshd.port}?dir={tmp_path}/board&python={BOARD_PYTHON}"


def untouched(target: Path) -> bool:
    """Whether `target` still holds PATTERN everywhere, as fill() left it."""
    fresh = fill(target.with_suffix(".fresh"), target.stat().st_size)
    return target.read_bytes() == fresh.read_bytes()


def flip_byte(source: Path, out: Path, at: float = 0.5) -> Path:
    """A copy of `source` with the byte at fraction `at` of its length inverted."""
    data = bytearray(source.read_bytes())
    data[int(len(data) * at)] ^= 0xFF
    out.write_bytes(bytes(data))
    return out


def flash(capsys, *argv) -> tuple[int, str, str]:
    """`evbench flash ARGV` in this process: its exit code, stdout and stderr."""
    code = evbench(["flash", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err
