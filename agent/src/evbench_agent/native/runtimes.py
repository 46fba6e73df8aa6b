"""The native runtimes evbench knows, and where their harness executables are.

A harness is found, in order, in the directories of EVBENCH_NATIVE_DIR (a
path list), beside a deployed agent (`evbench deploy --native DIR` puts them in
libexec/evbench-native next to the agent's zipapp), in this Python's prefix
(`cmake --install native/build --prefix .venv`) and in the system's (the
meta-evbench recipe installs to /usr/libexec/evbench-native). Its executable
is named after the codec: `c:protobuf-c` is `evbench-native-c-protobuf-c`. The
link suite's C responder (`--responder c`), `evbench-link-responder`, is found
the same way: the native build makes it and installs it beside the harnesses.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: What a runtime carries: protobuf binary, or JSON text (as evbench_agent.codecs says it).
PROTOBUF, JSON = "protobuf", "json"
#: Where installs put the harnesses, under a prefix.
LIBEXEC = Path("libexec") / "evbench-native"
#: The file the zipapp's first start writes last into the copy of the archive it unpacks
#: beside it (evbench.usecases.deploy.ZIPAPP_MAIN): a directory holding it is a whole copy.
UNPACKED_MARKER = "UNPACKED"
ENVIRONMENT = "EVBENCH_NATIVE_DIR"
#: The link suite's responder in C (native/responder), installed beside the harnesses.
RESPONDER = "evbench-link-responder"
#: Seconds `--about` may take (it prints one line).
ABOUT_WAIT_S = 5.0


@dataclass(frozen=True)
class Runtime:
    name: str
    language: str
    format: str
    library: str
    description: str

    @property
    def executable_name(self) -> str:
        return "evbench-native-" + self.name.replace(":", "-")

    @property
    def display_name(self) -> str:
        """What tables and answers call it: the format, then the runtime."""
        return f"{'Protobuf' if self.format == PROTOBUF else 'JSON'} ({self.library})"


RUNTIMES = {
    runtime.name: runtime
    for runtime in (
        Runtime("c:protobuf-c", "C", PROTOBUF, "protobuf-c", "protobuf-c, pack/unpack"),
        Runtime("c:cjson", "C", JSON, "cJSON", "cJSON, PrintUnformatted/ParseWithLength"),
        Runtime("c:nanopb", "C", PROTOBUF, "nanopb", "nanopb, static sizes, pb_encode/pb_decode"),
        Runtime("cpp:protobuf", "C++", PROTOBUF, "libprotobuf", "libprotobuf, generated classes"),
        Runtime("cpp:nlohmann", "C++", JSON, "nlohmann::json", "nlohmann::json, dump/parse"),
    )
}


def deployed_dir() -> Path | None:
    """Where `evbench deploy --native` puts harnesses: beside the agent's zipapp, when the
    agent runs from one (its package then lives inside that file, or in the copy of it
    unpacked beside it)."""
    import evbench_agent

    root = Path(evbench_agent.__file__).parent.parent
    deployed = root.is_file() or (root / UNPACKED_MARKER).is_file()
    return root.parent / LIBEXEC if deployed else None


def search_dirs() -> list[Path]:
    dirs = [Path(p) for p in os.environ.get(ENVIRONMENT, "").split(os.pathsep) if p]
    deployed = deployed_dir()
    dirs += [deployed] if deployed else []
    dirs += [Path(sys.prefix) / LIBEXEC, Path("/usr") / LIBEXEC]
    return dirs


def find_executable(name: str) -> str | None:
    """The first executable file `name` of the search directories, or None."""
    for directory in search_dirs():
        candidate = directory / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def find(runtime: Runtime) -> str | None:
    """The harness executable of `runtime`, or None when none is installed."""
    return find_executable(runtime.executable_name)


@functools.cache
def about(executable: str) -> dict[str, str]:
    """What a harness says of itself (`--about`): library, version, compiler, flags.

    An empty dict when it cannot say (the run itself then reports the harness's error).
    """
    try:
        done = subprocess.run(
            [executable, "--about"], capture_output=True, timeout=ABOUT_WAIT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        log.warning("%s --about: %s", executable, error)
        return {}
    fields = done.stdout.decode("ascii", "replace").strip().split("\t")
    if done.returncode != 0 or not fields or fields[0] != "ok":
        log.warning("%s --about answered %r", executable, done.stdout[:200])
        return {}
    return dict(field.partition("=")[::2] for field in fields[1:])


#: ELF's e_machine values for the architectures a harness may be built for, named as
#: `uname -m` (platform.machine()) names them (riscv gets its width from the ELF class).
_ELF_MACHINES = {
    3: "i386",
    8: "mips",
    20: "ppc",
    21: "ppc64",
    22: "s390",
    40: "arm",
    62: "x86_64",
    183: "aarch64",
    243: "riscv",
}


def architecture(executable: str) -> str | None:
    """The architecture `executable` is built for, read from its ELF header (e_machine),
    without running it; None when it is not an ELF file (a script) or cannot be read."""
    try:
        with open(executable, "rb") as file:
            header = file.read(20)
    except OSError:
        return None
    if len(header) < 20 or header[:4] != b"\x7fELF" or header[5] not in (1, 2):
        return None
    machine = int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")
    name = _ELF_MACHINES.get(machine, f"ELF machine {machine}")
    return name + ("64" if header[4] == 2 else "32") if name == "riscv" else name


def _family(machine: str) -> str:
    """An architecture's family, whatever spelling names it: uname's (armv7l, i686,
    ppc64le, s390x), Debian's (arm64, amd64) or the ELF header's (architecture())."""
    name = machine.lower()
    for family, spellings in _FAMILIES:
        if re.fullmatch(spellings, name):
            return family
    return name


_FAMILIES = (
    ("aarch64", r"aarch64(_be)?|arm64"),
    ("arm", r"arm.*"),
    ("x86_64", r"x86_64|amd64|x64"),
    ("i386", r"i[3-6]86|x86"),
    ("ppc64", r"ppc64(le)?|powerpc64(le)?"),
    ("ppc", r"ppc|powerpc"),
    ("s390", r"s390x?"),
    ("mips", r"mips.*"),
)


def runs_natively(built_for: str, machine: str) -> bool:
    """Whether an executable built for `built_for` runs on a `machine` (platform.machine())
    without emulation (qemu-user through binfmt_misc runs it, many times slower)."""
    return _family(built_for) == _family(machine)


def describe_responder() -> dict[str, str] | None:
    """The installed C link responder as the manifest states it: its executable and what
    its `--about` says (responder, ack_codecs, ack_profiles); None when none is installed."""
    executable = find_executable(RESPONDER)
    return None if executable is None else {"executable": executable, **about(executable)}


def display_name(codec: str) -> str | None:
    """A native codec's display name ("Protobuf (protobuf-c)"), or None for any other codec."""
    runtime = RUNTIMES.get(codec)
    return runtime.display_name if runtime else None


__all__ = [
    "JSON",
    "LIBEXEC",
    "PROTOBUF",
    "RESPONDER",
    "RUNTIMES",
    "UNPACKED_MARKER",
    "architecture",
    "display_name",
    "runs_natively",
]
