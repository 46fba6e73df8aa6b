"""protobuf's JSON mapping printed the same on every runtime the agent supports.

`json_format.MessageToDict` differs between protobuf 4.21/4.25 and 5.26+:

- the option that prints fields without presence was renamed
  (`including_default_value_fields` -> `always_print_fields_with_no_presence`),
  and the old one also prints unset proto2 `optional` scalars;
- before 5.26 a repeated extension is printed under its lowerCamelCase name
  (which its own Parse then refuses), since under `"[full.name]"`.

`conform` takes what an old runtime printed (without the old option) and makes
it what the newest prints: repeated extensions renamed in place, and, when
asked, the fields without presence added after the others, recursively
(through sub-messages, repeated ones, map values and the messages an Any packs).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from google.protobuf.descriptor import FieldDescriptor as _F
from google.protobuf.message import Message

from evbench_agent.payloads.convert import all_extensions, is_map, is_repeated, message_class

if TYPE_CHECKING:
    from google.protobuf import any_pb2

    from evbench_agent.payloads.protobuf_types import Descriptor, FieldDescriptor

NEW_OPTION = "always_print_fields_with_no_presence"
OLD_OPTION = "including_default_value_fields"
ANY = "google.protobuf.Any"
#: Well-known types whose proto3 JSON form is a single value.
ONE_VALUE = frozenset(
    {
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
        "google.protobuf.FieldMask",
        "google.protobuf.DoubleValue",
        "google.protobuf.FloatValue",
        "google.protobuf.Int64Value",
        "google.protobuf.UInt64Value",
        "google.protobuf.Int32Value",
        "google.protobuf.UInt32Value",
        "google.protobuf.BoolValue",
        "google.protobuf.StringValue",
        "google.protobuf.BytesValue",
    }
)
#: Types whose JSON is not an object of their fields.
SPECIAL = ONE_VALUE | {
    ANY,
    "google.protobuf.Struct",
    "google.protobuf.Value",
    "google.protobuf.ListValue",
}


def new_runtime(to_dict: Callable[..., Any]) -> bool:
    return NEW_OPTION in inspect.signature(to_dict).parameters


def reachable(root: Descriptor) -> list[Descriptor]:
    """Every message type a message of `root` can hold (not through an Any)."""
    seen: dict[str, Descriptor] = {}
    pending: list[Descriptor] = [root]
    while pending:
        descriptor = pending.pop()
        if descriptor.full_name in seen:
            continue
        seen[descriptor.full_name] = descriptor
        fields: list[FieldDescriptor] = [*descriptor.fields, *_extensions(descriptor)]
        pending.extend(f.message_type for f in fields if f.message_type is not None)
    return list(seen.values())


def _extensions(descriptor: Descriptor) -> list[FieldDescriptor]:
    if not descriptor.extension_ranges:
        return []
    return all_extensions(descriptor)


def repeated_extension(root: Descriptor) -> str | None:
    """The full name of a repeated extension a message of `root` can hold (not through
    an Any), or None."""
    for descriptor in reachable(root):
        for field in _extensions(descriptor):
            if is_repeated(field):
                return field.full_name
    return None


def old_option_prints_more(root: Descriptor) -> bool:
    """Whether `including_default_value_fields` prints a field the new option does not:
    a scalar with presence outside any oneof (proto2 `optional`), here or behind an Any."""
    for descriptor in reachable(root):
        if descriptor.full_name == ANY:
            return True
        for field in descriptor.fields:
            if (
                field.has_presence
                and field.message_type is None
                and field.containing_oneof is None
                and not is_repeated(field)
            ):
                return True
    return False


def _default_json(field: FieldDescriptor) -> Any:
    """A field without presence at its zero value, as json_format prints it.

    By the field's C++ type, as json_format chooses a value's JSON form (not by its
    wire type: int32, sint32, sfixed32 and the unsigned ones are all 32-bit integers,
    printed as numbers; only the 64-bit ones are quoted). Every scalar C++ type is
    listed, with no catch-all: message fields have presence and never come here.
    """
    if field.enum_type is not None:
        zero = field.enum_type.values_by_number.get(0)
        return zero.name if zero is not None else 0
    return _ZERO_JSON[field.cpp_type]


#: json_format's JSON form of each scalar C++ type at its zero value.
_ZERO_JSON: dict[int, Any] = {
    _F.CPPTYPE_INT32: 0,
    _F.CPPTYPE_UINT32: 0,
    _F.CPPTYPE_INT64: "0",
    _F.CPPTYPE_UINT64: "0",
    _F.CPPTYPE_FLOAT: 0.0,
    _F.CPPTYPE_DOUBLE: 0.0,
    _F.CPPTYPE_BOOL: False,
    _F.CPPTYPE_STRING: "",  # string, and bytes (base64 of nothing)
}


def conform(message: Message, printed: dict[str, Any], add_defaults: bool) -> None:
    """Make an old runtime's MessageToDict output (`printed`) the newest's, in place."""
    descriptor = message.DESCRIPTOR
    if descriptor.full_name in SPECIAL:
        if descriptor.full_name == ANY and _as_any(message).type_url:
            inner = _unpack(message)
            if inner.DESCRIPTOR.full_name not in SPECIAL:
                conform(inner, printed, add_defaults)
        return
    if descriptor.extension_ranges:
        _rename_repeated_extensions(message, printed)
        for extension, value in message.ListFields():
            key = f"[{extension.full_name}]"
            if extension.is_extension and extension.message_type is not None and key in printed:
                _into(extension, value, printed[key], add_defaults)
    for field in descriptor.fields:
        name = field.json_name
        if name in printed:
            _into(field, getattr(message, field.name), printed[name], add_defaults)
        elif add_defaults and not field.has_presence:
            if is_map(field):
                printed[name] = {}
            elif is_repeated(field):
                printed[name] = []
            else:
                printed[name] = _default_json(field)


def _into(field: FieldDescriptor, value: Any, printed: Any, add_defaults: bool) -> None:
    """Conform the messages a printed field holds."""
    if field.message_type is None:
        return
    if is_map(field):
        if field.message_type.fields_by_name["value"].message_type is not None:
            for key, item in value.items():
                conform(item, printed[_map_key(key)], add_defaults)
    elif is_repeated(field):
        for item, text in zip(value, printed, strict=False):
            if isinstance(text, dict):
                conform(item, text, add_defaults)
    elif isinstance(printed, dict):
        conform(value, printed, add_defaults)


def _rename_repeated_extensions(message: Message, printed: dict[str, Any]) -> None:
    renames = {
        field.json_name: f"[{field.full_name}]"
        for field, _ in message.ListFields()
        if field.is_extension and is_repeated(field)
    }
    if not renames or not set(renames) & set(printed):
        return
    items = list(printed.items())
    printed.clear()
    for key, value in items:
        printed[renames.get(key, key)] = value


def _map_key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _as_any(message: Message) -> any_pb2.Any:
    # A google.protobuf.Any, by its full name, from any pool (the schema's own too).
    return cast("any_pb2.Any", message)


def _unpack(message: Message) -> Message:
    packed = _as_any(message)
    pool = message.DESCRIPTOR.file.pool
    descriptor = pool.FindMessageTypeByName(packed.type_url.rpartition("/")[2])
    return message_class(descriptor).FromString(packed.value)
