"""Native builds for the tests, each configuration built once a session under a file lock
shared by pytest-xdist workers: native/ by the documented command, the C link responder, and
an aarch64 nlohmann::json harness cross-built as docs/native-codecs.md says; the link
protocol's varints and acks worked by hand."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import ROOT, require, require_command

from evbench_agent.link import service
from evbench_agent.native import runtimes

CODEC = "cpp:nlohmann"
RESPONDER = "evbench-link-responder"
TOOLCHAIN = ROOT / "native" / "cmake" / "aarch64-linux-gnu.cmake"


#: The options of the two configurations the docs build (docs/native-codecs.md, docs/link.md).
DOCUMENTED = ("-DCMAKE_BUILD_TYPE=Release",)
AARCH64 = (f"-DEVBENCH_NATIVE_CODECS={CODEC}", f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}",
           "-DEVBENCH_STATIC=ON")  # fmt: skip
#: Where the docs build them: a test builds there, so that the docs' commands (test_docs.py,
#: under documented_builds_locked) find it made instead of making it again (30 CPU s).
DOCUMENTED_DIRECTORIES = {
    DOCUMENTED: ROOT / "native" / "build",
    AARCH64: ROOT / "native" / "build-aarch64",
}

#: A directory kept for a whole `tests/run-tiers.sh` run (it sets it), so the e2e tier
#: reuses the integration tier's builds; without it, the pytest session's own.
BUILDS_ENVIRONMENT = "EVBENCH_TEST_BUILDS"


def _builds_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    named = os.environ.get(BUILDS_ENVIRONMENT)
    if named:
        return Path(named) / "native"
    base = tmp_path_factory.getbasetemp()
    # pytest-xdist gives each worker a directory of its own in the session's
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base / "native-builds"


@contextlib.contextmanager
def _configuration_locked(
    tmp_path_factory: pytest.TempPathFactory, options: tuple[str, ...]
) -> Iterator[Path]:
    """The file lock of the configuration `options` held; its build directory. A documented
    one's lock is in its directory, so that two pytest sessions share it too."""
    root = _builds_root(tmp_path_factory)
    key = hashlib.sha256("\0".join((str(ROOT), *options)).encode()).hexdigest()[:16]
    build = DOCUMENTED_DIRECTORIES.get(options, root / key)
    build.mkdir(parents=True, exist_ok=True)
    with open(build / ".tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield build


@contextlib.contextmanager
def documented_builds_locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Both documented configurations' locks held (in one order, so never a deadlock: a
    build holds only its own): the docs' commands build there while no test does."""
    with contextlib.ExitStack() as held:
        for options in DOCUMENTED_DIRECTORIES:
            held.enter_context(_configuration_locked(tmp_path_factory, options))
        yield


