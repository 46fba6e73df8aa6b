"""The `dbc` codec: a profile's data as packed CAN FD signals, the CAN engineer's baseline.

`schema/ev_data.dbc` (made by protos/make_dbc.py) describes the seed packet,
EvFrame and the link's ack as CAN FD messages. A message's comment names the
protobuf message it carries; a signal's comment the field path inside it
(`bms.cell_voltages[5]`, `faults[1].dtc`, `len(faults)` for a list's count).
cantools packs and unpacks the signals; this module maps plain data onto them.

An encoded payload is its CAN frames one after the other, each as

    CAN id (4 bytes, big-endian, SocketCAN's can_id: bit 31 set for a 29-bit id)
    | data length (1 byte) | data (that many bytes)

so the codec's size is the frames' data plus 5 bytes a frame. On a bus the
frames are CAN frames of their own (no ISO-TP); `frames()` gives them back for
the bus budget. Every signal is always sent (a list's unused slots are 0, its
count says how many are used), as periodic CAN messages are.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import ModuleType
from typing import TYPE_CHECKING, Any

from google.protobuf.descriptor import FieldDescriptor as _F

from evbench_agent.payloads import Profile
from evbench_agent.payloads.convert import is_repeated
from evbench_core.errors import UserError

if TYPE_CHECKING:
    from evbench_agent.payloads.protobuf_types import Descriptor, FieldDescriptor

DBC_FILE = "ev_data.dbc"
#: One frame's header in an encoded payload: CAN id, data length.
FRAME_HEADER = struct.Struct(">IB")
EXTENDED_FLAG = 0x8000_0000
_COUNT = re.compile(r"len\((.+)\)\Z")
_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?\Z")


def frames(blob: bytes) -> list[tuple[int, bytes]]:
    """The (CAN id, data) frames of an encoded payload; the id keeps bit 31 for 29-bit ids."""
    found, offset = [], 0
    while offset < len(blob):
        if offset + FRAME_HEADER.size > len(blob):
            raise UserError(f"dbc payload truncated in a frame header at byte {offset}")
        can_id, length = FRAME_HEADER.unpack_from(blob, offset)
        offset += FRAME_HEADER.size
        if length > 64 or offset + length > len(blob):
            raise UserError(f"dbc frame 0x{can_id:X} at byte {offset} claims {length} bytes")
        found.append((can_id, bytes(blob[offset : offset + length])))
        offset += length
    return found


@cache
def _frames_by_type() -> dict[str, tuple[tuple[int, int], ...]]:
    """protobuf message -> its DBC messages' (id, length), read from the text without cantools."""
    text = resources.files("evbench_agent.schema").joinpath(DBC_FILE).read_text("ascii")
    lengths = {
        int(frame_id): int(length)
        for frame_id, length in re.findall(r"^BO_ (\d+) \w+: (\d+) ", text, re.MULTILINE)
    }
    found: dict[str, list[tuple[int, int]]] = {}
    for frame_id, name in re.findall(r'^CM_ BO_ (\d+) "([^"]+)";', text, re.MULTILINE):
        found.setdefault(name, []).append((int(frame_id), lengths[int(frame_id)]))
    return {name: tuple(frames) for name, frames in found.items()}


def describes(profile: Profile) -> bool:
    """Whether the DBC has messages for the profile's protobuf message."""
    return profile.message_type.DESCRIPTOR.full_name in _frames_by_type()


def blank_payload(message_type: str) -> bytes:
    """An encoded payload of `message_type` (a protobuf full name) with every signal 0: its
    frames and sizes without cantools (the bus budget of a run's records needs only those)."""
    layout = _frames_by_type().get(message_type)
    if layout is None:
        raise UserError(f"{DBC_FILE} has no message for {message_type}")
    return b"".join(
        FRAME_HEADER.pack(frame_id, length) + bytes(length) for frame_id, length in layout
    )


@cache
def database(cantools: ModuleType) -> Any:
    """The agent's DBC, loaded once (strict: overlapping signals are an error)."""
    text = resources.files("evbench_agent.schema").joinpath(DBC_FILE).read_text("ascii")
    return cantools.database.load_string(text, database_format="dbc", strict=True)


def _tokens(path: str, back: dict[str, str]) -> tuple[str | int, ...]:
    """`faults[1].dtc` -> ('faults', 1, 'dtc'), field names turned into plain keys."""
    tokens: list[str | int] = []
    for part in path.split("."):
        match = _TOKEN.match(part)
        if match is None:
            raise UserError(f"{DBC_FILE}: signal comment {path!r} is not a field path")
        tokens.append(back.get(match[1], match[1]))
        if match[2] is not None:
            tokens.append(int(match[2]))
    return tuple(tokens)


def _field(descriptor: Descriptor, path: str) -> FieldDescriptor:
    """The proto field a signal path ends on (indices dropped)."""
    field: FieldDescriptor | None = None
    current: Descriptor | None = descriptor
    for part in path.split("."):
        match = _TOKEN.match(part)
        if match is None or current is None:  # not a field path, or past a scalar field
            raise UserError(f"{DBC_FILE}: {path!r} names no field of {descriptor.full_name}")
        field = current.fields_by_name.get(match[1])
        if field is None:
            raise UserError(f"{DBC_FILE}: {path!r} names no field of {current.full_name}")
        current = field.message_type
    assert field is not None  # a path has at least one part
    return field


def _converter(field: FieldDescriptor, choices: dict[int, Any] | None) -> Callable[[Any], Any]:
    if field.enum_type is not None:
        names = {int(number): str(name) for number, name in (choices or {}).items()}
        return lambda value: names[int(value)]
    if field.type == _F.TYPE_BOOL:
        return bool
    if field.cpp_type in (_F.CPPTYPE_FLOAT, _F.CPPTYPE_DOUBLE):
        return float
    return int


