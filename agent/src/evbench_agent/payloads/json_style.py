"""How a user's message looks as plain data, the form every JSON-family codec carries.

- `proto3`: protobuf's JSON mapping, exactly as json_format prints it
  (lowerCamelCase names, 64-bit integers as strings, enums as names, bytes as
  base64, Timestamp as RFC 3339, fields at their default value left out).
- `fields`: what a hand-written map usually is: the .proto's field names,
  every number as a JSON number (64-bit ones too), enums as their numbers,
  bytes as base64, nested messages (Timestamp too) as objects, fields without
  presence always written, unset fields with presence left out.
- a JSON map ({field name: JSON key}, like the seed app's snake_case map): the
  `fields` style with those keys, wherever a field of that name occurs.

The plain data holds only dicts with string keys, lists, str, int, float and
bool, so that json, orjson, ujson, msgspec, msgpack and cbor2 carry the same
values. Non-finite floats have no JSON number: the fields style refuses them.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from evbench_agent.payloads import json_mapping
from evbench_agent.payloads.convert import extensions, is_map, is_repeated, json_pool, map_entry
from evbench_core.errors import UserError

if TYPE_CHECKING:
    from evbench_agent.payloads.protobuf_types import Descriptor
    from evbench_agent.payloads.protobuf_types import FieldDescriptor as AnyFieldDescriptor

STYLES = ("proto3", "fields")
_FLOAT = FieldDescriptor.TYPE_FLOAT
_DOUBLE = FieldDescriptor.TYPE_DOUBLE
_BYTES = FieldDescriptor.TYPE_BYTES
_BOOL = FieldDescriptor.TYPE_BOOL
_STRING = FieldDescriptor.TYPE_STRING


def shortest_float32(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (what an ECU prints)."""
    if not math.isfinite(value):
        return value
    for digits in range(6, 10):
        candidate = float(f"{value:.{digits}g}")
        if struct.unpack("<f", struct.pack("<f", candidate))[0] == value:
            return candidate
    return value


class JsonStyle:
    name = ""
    #: The leaves the plain form holds (evbench_agent.payloads.access modes).
    leaves = "every-field"

    def to_plain(self, message: Message) -> Any:
        raise NotImplementedError

    def to_message(self, plain: Mapping[str, Any], message_type: type[Message]) -> Message:
        raise NotImplementedError


class Proto3Style(JsonStyle):
    """protobuf's JSON mapping, through json_format itself."""

    name = "proto3"
    leaves = "set-fields"

    def to_plain(self, message: Message) -> Any:
        printed = json_format.MessageToDict(message, descriptor_pool=json_pool(message.DESCRIPTOR))
        if not json_mapping.new_runtime(json_format.MessageToDict):
            json_mapping.conform(message, printed, add_defaults=False)
        return _plain(printed)

    def to_message(self, plain: Mapping[str, Any], message_type: type[Message]) -> Message:
        pool = json_pool(message_type.DESCRIPTOR)
        # ParseDict reads any mapping; its stub asks for a dict (no copy on the timed path).
        return json_format.ParseDict(
            cast("dict[str, Any]", plain), message_type(), descriptor_pool=pool
        )


