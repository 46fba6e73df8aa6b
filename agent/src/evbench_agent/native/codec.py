"""A native runtime as a codec of the registry (evbench_agent.codecs).

Binding starts the runtime's harness. The harness receives each payload as
the Python codecs carry it (protobuf binary from the message, or the json
codec's compact text), parses it once, outside any timed region, and answers
with its own encoding's length and digest. A timed operation is one request:
the harness runs the loops, and the agent checks what it says it produced
against what it announced (an encoding's length and digest, the decoded
value's re-encoding, the number of leaves the Python codecs read).
"""

from __future__ import annotations

import functools
import logging
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from evbench_agent.native import runtimes
from evbench_agent.native.runtimes import Runtime
from evbench_core.analysis import metrics

if TYPE_CHECKING:
    from evbench_agent.native.protocol import Harness, Loaded
    from evbench_agent.payloads import Payload, Profile
    from evbench_agent.payloads.protobuf_types import Descriptor

log = logging.getLogger(__name__)

#: The schemas the harnesses carry (their generated code comes from these).
NATIVE_FILES = ("ev_data.proto", "ev_frame.proto", "shapes.proto", "link.proto")
#: evbench_agent.codecs' names for what a codec encodes.
_PLAIN, _MESSAGE = "plain", "message"


@dataclass(frozen=True)
class Expected:
    """A loaded payload and what its operations must report."""

    loaded: Loaded
    leaves: int


class NativeOperation:
    """One operation of a harness, timed by the harness (`time_loops`)."""

    def __init__(self, harness: Harness, operation: str) -> None:
        self.harness, self.operation = harness, operation

    def time_loops(self, expected: Expected, loops: int) -> int:
        timing = self.harness.time(self.operation, expected.loaded, loops)
        loaded, name = expected.loaded, self.harness.name
        if self.operation == "decode_access":
            wanted = ("leaves", expected.leaves, loaded.digest)
        else:
            wanted = ("bytes", loaded.length, loaded.digest)
        if (timing.size, timing.digest) != wanted[1:]:
            from evbench_agent.native.protocol import HarnessError

            raise HarnessError(
                f"native codec {name} says its {self.operation} of payload {loaded.index} "
                f"gave {timing.size} {wanted[0]} ({timing.digest}); its encoding is "
                f"{loaded.length} bytes ({loaded.digest})"
                + (
                    f" and the payload has {expected.leaves} leaves"
                    if wanted[0] == "leaves"
                    else ""
                )
            )
        if timing.elapsed_ns <= 0:
            from evbench_agent.native.protocol import HarnessError

            raise HarnessError(f"native codec {name} timed {loops} loops at {timing.elapsed_ns} ns")
        return timing.elapsed_ns

    def __call__(self, expected: Expected) -> int:
        return self.time_loops(expected, 1)


@dataclass
class NativeBound:
    """A native codec ready for one profile: its harness, and how to hand payloads over."""

    codec: NativeCodec
    profile: Profile
    harness: Harness
    carries: str
    exchange: Callable[[Any], bytes]
    leaves: Callable[[Any], int]
    _loaded: dict[bytes, Loaded] = field(default_factory=dict)

    def data(self, payload: Payload) -> Any:
        return payload.message if self.carries == _MESSAGE else payload.plain

    def _load(self, value: Any) -> Loaded:
        data = self.exchange(value)
        loaded = self._loaded.get(data)
        if loaded is None:
            loaded = self.harness.load(
                self.profile.message_type.DESCRIPTOR.full_name,
                access_path(self.profile, self.carries),
                data,
            )
            self._loaded[data] = loaded
        return loaded

    def encode(self, value: Any) -> bytes:
        """The harness's encoding of one payload (for the sizes: measured once, exact)."""
        return self.harness.encoded(self._load(value))

    def decode(self, blob: bytes) -> NoReturn:
        """No Python decode: a native codec's decoding is timed in its harness only (the
        link suite's Python client and responder cannot use it)."""
        from evbench_core.errors import UserError

        raise UserError(
            f"native codec {self.codec.name} decodes only in its harness",
            hint="the link suite measures the Python codecs (docs/native-codecs.md)",
        )

    def access(self, value: Any) -> int:
        return self.decode(value)

    def native_operations(
        self, items: list[Payload]
    ) -> dict[str, tuple[NativeOperation, list[Expected]]]:
        """The suite's timed operations: each takes a payload the harness holds."""
        expected = [
            Expected(self._load(self.data(item)), self.leaves(self.data(item))) for item in items
        ]
        return {
            operation: (NativeOperation(self.harness, operation), expected)
            for operation in metrics.CODEC_TIMED
        }

    def close(self) -> None:
        self.harness.close()


