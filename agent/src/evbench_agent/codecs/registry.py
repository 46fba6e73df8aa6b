"""The codec registry: what a codec is, `@codec` that declares one, and the look-ups.

Each codec is declared by `@codec` on its `bind(module, profile)` in a module of its
own in this package, collected by `collect` (the package's `__init__` calls it), so
that a new codec is one new module and no list to extend. A codec binds to a
profile once, outside any timed region, and hands back plain callables so that the
timed loops call the library and nothing else.
"""

from __future__ import annotations

import importlib
import importlib.util
import platform
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

from evbench_agent.native import codec as native_codec
from evbench_agent.native.codec import CODECS as NATIVE_CODECS
from evbench_agent.native.codec import NativeCodec
from evbench_agent.payloads import Payload, Profile, access
from evbench_agent.platform import installed_version

# The A/A copy's name is the core's (a record names it); exported here with the codecs.
from evbench_core import extensions
from evbench_core.analysis.identity import COPY_SUFFIX as COPY_SUFFIX
from evbench_core.analysis.identity import copy_name as copy_name
from evbench_core.errors import UserError

#: What a codec encodes: the profile's plain data, or its protobuf message.
PLAIN = "plain"
MESSAGE = "message"

#: The agent's own dependencies (agent/pyproject.toml) that codecs use: always present.
AGENT_DEPENDENCIES = frozenset({"protobuf"})

#: What binding a codec to a profile gives: (encode, decode).
Pair = tuple[Callable[[Any], bytes], Callable[[bytes], Any]]


@dataclass(frozen=True)
class BoundCodec:
    """A codec ready for one profile: the callables the suites time."""

    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    #: Reads what `decode_access` reads of a decoded value; returns the leaf count.
    access: Callable[[Any], int]
    carries: str

    def data(self, payload: Payload) -> Any:
        return payload.message if self.carries == MESSAGE else payload.plain


@dataclass(frozen=True)
class Codec:
    name: str
    #: Module whose import decides availability; its distribution gives the version.
    module: str
    #: The PyPI distribution that installs `module` (None: the standard library).
    distribution: str | None
    carries: str
    description: str
    _bind: Callable[[ModuleType, Profile], Pair]
    #: Whether the codec can carry a profile (None: every profile; dbc: the DBC's messages).
    _carries: Callable[[Profile], bool] | None = None
    #: The Yocto (scarthgap) package that carries `module` on the board; None when no
    #: recipe does, so the codec is absent there (tests/test_layer.py builds the
    #: layer's package map from these).
    yocto: str | None = field(kw_only=True)
    #: Whether decoding gives back the value encoded; False for a codec that keeps each
    #: value only to a resolution (dbc's signals): its round trip is stable instead, the
    #: decoded value encoding to the same bytes.
    exact: bool = field(default=True, kw_only=True)

    @property
    def optional(self) -> bool:
        """Whether the codec's library may be missing: neither the standard library nor a
        dependency of the agent."""
        return self.distribution is not None and self.distribution not in AGENT_DEPENDENCIES

    def can_carry(self, profile: Profile) -> bool:
        return self._carries is None or self._carries(profile)

    def available(self) -> bool:
        try:
            module = importlib.import_module(self.module)
        except ImportError:
            return False
        return not _namespace(module.__spec__)

    def version(self) -> str:
        if self.distribution is None:
            return f"Python {platform.python_version()} standard library"
        # Not importlib.metadata: it costs the manager about 3.5 MiB of RSS (issue 21).
        found = installed_version.distribution_version(self.distribution)
        if found is not None:
            return found
        return str(getattr(importlib.import_module(self.module), "__version__", "unknown"))

    def bind(self, profile: Profile) -> BoundCodec:
        try:
            encode, decode = self._bind(importlib.import_module(self.module), profile)
        except Exception as error:  # a broken or stray library, not a bug of the run's
            reinstall = f"reinstall {self.distribution}, or " if self.distribution else ""
            raise UserError(
                f"codec {self.name!r} cannot be used here: {type(error).__name__}: {error}",
                hint=f"{reinstall}leave the codec out (--codecs)",
            ) from error
        if self.carries == MESSAGE:
            reader = access.MessageReaders(profile.leaves).reader(profile.message_type.DESCRIPTOR)
            if profile.access:
                reader = path_reader(profile.access, getattr)
        else:
            reader = access.walk_plain
            if profile.access:
                reader = path_reader(profile.access, dict.__getitem__)
        return BoundCodec(encode, decode, reader, self.carries)


def _namespace(spec: ModuleSpec | None) -> bool:
    """Whether `spec` is a namespace package: a directory without `__init__.py`, as an
    uninstalled library leaves behind (its `__pycache__`). It imports, yet is no library."""
    return spec is not None and spec.origin is None and spec.submodule_search_locations is not None


def _found(module: str) -> bool:
    """Whether `module` is installed, found without running it: its top package, or,
    through namespace packages (google for google.protobuf), the first regular one."""
    name = ""
    for part in module.split("."):
        name = f"{name}.{part}" if name else part
        spec = importlib.util.find_spec(name)  # imports only the namespace packages above
        if spec is None:
            return False
        if not _namespace(spec):
            return True
    return False


