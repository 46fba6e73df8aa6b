"""distribution_version against hand-made metadata as pip (dist-info) and Debian/Yocto setuptools
(egg-info directory or file) lay it out, and against importlib.metadata."""

import importlib.metadata
from pathlib import Path

from evbench_agent import codecs
from evbench_agent.platform.installed_version import distribution_version

HEADERS = "Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: x\n\n"


def _dist_info(site: Path, name: str, version: str, body: str = "") -> None:
    directory = site / f"{name}-{version}.dist-info"
    directory.mkdir(parents=True)
    (directory / "METADATA").write_text(HEADERS.format(name=name, version=version) + body)


def test_a_wheel_s_dist_info_gives_its_version_whatever_the_name_s_spelling(tmp_path):
    _dist_info(tmp_path, "foo_bar", "1.2.3", body="Version: 9.9 (a line of the description)\n")
    for spelling in ("foo_bar", "foo-bar", "Foo.Bar", "FOO__bar"):
        assert distribution_version(spelling, [str(tmp_path)]) == "1.2.3", spelling
    # A version only after the headers is not the version.
    (tmp_path / "odd-1.0.dist-info").mkdir()
    (tmp_path / "odd-1.0.dist-info" / "METADATA").write_text("Name: odd\n\nVersion: 1.0\n")
    assert distribution_version("odd", [str(tmp_path)]) is None


def test_debian_egg_info_directory_and_file(tmp_path):
    (tmp_path / "protobuf-3.21.12.egg-info").mkdir()
    egg_info = tmp_path / "protobuf-3.21.12.egg-info" / "PKG-INFO"
    egg_info.write_text(HEADERS.format(name="protobuf", version="3.21.12"))
    (tmp_path / "pyserial-3.5.egg-info").write_text(HEADERS.format(name="pyserial", version="3.5"))
    assert distribution_version("protobuf", [str(tmp_path)]) == "3.21.12"
    assert distribution_version("pyserial", [str(tmp_path)]) == "3.5"


def test_the_first_on_the_path_wins_and_absent_is_none(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    _dist_info(first, "cbor2", "5.0.0")
    _dist_info(second, "cbor2", "6.3.0")
    path = [str(tmp_path / "missing"), str(tmp_path / "some.zip"), str(first), str(second)]
    assert distribution_version("cbor2", path) == "5.0.0"
    assert distribution_version("cbor2", path[::-1]) == "6.3.0"
    assert distribution_version("msgpack", path) is None


def test_every_installed_codec_library_agrees_with_importlib_metadata():
    compared = 0
    for codec in codecs.CODECS.values():
        if codec.distribution is None:
            continue
        try:
            expected = importlib.metadata.version(codec.distribution)
        except importlib.metadata.PackageNotFoundError:
            expected = None
        assert distribution_version(codec.distribution) == expected, codec.distribution
        compared += expected is not None
    assert compared >= 2  # protobuf and the optional codecs requirements-dev installs
