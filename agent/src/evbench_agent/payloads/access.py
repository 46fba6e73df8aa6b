"""What `decode_access` reads of a decoded payload: the same leaves on both sides.

The JSON-family codecs decode to plain data and read every value in it (each
dict value, each list item; a leaf is anything else, `null` included). The
protobuf side reads, from the decoded message, exactly the leaves that the
profile's JSON form of that message holds, so that the figure compares
decoding and reading the same values (issue 29, item 4):

- `EVERY_FIELD` (the built-in profiles, `--json-style fields`, `--json-map`):
  the JSON writes every field without presence and the set fields with
  presence. The protobuf side reads each declared field without presence,
  asks `HasField` for each field with presence and reads the set ones, and
  reads every element of repeated fields and maps; set extensions too.
- `SET_FIELDS` (`--json-style proto3`, protobuf's JSON mapping): the JSON
  holds only the set fields (`ListFields`), and the well-known types in their
  JSON form: a Timestamp, Duration, FieldMask or wrapper is one value (its
  fields are read, one leaf is counted), Struct/Value/ListValue are their JSON
  objects, lists and values, an Any is its `@type` plus the packed message,
  which is unpacked with the schema's own type (the class comes from the
  message's descriptor pool) and read the same way.

A message type that contains itself (a recursive type) is compiled once per
type, lazily, so a reader ends wherever the message ends; the runtime's own
parse limit (100 nested messages) bounds how deep a decoded message can be.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message

from evbench_agent.payloads.convert import is_map, is_repeated, map_entry, message_type
from evbench_agent.payloads.json_mapping import ONE_VALUE

if TYPE_CHECKING:
    from google.protobuf import any_pb2, struct_pb2

    from evbench_agent.payloads.protobuf_types import Descriptor, FieldDescriptor

EVERY_FIELD = "every-field"
SET_FIELDS = "set-fields"
MODES = (EVERY_FIELD, SET_FIELDS)

Reader = Callable[[Any], int]


def walk_plain(value: Any) -> int:
    """Read every leaf of plain data (dict values, list items); count them."""
    if type(value) is dict:
        count = 0
        for item in value.values():
            count += walk_plain(item)
        return count
    if type(value) is list:
        count = 0
        for item in value:
            count += walk_plain(item)
        return count
    return 1


def _count_values(values: Any) -> int:
    count = 0
    for _ in values:
        count += 1
    return count


class MessageReaders:
    """Readers of a message type's leaves in one mode, one per type, built on first use."""

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown access mode {mode!r}")
        self.mode = mode
        self._readers: dict[str, Reader] = {}
        self._classes: dict[str, Callable[[bytes], Message]] = {}

    def reader(self, descriptor: Descriptor) -> Reader:
        found = self._readers.get(descriptor.full_name)
        if found is not None:
            return found

        # A forward reference: a recursive type finds itself here while being compiled.
        def deferred(message: Message) -> int:
            return compiled(message)

        self._readers[descriptor.full_name] = deferred
        compiled = self._compile(descriptor)
        self._readers[descriptor.full_name] = compiled
        return compiled

    def _compile(self, descriptor: Descriptor) -> Reader:
        if self.mode == SET_FIELDS:
            special = self._well_known(descriptor)
            if special is not None:
                return special
            return self._set_fields(descriptor)
        return self._every_field(descriptor)

    # -- protobuf's JSON mapping -------------------------------------------

    def _set_fields(self, descriptor: Descriptor) -> Reader:
        def read(message: Message) -> int:
            count = 0
            for field, value in message.ListFields():
                count += self._value(field)(value)
            return count

        return read

    def _value(self, field: FieldDescriptor) -> Reader:
        """How to read a set field's value (the field's own reader, built on first use)."""
        if is_map(field):
            value_type = map_entry(field)[1].message_type
            if value_type is None:
                return lambda mapping: _count_values(mapping.values())
            inner = self.reader(value_type)
            return lambda mapping: sum(inner(item) for item in mapping.values())
        if field.message_type is not None:
            inner = self.reader(field.message_type)
            if is_repeated(field):
                return lambda items: sum(inner(item) for item in items)
            return inner
        if is_repeated(field):
            return _count_values
        return _one

    def _well_known(self, descriptor: Descriptor) -> Reader | None:
        name = descriptor.full_name
        if name in ONE_VALUE:
            names = [f.name for f in descriptor.fields]

            def one_value(message: Message) -> int:
                for field_name in names:  # read as an application does, then one JSON value
                    getattr(message, field_name)
                return 1

            return one_value
        if name == "google.protobuf.Value":
            return self._struct_value(descriptor)
        if name == "google.protobuf.Struct":
            value = self.reader(message_type(map_entry(descriptor.fields_by_name["fields"])[1]))
            return lambda message: sum(value(item) for item in message.fields.values())
        if name == "google.protobuf.ListValue":
            value = self.reader(message_type(descriptor.fields_by_name["values"]))
            return lambda message: sum(value(item) for item in message.values)
        if name == "google.protobuf.Any":
            return self._any
        return None

    def _struct_value(self, descriptor: Descriptor) -> Reader:
        fields = descriptor.fields_by_name
        struct = self.reader(message_type(fields["struct_value"]))
        listing = self.reader(message_type(fields["list_value"]))

        def read(message: struct_pb2.Value) -> int:
            kind = message.WhichOneof("kind")
            if kind == "struct_value":
                return struct(message.struct_value)
            if kind == "list_value":
                return listing(message.list_value)
            if kind is not None:
                getattr(message, kind)
            return 1  # a number, string, bool or null

        return read

    def _any(self, message: any_pb2.Any) -> int:
        type_url = message.type_url
        if not type_url and not message.value:
            return 0  # an empty Any is {}
        parse = self._classes.get(type_url)
        if parse is None:
            parse = self._class_for(message, type_url)
        inner = parse(message.value)
        return 1 + self.reader(inner.DESCRIPTOR)(inner)

    def _class_for(self, message: Message, type_url: str) -> Callable[[bytes], Message]:
        from evbench_agent.payloads.convert import message_class

        pool = message.DESCRIPTOR.file.pool
        descriptor = pool.FindMessageTypeByName(type_url.rpartition("/")[2])
        parse = message_class(descriptor).FromString
        self._classes[type_url] = parse
        return parse

    # -- every field without presence, and the set ones with it -------------

    def _every_field(self, descriptor: Descriptor) -> Reader:
        steps: list[tuple[str, bool, Reader]] = []
        for field in descriptor.fields:
            present_only = field.has_presence and not is_repeated(field)
            steps.append((field.name, present_only, self._value(field)))
        extendable = bool(descriptor.extension_ranges)

        def read(message: Message) -> int:
            count = 0
            for name, present_only, inner in steps:
                if present_only and not message.HasField(name):
                    continue
                count += inner(getattr(message, name))
            if extendable:
                for field, value in message.ListFields():
                    if field.is_extension:
                        count += self._value(field)(value)
            return count

        return read


def _one(_value: Any) -> int:
    return 1
