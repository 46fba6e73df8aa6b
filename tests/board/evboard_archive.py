"""The Debian archive the virtual board is built from, seen through apt itself.

A private apt state (its own sources list, package lists and download cache
under the build cache) resolves and downloads arm64 packages without
touching the host's apt configuration or adding a foreign architecture.
"""

import re
import subprocess
from pathlib import Path

SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))


class BoardBuildError(Exception):
    """The virtual board could not be built; the message says what to do."""


def host_mirror() -> str:
    """The Debian mirror the host's apt uses (the network here reaches only that one)."""
    files = [SOURCES[0], *sorted(SOURCES[1].glob("*"))] if SOURCES[1].is_dir() else [SOURCES[0]]
    for path in files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for match in re.finditer(
            r"(?:URIs:|^deb(?:\s+\[[^\]]*\])?)\s+(\S+/debian)/?\s", text, re.M
        ):
            return match.group(1)
    return DEFAULT_MIRROR


class Archive:
    """arm64 packages of one suite, resolved and fetched with a private apt state."""

    def __init__(self, state_dir: Path, mirror: str, suite: str = SUITE) -> None:
        self.state_dir = state_dir
        self.mirror = mirror
        self.suite = suite

    def _options(self) -> list[str]:
        d = self.state_dir
        return [
            f"-oDir::State={d}",
            f"-oDir::State::Lists={d}/lists",
            f"-oDir::State::status={d}/status",
            f"-oDir::Cache={d}",
            f"-oDir::Cache::archives={d}/archives",
            f"-oDir::Etc::SourceList={d}/sources.list",
            "-oDir::Etc::SourceParts=/nonexistent",
            "-oAPT::Architecture=arm64",
            "-oAPT::Architectures::=arm64",
            "-oDebug::NoLocking=1",
        ]

    def _apt(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        try:
            done = subprocess.run(
                [tool, *self._options(), *args],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=600,
            )
        except FileNotFoundError as e:
            raise BoardBuildError(f"{tool} is missing: build the board on Debian") from e
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise BoardBuildError(f"{tool} {' '.join(args)} failed: {last}")
        return done.stdout

    def update(self) -> None:
        """Fetch the suite's arm64 package list (only changed lists are downloaded)."""
        for sub in ("lists/partial", "archives/partial"):
            (self.state_dir / sub).mkdir(parents=True, exist_ok=True)
        (self.state_dir / "status").touch()
        (self.state_dir / "sources.list").write_text(
            f"deb [arch=arm64 signed-by={KEYRING}] {self.mirror} {self.suite} main\n"
        )
        self._apt("apt-get", "-qq", "update")

    def field(self, package: str, name: str) -> str:
        """One field of the candidate version's record, e.g. Version or Depends."""
        record = self._apt("apt-cache", "show", "--no-all-versions", package)
        match = re.search(rf"^{name}: (.*)$", record, re.M)
        if match is None:
            raise BoardBuildError(f"{package} in {self.suite} has no {name} field")
        return match.group(1).strip()

    def kernel_package(self) -> tuple[str, str]:
        """The versioned kernel package linux-image-arm64 points at, and its version."""
        depends = self.field("linux-image-arm64", "Depends")
        match = re.match(r"(linux-image-[0-9][^\s,(]*-arm64)", depends)
        if match is None:
            raise BoardBuildError(f"cannot read the kernel from linux-image-arm64: {depends}")
        package = match.group(1)
        return package, self.field(package, "Version")

    def download(self, package: str, into: Path) -> Path:
        """Download one package's .deb into a directory and return its path."""
        into.mkdir(parents=True, exist_ok=True)
        self._apt("apt-get", "-qq", "download", package, cwd=into)
        found = sorted(into.glob(f"{package}_*_arm64.deb"))
        if not found:
            raise BoardBuildError(f"apt-get download {package} left no .deb in {into}")
        return found[-1]