def shared_build(
    tmp_path_factory: pytest.TempPathFactory, options: tuple[str, ...], targets: tuple[str, ...]
) -> Path:
    """native/ configured with `options`, `targets` built (all when none) in that
    configuration's one directory, under its file lock (another worker waits, then reuses
    it). A runtime's missing package fails the test by name."""
    cmake = require_command("cmake")
    with _configuration_locked(tmp_path_factory, options) as build:
        configure = subprocess.run(
            [cmake, "-S", str(ROOT / "native"), "-B", str(build), *options],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        require(
            configure.returncode == 0, f"a native runtime's package ({configure.stderr[-800:]})"
        )
        chosen = [arg for target in targets for arg in ("--target", target)]
        made = subprocess.run(
            [cmake, "--build", str(build), "-j2", *chosen],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    return build


def build_documented(
    tmp_path_factory: pytest.TempPathFactory, *targets: str, options: tuple[str, ...] = ()
) -> Path:
    """native/ by the documented command (Release) and `options`; its build directory."""
    return shared_build(tmp_path_factory, (*DOCUMENTED, *options), targets)


def build_responder(tmp_path_factory: pytest.TempPathFactory, codecs: str | None = None) -> Path:
    """The C link responder of the documented build (only the runtimes `codecs` when given)."""
    options = () if codecs is None else (f"-DEVBENCH_NATIVE_CODECS={codecs}",)
    return build_documented(tmp_path_factory, RESPONDER, options=options) / RESPONDER


class NativeResponder:
    """An evbench-link-responder and the address its `listening` line gave; its stderr goes to
    a file (a crowd's drop lines would fill a pipe nobody reads)."""

    def __init__(self, path: Path, *options: str, env: dict[str, str] | None = None) -> None:
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by stop())
        argv = [str(path), "--port", "0", *options]
        self.process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env
        )
        assert self.process.stdout is not None  # stdout=PIPE
        event = json.loads(self.process.stdout.readline())
        assert event["event"] == "listening", event
        self.address = (event["host"], int(event["port"]))

    def __enter__(self) -> NativeResponder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def alive(self) -> bool:
        return self.process.poll() is None

    def stderr(self) -> str:
        """What it has logged so far."""
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> str:
        """SIGTERM; it exits 0 within 10 s; its standard error (stopping twice is once)."""
        if self.process.returncode is None:
            self.process.terminate()
            self.process.communicate(timeout=10)
        if not self.log.closed:
            self.logged = self.stderr()
            self.log.close()
        assert self.process.returncode == 0, self.logged
        return self.logged


#: The link responders the limit tests run against: `evbench-agent serve` and the C one.
RESPONDER_KINDS = ("python", "c")


@contextlib.contextmanager
def link_responder(
    kind: str, native_path: Callable[[], Path], max_connections: int = 16
) -> Iterator[service.ResponderProcess | NativeResponder]:
    """A responder of `kind` (RESPONDER_KINDS) listening on loopback with its defaults but
    `max_connections`; `native_path()` builds the C one (called only for it)."""
    if kind == "python":
        with service.start_responder(max_connections=max_connections) as python:
            yield python
    else:
        with NativeResponder(native_path(), "--max-connections", str(max_connections)) as native:
            yield native


def build_host_harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CODEC harness of the documented build for this machine (for EVBENCH_NATIVE_DIR)."""
    return build_documented(tmp_path_factory, runtimes.RUNTIMES[CODEC].executable_name)


def build_aarch64_harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CODEC harness and the C link responder (echo mode only) cross-built, a directory for
    `evbench deploy --native`; `file` confirms aarch64, statically linked executables."""
    require_command("aarch64-linux-gnu-g++")
    build = shared_build(tmp_path_factory, AARCH64, ())
    for name in (runtimes.RUNTIMES[CODEC].executable_name, RESPONDER):
        described = subprocess.run(["file", str(build / name)], capture_output=True, text=True)
        assert "ARM aarch64" in described.stdout, described.stdout + described.stderr
        assert "statically linked" in described.stdout, described.stdout
    return build


def varint(value: int) -> bytes:
    """A protobuf base-128 varint, worked from the encoding's definition."""
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        value |= (data[at] & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if data[at - 1] < 0x80:
            return value, at


def expected_ack(codec: str, sequence: int, receive_ns: int) -> bytes:
    """docs/link.md's ack by hand: evbench.link.Ack (sequence = 1, receive_ns = 2, uint64,
    proto3: a zero is not written) for protobuf, a compact JSON map for json."""
    if codec == "json":
        return f'{{"sequence":{sequence},"receive_ns":{receive_ns}}}'.encode()
    fields = [(1, sequence), (2, receive_ns)]
    return b"".join(bytes([number << 3]) + varint(value) for number, value in fields if value)


def receipt_time(codec: str, ack: bytes) -> int:
    """The ack's receive_ns, read without the module's decoder."""
    if codec == "json":
        return int(json.loads(ack)["receive_ns"])
    fields, at = {}, 0
    while at < len(ack):
        tag, at = read_varint(ack, at)
        assert tag & 7 == 0, ack  # varints only
        fields[tag >> 3], at = read_varint(ack, at)
    return fields.get(2, 0)
