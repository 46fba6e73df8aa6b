"""Build the virtual ARM64 board, or reuse the cached one.

    python tests/board/evboard_image.py   # build (about 6 min) or reuse; prints its directory

The board is cached under $EVBENCH_BOARD_CACHE (default
~/.cache/evbench/board, outside any clone, so a fresh clone on the same
machine reuses it) in boards/KEY, where KEY hashes
everything that goes into it: these build scripts, the suite, and the
versions the archive resolves today for the kernel and the board's packages
(a point release replaces them, so the key follows what is really there).
A second run spends a few seconds asking apt for those versions and reuses
the image. Without a network it reuses the newest board built, and says so.
"""

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from evboard_archive import SUITE, Archive, BoardBuildError, host_mirror
from evboard_kernel import build_initramfs, extract_kernel, install_modules
from evboard_rootfs import (
    DEBOOTSTRAP_OPTIONS,
    PACKAGES,
    configure,
    debootstrap,
    make_disk,
    unmount_below,
)

HERE = Path(__file__).resolve().parent
CACHE = Path(
    os.environ.get("EVBENCH_BOARD_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evbench" / "board"
)
INPUTS = (
    "evboard_archive.py",
    "evboard_kernel.py",
    "evboard_rootfs.py",
    "evboard_image.py",
    "evboard_init.sh",
)
BOARD_FILES = ("vmlinuz", "initramfs.gz", "disk.img", "id_ed25519", "board.json")


@dataclass(frozen=True)
class BoardImage:
    """A built board: everything qemu.py needs to boot it and log in."""

    directory: Path

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initramfs(self) -> Path:
        return self.directory / "initramfs.gz"

    @property
    def disk(self) -> Path:
        return self.directory / "disk.img"

    @property
    def ssh_key(self) -> Path:
        return self.directory / "id_ed25519"

    @property
    def info(self) -> dict:
        return json.loads((self.directory / "board.json").read_text())


def _say(message: str) -> None:
    print(f"evboard: {message}", file=sys.stderr, flush=True)


def resolve_inputs(archive: Archive) -> dict:
    """What the board is made of today: scripts' hashes and resolved versions."""
    archive.update()
    kernel_package, kernel_version = archive.kernel_package()
    scripts = {name: hashlib.sha256((HERE / name).read_bytes()).hexdigest() for name in INPUTS}
    versions = {package: archive.field(package, "Version") for package in PACKAGES}
    return {
        "suite": SUITE,
        "kernel_package": kernel_package,
        "kernel_version": kernel_version,
        "packages": versions,
        "scripts": scripts,
    }


def cache_key(inputs: dict) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]


def _complete(directory: Path) -> bool:
    return all((directory / name).exists() for name in BOARD_FILES)


def newest_board(cache: Path) -> BoardImage | None:
    boards = [d for d in (cache / "boards").glob("*") if d.is_dir() and _complete(d)]
    if not boards:
        return None
    return BoardImage(max(boards, key=lambda d: (d / "board.json").stat().st_mtime))


def build(archive: Archive, inputs: dict, target: Path) -> None:
    """Build every board file into target (a fresh directory)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="evboard-", dir=target) as tmp:
        work = Path(tmp)
        try:
            info = _build_into(archive, inputs, work, target)
        finally:
            unmount_below(work)
    info["build_seconds"] = round(time.monotonic() - started, 1)
    (target / "board.json").write_text(json.dumps(info, indent=2) + "\n")


def _base_root(root: Path, archive: Archive, inputs: dict, log: Path) -> None:
    """debootstrap into root, or unpack the same debootstrap saved by an earlier build
    (named by the packages' versions), so changing only the board's configuration
    costs a minute instead of a debootstrap."""
    what = [inputs["suite"], inputs["packages"], DEBOOTSTRAP_OPTIONS]
    key = hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]
    saved = CACHE / "debootstrap" / f"{key}.tar"
    root.mkdir()
    if saved.exists():
        _say(f"unpacking the saved debootstrap {saved.name}")
        subprocess.run(
            ["tar", "--numeric-owner", "-xpf", str(saved), "-C", str(root)], check=True, timeout=600
        )
        return
    _say(f"debootstrap {SUITE} arm64 (about 5 minutes under emulation; log: {log})")
    debootstrap(root, archive.mirror, log)
    saved.parent.mkdir(exist_ok=True)
    for old in saved.parent.glob("*.tar"):
        old.unlink()  # one is enough; each is ~400 MB
    partial = saved.with_suffix(".partial")
    subprocess.run(
        ["tar", "--numeric-owner", "-cf", str(partial), "-C", str(root), "."],
        check=True,
        timeout=600,
    )
    partial.rename(saved)


def _build_into(archive: Archive, inputs: dict, work: Path, target: Path) -> dict:
    log = target / "build.log"
    _say(f"downloading {inputs['kernel_package']} {inputs['kernel_version']}")
    deb = archive.download(inputs["kernel_package"], CACHE / "debs")
    vmlinuz, module_dir = extract_kernel(deb, work / "kernel")
    shutil.copy2(vmlinuz, target / "vmlinuz")
    key_file = target / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "evboard-test", "-f", str(key_file)],
        check=True,
        timeout=60,
    )
    root = work / "root"
    _base_root(root, archive, inputs, log)
    configure(root, key_file.with_suffix(".pub").read_text(), log)
    host_key = (root / "etc/ssh/ssh_host_ed25519_key.pub").read_text().split()
    modules = build_initramfs(module_dir, root / "bin/busybox", target / "initramfs.gz")
    root_modules = install_modules(module_dir, root)
    _say("writing the ext4 disk image")
    make_disk(root, target / "disk.img", log)
    info = dict(inputs)
    info["host_key"] = f"{host_key[0]} {host_key[1]}"
    info["initramfs_modules"] = modules
    info["root_modules"] = root_modules
    return info


def ensure_board(cache: Path = CACHE) -> BoardImage:
    """The board for today's inputs: cached, or built now (one builder at a time)."""
    cache.mkdir(parents=True, exist_ok=True)
    archive = Archive(cache / "apt", host_mirror())
    with (cache / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            inputs = resolve_inputs(archive)
        except BoardBuildError as e:
            fallback = newest_board(cache)
            if fallback is None:
                raise BoardBuildError(f"{e}; no board is cached to fall back on") from e
            _say(f"{e}; reusing the newest cached board {fallback.directory.name}")
            return fallback
        board = BoardImage(cache / "boards" / cache_key(inputs))
        if _complete(board.directory):
            _say(f"reusing the cached board {board.directory}")
            return board
        partial = board.directory.with_name(board.directory.name + ".partial")
        if partial.exists():
            unmount_below(partial)
            shutil.rmtree(partial)
        partial.mkdir(parents=True)
        build(archive, inputs, partial)
        shutil.rmtree(board.directory, ignore_errors=True)
        partial.rename(board.directory)
        for old in (cache / "boards").glob("*"):
            if old != board.directory:
                shutil.rmtree(old, ignore_errors=True)  # one board is enough; each is ~1 GB
        _say(f"built {board.directory} in {board.info['build_seconds']} s")
        return board


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE, help="cache directory")
    args = parser.parse_args(argv)
    # Turn a kill into an exception, so a build cut short still ends debootstrap and unmounts.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        board = ensure_board(args.cache)
    except (BoardBuildError, subprocess.SubprocessError, OSError) as e:
        print(f"evboard: error: {e}", file=sys.stderr)
        return 1
    print(board.directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
