"""Image streams: every supported compression, read forward only, and damaged streams."""

import pytest
from flash_images import COMPRESSORS, SMALL_SIZE, flip_byte, module_images

from evbench.flash.source import CorruptImage, ImageSource
from evbench_core.errors import UserError

images = module_images


def collect(source: ImageSource, spans) -> bytes:
    pieces = list(source.chunks(spans))
    offsets = [offset for offset, _ in pieces]
    assert offsets == sorted(offsets), "a forward-only stream yields increasing offsets"
    return b"".join(data for _, data in pieces)


@pytest.mark.parametrize("kind", ["plain", *COMPRESSORS])
def test_every_format_streams_the_same_bytes(images, kind):
    expected = images["plain"].read_bytes()
    spans = [(4096, 8192), (3 * 1024 * 1024, 300_000), (SMALL_SIZE - 1000, 1000)]
    with ImageSource(images[kind], SMALL_SIZE) as source:
        assert source.compression == {"zst": "zstd"}.get(kind, kind)
        got = collect(source, spans)
    assert got == b"".join(expected[o : o + n] for o, n in spans)
    with ImageSource(images[kind]) as whole:
        assert collect(whole, [(0, None)]) == expected


@pytest.mark.parametrize("kind", list(COMPRESSORS))
@pytest.mark.parametrize("damage", ["a flipped byte", "truncated"])
def test_a_damaged_stream_is_corrupt(images, kind, tmp_path, damage):
    damaged = tmp_path / images[kind].name
    if damage == "truncated":  # fails once it is read past the half it has
        damaged.write_bytes(images[kind].read_bytes()[: images[kind].stat().st_size // 2])
        spans, says = [(0, 4096), (SMALL_SIZE - 1000, 1000)], None
    else:
        spans, says = [(0, 4096)], "corrupt"
        flip_byte(images[kind], damaged)
    with ImageSource(damaged, SMALL_SIZE) as source, pytest.raises(CorruptImage, match=says):
        collect(source, spans)


def test_a_stream_longer_than_its_bmap_says_fails(images):
    expected = pytest.raises(CorruptImage, match=f"holds {SMALL_SIZE} bytes")
    with ImageSource(images["xz"], SMALL_SIZE - 4096) as source, expected:
        collect(source, [(0, 4096)])


def test_a_misnamed_file_is_refused(images, tmp_path):
    fake = tmp_path / "disk.img.xz"
    fake.write_bytes(images["gz"].read_bytes())
    with pytest.raises(CorruptImage, match="named as xz"):
        ImageSource(fake)


@pytest.mark.parametrize("kind", ["xz", "gz", "bz2", "zst"])
def test_without_the_command_python_decodes_or_zstd_is_refused(images, kind, monkeypatch, tmp_path):
    # A machine without xz/gzip/bzip2/zstd on PATH: Python's modules take over, zstd cannot.
    monkeypatch.setattr("evbench.flash.source.shutil.which", lambda _name: None)
    if kind == "zst":
        with pytest.raises(UserError, match="'zstd' command is missing"):
            collect(ImageSource(images[kind]), [(0, None)])
        return
    with ImageSource(images[kind], SMALL_SIZE) as source:
        assert collect(source, [(0, None)]) == images["plain"].read_bytes()
    damaged = flip_byte(images[kind], tmp_path / images[kind].name)
    with ImageSource(damaged, SMALL_SIZE) as source, pytest.raises(CorruptImage):
        collect(source, [(0, 4096)])
