"""Native builds for the tests: native/ built with the documented command, the C link
responder run from it, and a cross-built aarch64 native harness, as docs/native-codecs.md
says to build one for the AM62x: Debian's g++-aarch64-linux-gnu, the toolchain file
native/cmake/aarch64-linux-gnu.cmake and EVBENCH_STATIC=ON, so the board needs nothing but
the file.

The runtime is nlohmann::json's: header-only, so the cross-build needs no arm64 library
packages. tests/test_native_deploy.py runs it through qemu-user; the e2e tier on the QEMU board.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from conftest import ROOT, require, require_command

from evbench_agent.link import service
from evbench_agent.native import runtimes

CODEC = "cpp:nlohmann"
RESPONDER = "evbench-link-responder"
TOOLCHAIN = ROOT / "native" / "cmake" / "aarch64-linux-gnu.cmake"


def build_documented(build: Path, *targets: str, options: tuple[str, ...] = ()) -> None:
    """native/ configured and built into `build` with the documented command (Release) and
    `options`, only `targets` when given; a runtime's missing package fails the test by name."""
    cmake = require_command("cmake")
    configure = subprocess.run(
        [cmake, "-S", str(ROOT / "native"), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
         *options],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    require(configure.returncode == 0, f"a native runtime's package ({configure.stderr[-800:]})")
    chosen = [arg for target in targets for arg in ("--target", target)]
    made = subprocess.run(
        [cmake, "--build", str(build), "-j2", *chosen], capture_output=True, text=True, check=False
    )
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]


def build_responder(build: Path, codecs: str | None = None) -> Path:
    """native/ configured with the documented command into `build` (with only the runtimes
    `codecs` when given), only the C link responder built; its path."""
    options = () if codecs is None else (f"-DEVBENCH_NATIVE_CODECS={codecs}",)
    build_documented(build, RESPONDER, options=options)
    return build / RESPONDER


class NativeResponder:
    """An evbench-link-responder process and the address its `listening` line gave; its
    standard error goes to a file (a crowd's drop lines would fill a pipe nobody reads)."""

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


def _build(build: Path, *options: str) -> None:
    cmake = require_command("cmake")
    subprocess.run(
        [cmake, "-S", str(ROOT / "native"), "-B", str(build), f"-DEVBENCH_NATIVE_CODECS={CODEC}",
         "-DEVBENCH_LINK_RESPONDER=OFF", *options],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run([cmake, "--build", str(build)], check=True, capture_output=True)


def build_host_harness(build: Path) -> Path:
    """The CODEC harness built for this machine into `build` (for EVBENCH_NATIVE_DIR)."""
    _build(build)
    return build


def build_aarch64_harness(build: Path) -> Path:
    """Cross-build the CODEC harness into `build` (a directory for `evbench deploy --native`);
    `file` confirms an aarch64, statically linked executable."""
    require_command("aarch64-linux-gnu-g++")
    _build(build, f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}", "-DEVBENCH_STATIC=ON")
    harness = build / runtimes.RUNTIMES[CODEC].executable_name
    described = subprocess.run(["file", str(harness)], capture_output=True, text=True).stdout
    assert "ARM aarch64" in described and "statically linked" in described, described
    return build