@dataclass
class _Node:
    """The shape decode rebuilds: a leaf (frame, signal), a dict or a list of nodes."""

    leaf: tuple[int, str, Callable[[Any], Any]] | None = None
    children: dict[str | int, _Node] | None = None
    count: tuple[int, str] | None = None


def _getter(tokens: tuple[str | int, ...], name: str) -> Callable[[Any], Any]:
    def get(plain: Any) -> Any:
        value = plain
        for token in tokens:
            if type(token) is int:
                if token >= len(value):
                    return 0  # an unused slot of a list: its count says so
            elif token not in value:
                raise UserError(f"dbc: the payload has no {'.'.join(map(str, tokens))}")
            value = value[token]
        return value

    get.__name__ = name
    return get


class PackedSignals:
    """A profile bound to the DBC messages that carry its protobuf message."""

    def __init__(self, cantools: ModuleType, profile: Profile) -> None:
        full_name = profile.message_type.DESCRIPTOR.full_name
        self.messages = [m for m in database(cantools).messages if m.comment == full_name]
        if not self.messages:
            raise UserError(
                f"codec 'dbc' cannot carry profile {profile.name!r}: {DBC_FILE} has no"
                f" message for {full_name}",
                hint="the DBC describes the seed, ev-full and the link's ack",
            )
        self.errors = (cantools.database.errors.EncodeError, ValueError, TypeError, KeyError)
        back = {field: key for key, field in profile.rename.items()}
        descriptor = profile.message_type.DESCRIPTOR
        self.root = _Node(children={})
        self.encoders: list[tuple[Any, bytes, list[tuple[str, Callable[[Any], Any]]]]] = []
        self.capacity: dict[tuple[str | int, ...], int] = {}
        for message in self.messages:
            getters = []
            for signal in message.signals:
                getters.append((signal.name, self._add(message, signal, descriptor, back)))
            can_id = message.frame_id | (EXTENDED_FLAG if message.is_extended_frame else 0)
            header = FRAME_HEADER.pack(can_id, message.length)
            self.encoders.append((message, header, getters))
        self.by_id = {
            message.frame_id | (EXTENDED_FLAG if message.is_extended_frame else 0): message
            for message in self.messages
        }

    def _add(
        self, message: Any, signal: Any, descriptor: Descriptor, back: dict[str, str]
    ) -> Callable[[Any], Any]:
        path = signal.comment or ""
        count = _COUNT.match(path)
        tokens = _tokens(count[1] if count else path, back)
        node = self.root
        for token in tokens:
            if node.children is None:
                raise UserError(f"{DBC_FILE}: {path!r} goes inside another signal's field")
            node = node.children.setdefault(token, _Node(children={}))
        if count:
            node.count = (message.frame_id, signal.name)
            return self._length(tokens)
        field = _field(descriptor, path)
        node.children = None
        node.leaf = (message.frame_id, signal.name, _converter(field, signal.choices))
        for index, token in enumerate(tokens):
            if type(token) is int:
                key = tokens[:index]
                self.capacity[key] = max(self.capacity.get(key, 0), token + 1)
        if not is_repeated(field) and any(type(token) is int for token in tokens[-1:]):
            raise UserError(f"{DBC_FILE}: {path!r} indexes a field that is not repeated")
        return _getter(tokens, signal.name)

    def _length(self, tokens: tuple[str | int, ...]) -> Callable[[Any], int]:
        def length(plain: Any) -> int:
            value = plain
            for token in tokens:
                value = value[token]
            if len(value) > self.capacity[tokens]:
                raise UserError(
                    f"dbc: {'.'.join(map(str, tokens))} has {len(value)} items,"
                    f" the DBC carries {self.capacity[tokens]}"
                )
            return len(value)

        return length

    def encode(self, plain: Any) -> bytes:
        parts = []
        for message, header, getters in self.encoders:
            signals = {name: get(plain) for name, get in getters}
            try:
                data = message.encode(signals, strict=True)
            except self.errors as error:
                raise UserError(
                    f"dbc: message {message.name} refuses the payload: {error}"
                ) from error
            parts.append(header)
            parts.append(data)
        return b"".join(parts)

    def decode(self, blob: bytes) -> dict[str, Any]:
        values: dict[int, dict[str, Any]] = {}
        for can_id, data in frames(blob):
            message = self.by_id.get(can_id)
            if message is None:
                raise UserError(f"dbc: frame 0x{can_id:X} is not one of this profile's messages")
            values[message.frame_id] = message.decode(data, decode_choices=False)
        if len(values) != len(self.messages):
            raise UserError(f"dbc: {len(values)} of {len(self.messages)} messages arrived")
        plain: dict[str, Any] = _build(self.root, values)  # the root is a message: a dict
        return plain


def _build(node: _Node, values: dict[int, dict[str, Any]]) -> Any:
    if node.leaf is not None:
        frame_id, name, convert = node.leaf
        return convert(values[frame_id][name])
    children = node.children
    assert children is not None  # a node is a leaf or has children
    if children and type(next(iter(children))) is int:
        used = len(children) if node.count is None else int(values[node.count[0]][node.count[1]])
        if used > len(children):
            raise UserError(f"dbc: a list count of {used} is above the {len(children)} slots")
        return [_build(children[index], values) for index in range(used)]
    return {key: _build(child, values) for key, child in children.items()}


def bind(
    cantools: ModuleType, profile: Profile
) -> tuple[Callable[[Any], bytes], Callable[[bytes], dict[str, Any]]]:
    """The codec registry's binding: (encode, decode) of plain data."""
    packed = PackedSignals(cantools, profile)
    return packed.encode, packed.decode
