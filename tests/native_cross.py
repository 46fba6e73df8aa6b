"""Native builds for the tests: native/ built with the documented command, and a
cross-built aarch64 native harness, as docs/native-codecs.md says to build one for the
AM62x: Debian's g++-aarch64-linux-gnu, the toolchain file native/cmake/aarch64-linux-gnu.cmake
and EVBENCH_STATIC=ON, so the board needs nothing but the file.

The runtime is nlohmann::json's: header-only, so the cross-build needs no arm64 library
packages. tests/test_native_deploy.py runs it through qemu-user; the e2e tier on the QEMU board.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import ROOT, require, require_command

from evbench_agent.native import runtimes

CODEC = "cpp:nlohmann"
TOOLCHAIN = ROOT / "native" / "cmake" / "aarch64-linux-gnu.cmake"


def build_documented(build: Path, *targets: str) -> None:
    """native/ configured and built into `build` with the documented command (Release),
    only `targets` when given; a runtime's missing package fails the test by name."""
    cmake = require_command("cmake")
    configure = subprocess.run(
        [cmake, "-S", str(ROOT / "native"), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    require(configure.returncode == 0, f"a native runtime's package ({configure.stderr[-800:]})")
    chosen = [arg for target in targets for arg in ("--target", target)]
    made = subprocess.run(
        [cmake, "--build", str(build), "-j2", *chosen], capture_output=True, text=True, check=False
    )
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]


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