def path_reader(path: tuple[str, ...], step: Callable[[Any, str], Any]) -> Callable[[Any], int]:
    """A reader that needs only the value at `path` (the skipping profiles)."""

    def read(value: Any) -> int:
        for key in path:
            value = step(value, key)
        return 1

    return read


#: Every codec by name, in the order runs and listings take them: each is declared
#: once, by `@codec` on the function that binds it, in its module of this package
#: (`collect`). The native (C and C++) codecs are declared in
#: evbench_agent.native.runtimes; `every()` lists both.
CODECS: dict[str, Codec] = {}

#: The codec modules collected first, in this order: the always-present codecs, which
#: every run takes first (a run's answer is json against protobuf); the others follow
#: by module name.
FIRST = ("protobuf_codec", "json_codec", "protobuf_json_codec")
#: This package's modules that declare no codec: the registry itself; a module whose
#: name starts with `_` is a helper of a codec module, not collected either.
NOT_CODECS = frozenset({"registry"})


def collect(path: Iterable[str], package: str) -> None:
    """Import every codec module of `package` (at `path`), in `FIRST`'s order, then by
    name: each declares its codecs with `@codec` as it is imported."""

    def declares(module: ModuleType) -> bool:
        return any(codec._bind.__module__ == module.__name__ for codec in CODECS.values())

    extensions.collect(
        path, package, "codec (no @codec in it)", declares, first=FIRST, skip=NOT_CODECS
    )


def codec(
    name: str,
    *,
    module: str,
    distribution: str | None,
    yocto: str | None,
    carries: str,
    description: str,
    can_carry: Callable[[Profile], bool] | None = None,
    exact: bool = True,
) -> Callable[[Callable[[ModuleType, Profile], Pair]], Callable[[ModuleType, Profile], Pair]]:
    """Declare codec `name`, bound to a profile by the decorated `bind(module, profile)`.

    `module` is imported only when the codec is used, and a codec whose module does not
    import is unavailable, never an error; `distribution` (PyPI) and `yocto` (the
    scarthgap package, None if there is none) say what installs it; `exact=False` for
    a codec that keeps values only to a resolution.
    """

    def declare(
        bind: Callable[[ModuleType, Profile], Pair],
    ) -> Callable[[ModuleType, Profile], Pair]:
        if name in CODECS:
            raise RuntimeError(f"codec {name!r} is declared twice")
        CODECS[name] = Codec(
            name, module, distribution, carries, description, bind, can_carry,
            yocto=yocto, exact=exact,
        )  # fmt: skip
        return bind

    return declare


def every() -> dict[str, Codec | NativeCodec]:
    """Every codec a run can name: the Python codecs, then the native ones."""
    return {**CODECS, **NATIVE_CODECS}


def available(profiles: Iterable[str] | None = None) -> list[str]:
    """Names of the codecs whose library imports here, in the registry's order; with
    `profiles`, only those that can carry every one of them (dbc carries seed and ev-full)."""
    from evbench_agent import payloads

    wanted = [payloads.get(name) for name in profiles or ()]
    return [
        name
        for name, codec in CODECS.items()
        if codec.available() and all(codec.can_carry(profile) for profile in wanted)
    ]


def installed() -> list[str]:
    """Names of the codecs whose library is installed here, found without importing it.

    For the platform listing in every manifest: importing each optional library
    cost the agent about 3 MiB of RSS for codecs a run may not use. A run checks
    its own codecs with `get`, which imports them.
    """
    return [name for name, codec in CODECS.items() if _found(codec.module)]


def original_name(name: str) -> str:
    """The codec an A/A copy stands for (`json-aa` -> `json`); other names unchanged."""
    if name.endswith(COPY_SUFFIX) and name[: -len(COPY_SUFFIX)] in every():
        return name[: -len(COPY_SUFFIX)]
    return name


def get(name: str) -> Codec | NativeCodec:
    """The codec called `name`; an A/A copy (`json-aa`) is its original under that name."""
    original = original_name(name)
    if original != name:
        return replace(
            get(original), name=name, description=f"{get(original).description}, A/A copy"
        )
    native = NATIVE_CODECS.get(name)
    if native is not None:  # a C or C++ runtime, timed in its harness (evbench_agent.native)
        if not native.available():
            raise UserError(
                f"codec {name!r} is not installed here ({native.unavailable_reason()})",
                hint="build and install the harnesses (docs/native-codecs.md)",
            )
        return native
    codec = CODECS.get(name)
    if codec is None:
        known = ", ".join(every())
        raise UserError(f"unknown codec {name!r}", hint=f"known: {known}")
    if not codec.available():
        raise UserError(
            f"codec {name!r} is not installed here (module {codec.module} does not import)",
            hint=f"available: {', '.join(available())}",
        )
    return codec


def protobuf_backend() -> str:
    """The protobuf runtime implementation that runs: upb, cpp or python."""
    from google.protobuf.internal import api_implementation

    return api_implementation.Type()


# A native codec takes its payloads as the Python codecs carry them (protobuf or json).
native_codec.use_python_codecs(lambda name, profile: get(name).bind(profile))