def access_path(profile: Profile, carries: str) -> str | None:
    """The path decode_access reads, as the harness takes it: JSON keys, or field numbers."""
    if not profile.access:
        return None
    if carries == _PLAIN:
        return ".".join(profile.access)
    numbers: list[str] = []
    descriptor: Descriptor | None = profile.message_type.DESCRIPTOR
    for name in profile.access:
        if descriptor is None:
            raise ValueError(f"profile {profile.name}'s access path {profile.access} is too deep")
        found = descriptor.fields_by_name[name]
        numbers.append(str(found.number))
        descriptor = found.message_type
    return ".".join(numbers)


@dataclass(frozen=True)
class NativeCodec:
    """A codec whose operations run in a native harness (same interface as codecs.Codec)."""

    name: str
    runtime: Runtime
    description: str
    by_default = False  # a run measures native codecs only when asked for by name

    @property
    def carries(self) -> str:
        return _MESSAGE if self.runtime.format == runtimes.PROTOBUF else _PLAIN

    @property
    def module(self) -> str:
        return self.runtime.executable_name

    def executable(self) -> str | None:
        return runtimes.find(self.runtime)

    def available(self) -> bool:
        return self.executable() is not None

    def is_installed(self) -> bool:
        return self.available()

    def unavailable_reason(self) -> str:
        dirs = ", ".join(str(d) for d in runtimes.search_dirs())
        return f"no harness {self.runtime.executable_name} in {dirs}"

    def can_carry(self, profile: Profile) -> bool:
        descriptor = profile.message_type.DESCRIPTOR
        return descriptor.file.name in NATIVE_FILES and descriptor.full_name.startswith("evbench.")

    def about(self) -> dict[str, str]:
        executable = self.executable()
        return runtimes.about(executable) if executable else {}

    def version(self) -> str:
        about = self.about()
        if not about:
            return "unknown"
        return (
            f"{about.get('library')} {about.get('version')} "
            f"({self.runtime.language}, {about.get('compiler')}, {about.get('flags')})"
        )

    def bind(self, profile: Profile) -> NativeBound:
        from evbench_agent.native.protocol import Harness
        from evbench_core.errors import UserError

        if not self.can_carry(profile):
            raise UserError(
                f"native codec {self.name} cannot carry profile {profile.name!r}",
                hint="native codecs carry the profiles of protos/ only",
            )
        executable = self.executable()
        if executable is None:
            raise UserError(f"native codec {self.name}: {self.unavailable_reason()}")
        if _python_bind is None:
            raise RuntimeError("evbench_agent.codecs has not registered the Python codecs")
        python = _python_bind("protobuf" if self.carries == _MESSAGE else "json", profile)
        warn_if_emulated(self.name, executable)
        harness = Harness(self.name, executable)
        about = harness.about
        if about.get("format") != self.runtime.format:
            harness.close()
            from evbench_agent.native.protocol import HarnessError

            raise HarnessError(
                f"native codec {self.name}: {executable} carries {about.get('format')!r}, "
                f"not {self.runtime.format}"
            )
        return NativeBound(self, profile, harness, self.carries, python.encode, python.access)


@functools.cache
def warn_if_emulated(name: str, executable: str) -> bool:
    """Say (a warning, once per harness) when `executable` is built for another
    architecture than this machine's: binfmt_misc then runs it under emulation
    (qemu-user), and its timings are the emulator's, many times slower than the board's.
    Whether it is; the manifest records each harness's architecture, and the report
    says the same (evbench.report.unrepresentative)."""
    built_for, machine = runtimes.architecture(executable), platform.machine()
    if built_for is None or runtimes.runs_natively(built_for, machine):
        return False
    log.warning(
        "native codec %s: %s is built for %s, and this machine is %s: it runs under "
        "emulation (qemu-user), so its timings are not this machine's. Build native/ for "
        "this machine (docs/native-codecs.md), or measure it on a %s board",
        name, executable, built_for, machine, built_for,
    )  # fmt: skip
    return True


#: Binds a Python codec by name (set by evbench_agent.codecs, which imports this module:
#: the native side hands payloads over as the Python codecs carry them).
_python_bind: Callable[[str, Profile], Any] | None = None


def use_python_codecs(bind: Callable[[str, Profile], Any]) -> None:
    global _python_bind
    _python_bind = bind


CODECS = {
    runtime.name: NativeCodec(runtime.name, runtime, runtime.description)
    for runtime in runtimes.RUNTIMES.values()
}


def describe_installed() -> dict[str, dict[str, str]]:
    """Each installed native codec as the manifest states it: its harness and what the
    harness says it is (library, version, compiler, flags)."""
    described = {}
    for name, codec in CODECS.items():
        executable = codec.executable()
        if executable is not None:
            built_for = runtimes.architecture(executable)
            described[name] = {
                "language": codec.runtime.language,
                "executable": executable,
                **codec.about(),
                # what its ELF header says (none for a file that is not ELF)
                **({"architecture": built_for} if built_for else {}),
            }
    return described
