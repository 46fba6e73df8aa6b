"""Convert between plain Python data and protobuf messages, by descriptor.

Works on every protobuf runtime the agent supports (4.21 to 7.x): the
descriptor API changed between them (`label` gave way to `is_repeated`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message

if TYPE_CHECKING:
    from evbench_agent.payloads.protobuf_types import Descriptor, FieldDescriptor

_LABEL_REQUIRED = 2
_LABEL_REPEATED = 3


def is_repeated(field: FieldDescriptor) -> bool:
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return getattr(field, "label", None) == _LABEL_REPEATED  # before protobuf 7


def is_required(field: FieldDescriptor) -> bool:
    """A proto2 `required` field (or an edition's LEGACY_REQUIRED)."""
    flag = getattr(field, "is_required", None)
    if flag is not None:
        return bool(flag)
    return getattr(field, "label", None) == _LABEL_REQUIRED  # before protobuf 7


def is_map(field: FieldDescriptor) -> bool:
    # has_options first: GetOptions() imports descriptor_pb2 (0.75 MiB of the agent's
    # memory), and only a map's entry type (map_entry = true) has options at all.
    entry = field.message_type
    return entry is not None and entry.has_options and bool(entry.GetOptions().map_entry)


def message_type(field: FieldDescriptor) -> Descriptor:
    """The type of a message field (a map field's is its entry type)."""
    found = field.message_type
    if found is None:
        raise ValueError(f"{field.full_name} is not a message field")
    return found


def map_entry(field: FieldDescriptor) -> tuple[FieldDescriptor, FieldDescriptor]:
    """The key and value fields of a map field's entry type."""
    fields = message_type(field).fields_by_name
    return fields["key"], fields["value"]


def json_pool(descriptor: Descriptor) -> Any:
    """The pool json_format resolves an Any's types in: the message type's own.

    protobuf's pure-Python pool or upb's; json_format's stubs name only the former.
    """
    return descriptor.file.pool


def all_extensions(descriptor: Descriptor) -> list[FieldDescriptor]:
    """The extensions of a message type that its pool knows."""
    # protobuf's pool or upb's: the stubs of each take only their own descriptors.
    pool: Any = descriptor.file.pool
    return list(pool.FindAllExtensions(descriptor))


def extensions(message: Message) -> Any:
    """message.Extensions, to index with an extension's descriptor found at run time.

    typeshed's stubs take only the generated modules' extension handles as its keys.
    """
    return message.Extensions


def message_class(descriptor: Descriptor) -> type[Message]:
    """The Python class of `descriptor`, on every supported protobuf runtime."""
    from google.protobuf import message_factory

    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is not None:  # protobuf >= 4.22
        found: type[Message] = get_class(descriptor)
        return found
    # protobuf 4.21: MessageFactory.GetPrototype, which typeshed's stubs (protobuf 7) no
    # longer describe.
    factory: Any = message_factory.MessageFactory
    prototype: type[Message] = factory(descriptor.file.pool).GetPrototype(descriptor)
    return prototype


def fill(message: Message, plain: Mapping[str, Any], rename: Mapping[str, str]) -> Message:
    """Set `message` from `plain`, whose keys are field names or keys of `rename`."""
    fields = message.DESCRIPTOR.fields_by_name
    for key, value in plain.items():
        field = fields[rename.get(key, key)]
        target_name = field.name
        if is_map(field):
            getattr(message, target_name).update(value)
        elif field.message_type is not None:
            if is_repeated(field):
                container = getattr(message, target_name)
                for item in value:
                    fill(container.add(), item, rename)
            else:
                fill(getattr(message, target_name), value, rename)
                # An all-default sub-message must still count as present.
                getattr(message, target_name).SetInParent()
        elif field.enum_type is not None:
            numbers = field.enum_type.values_by_name
            if is_repeated(field):
                getattr(message, target_name).extend(numbers[v].number for v in value)
            else:
                setattr(message, target_name, numbers[value].number)
        elif is_repeated(field):
            getattr(message, target_name).extend(value)
        else:
            setattr(message, target_name, value)
    return message


def to_plain(message: Message, rename: Mapping[str, str]) -> dict[str, Any]:
    """The inverse of `fill`: plain data keyed as `rename` says (field name otherwise).

    Unset fields with explicit presence are left out; implicit-presence fields
    are always present, as proto3 defines their value.
    """
    back = {field: key for key, field in rename.items()}
    plain: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        key = back.get(field.name, field.name)
        if is_map(field):
            plain[key] = dict(value)
        elif is_repeated(field):
            if field.message_type is not None:
                plain[key] = [to_plain(item, rename) for item in value]
            elif field.enum_type is not None:
                plain[key] = [field.enum_type.values_by_number[v].name for v in value]
            else:
                plain[key] = list(value)
        elif field.has_presence and not message.HasField(field.name):
            continue
        elif field.message_type is not None:
            plain[key] = to_plain(value, rename)
        elif field.enum_type is not None:
            plain[key] = field.enum_type.values_by_number[value].name
        else:
            plain[key] = value
    return plain