class FieldsStyle(JsonStyle):
    """Field names (or the JSON map's keys), numbers as numbers, enums as numbers."""

    name = "fields"

    def __init__(self, keys: Mapping[str, str] | None = None) -> None:
        self.keys = dict(keys or {})
        if self.keys:
            self.name = "json-map"

    def to_plain(self, message: Message) -> dict[str, Any]:
        plain: dict[str, Any] = {}
        for field in message.DESCRIPTOR.fields:
            value = getattr(message, field.name)
            key = self.keys.get(field.name, field.name)
            if is_map(field):
                _key_field, value_field = map_entry(field)
                plain[key] = {_map_key(k): self._value(value_field, v) for k, v in value.items()}
            elif is_repeated(field):
                plain[key] = [self._value(field, item) for item in value]
            elif field.has_presence and not message.HasField(field.name):
                continue
            else:
                plain[key] = self._value(field, value)
        if message.DESCRIPTOR.extension_ranges:
            for field, value in message.ListFields():
                if field.is_extension:  # under "[full.name]", as the proto3 mapping writes them
                    plain[f"[{field.full_name}]"] = self._extension(field, value)
        return plain

    def _extension(self, field: AnyFieldDescriptor, value: Any) -> Any:
        if is_repeated(field):
            return [self._value(field, item) for item in value]
        return self._value(field, value)

    def _value(self, field: AnyFieldDescriptor, value: Any) -> Any:
        if field.message_type is not None:
            return self.to_plain(value)
        if field.type == _BYTES:
            return base64.b64encode(value).decode("ascii")
        if field.type in (_FLOAT, _DOUBLE):
            if not math.isfinite(value):
                raise UserError(
                    f"field {field.full_name} is {value}: JSON has no such number",
                    hint="use --json-style proto3, which writes it as a string",
                )
            return shortest_float32(value) if field.type == _FLOAT else value
        return value  # ints (enums as numbers), bools, strings

    def to_message(self, plain: Mapping[str, Any], message_type: type[Message]) -> Message:
        return self._fill(message_type(), plain)

    def _fill(self, message: Message, plain: Mapping[str, Any]) -> Message:
        by_key: dict[str, AnyFieldDescriptor] = {
            self.keys.get(f.name, f.name): f for f in message.DESCRIPTOR.fields
        }
        for key, value in plain.items():
            field = by_key.get(key)
            if field is None and key.startswith("[") and key.endswith("]"):
                field = _extension_named(message, key[1:-1])
            if field is None:
                raise UserError(f"no field for key {key!r} in {message.DESCRIPTOR.full_name}")
            target: Any
            if field.is_extension:
                target = extensions(message)[field]
            else:
                target = getattr(message, field.name)
            if is_map(field):
                key_field, value_field = map_entry(field)
                for map_key, item in value.items():
                    parsed = _parse_map_key(key_field, map_key)
                    if value_field.message_type is not None:
                        self._fill(target[parsed], item)
                    else:
                        target[parsed] = self._scalar(value_field, item)
            elif is_repeated(field):
                if field.message_type is not None:
                    for item in value:
                        self._fill(target.add(), item)
                else:
                    target.extend(self._scalar(field, item) for item in value)
            elif field.message_type is not None:
                target.SetInParent()  # an all-default sub-message is still present
                self._fill(target, value)
            elif field.is_extension:
                extensions(message)[field] = self._scalar(field, value)
            else:
                setattr(message, field.name, self._scalar(field, value))
        return message

    @staticmethod
    def _scalar(field: AnyFieldDescriptor, value: Any) -> Any:
        if field.type == _BYTES:
            return base64.b64decode(value)
        return value


def _plain(value: Any) -> Any:
    """Dicts as dict (json_format gives an Any's JSON as an OrderedDict, which some codecs
    and the leaf walker do not take for a dict)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _extension_named(message: Message, name: str) -> AnyFieldDescriptor | None:
    try:
        found = message.DESCRIPTOR.file.pool.FindExtensionByName(name)
    except KeyError:
        return None
    return found if found.containing_type is message.DESCRIPTOR else None


def _map_key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _parse_map_key(field: AnyFieldDescriptor, key: str) -> Any:
    if field.type == _STRING:
        return key
    if field.type == _BOOL:
        return key == "true"
    return int(key)


def _check_map(keys: Any, descriptor: Descriptor) -> dict[str, str]:
    """A JSON map names fields that exist, and gives each message distinct keys."""
    if not isinstance(keys, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in keys.items()
    ):
        raise UserError("a JSON map is an object of field name -> JSON key (both strings)")
    names: set[str] = set()
    seen: set[str] = set()

    def visit(message: Descriptor) -> None:
        if message.full_name in seen:
            return
        seen.add(message.full_name)
        used: dict[str, str] = {}
        for field in message.fields:
            names.add(field.name)
            key = keys.get(field.name, field.name)
            if key in used:
                raise UserError(
                    f"the JSON map gives fields {used[key]!r} and {field.name!r} of "
                    f"{message.full_name} the same key {key!r}"
                )
            used[key] = field.name
            if field.message_type is not None:
                visit(field.message_type)

    visit(descriptor)
    unknown = sorted(set(keys) - names)
    if unknown:
        raise UserError(
            f"the JSON map names no field of {descriptor.full_name}: {', '.join(unknown)}",
            hint=f"fields: {', '.join(sorted(names))}",
        )
    return dict(keys)


def make_style(name: str | None, keys: Any, descriptor: Descriptor) -> JsonStyle:
    """The style a spec asks for; a JSON map implies (and needs) the fields style."""
    if name is not None and name not in STYLES:
        raise UserError(f"unknown JSON style {name!r}", hint=f"known: {', '.join(STYLES)}")
    if keys is not None:
        if name == "proto3":
            raise UserError("a JSON map replaces the field names: it goes with --json-style fields")
        return FieldsStyle(_check_map(keys, descriptor))
    if name == "fields":
        return FieldsStyle()
    return Proto3Style()


__all__ = ["STYLES"]
