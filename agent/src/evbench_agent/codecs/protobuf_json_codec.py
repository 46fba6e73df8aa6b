"""protobuf-json: JSON of the protobuf message, the same bytes on protobuf 4.21, 4.25
and the newest.

It prints protobuf's JSON mapping with the fields that have no presence too
(repeated fields and maps as [] and {}, proto3 scalars at their zero value),
as the JSON codecs carry every such field. Every printing option is set
explicitly. On runtimes before 5.26 (Debian 12's 4.21, Yocto scarthgap's
4.25) the option had another name and meaning; where it would print more,
the output goes through `json_mapping.conform` (payloads/json_mapping.py says
what differs). Their Parse cannot read a repeated extension at all: such a
message is refused there, up front.

The schema's own descriptor pool resolves the types an Any names, and parsing
goes through it too.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from evbench_agent.codecs.registry import MESSAGE, Pair, codec
from evbench_agent.payloads import Profile, json_mapping
from evbench_core.errors import UserError

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from evbench_agent.payloads.protobuf_types import Descriptor


@codec(
    "protobuf-json",
    module="google.protobuf.json_format",
    distribution="protobuf",
    yocto="python3-protobuf",
    carries=MESSAGE,
    description="JSON of the protobuf message: json_format.MessageToDict + json, and Parse",
)
def bind(module: ModuleType, profile: Profile) -> Pair:
    return bind_message(module, profile.message_type)


def printing_options(
    to_dict: Callable[..., Any], root: Descriptor
) -> tuple[dict[str, Any], bool, bool]:
    """MessageToDict's options here; whether to conform; whether conforming adds defaults."""
    import inspect

    parameters = inspect.signature(to_dict).parameters
    options: dict[str, Any] = {
        "preserving_proto_field_name": False,
        "use_integers_for_enums": False,
        "descriptor_pool": root.file.pool,
    }
    # Options only some runtimes have, at the value the others behave as.
    for name, value in (("float_precision", None), ("unquote_int64_if_possible", False)):
        if name in parameters:
            options[name] = value
    if json_mapping.NEW_OPTION in parameters:
        return {**options, json_mapping.NEW_OPTION: True}, False, False
    extension = json_mapping.repeated_extension(root)
    if extension is not None:  # its Parse cannot read what it prints for one
        raise UserError(
            f"codec 'protobuf-json' cannot carry the repeated extension {extension} on "
            f"protobuf {_version()} (json_format before 5.26 misnames it and cannot read it)",
            hint="leave protobuf-json out of --codecs, or use protobuf 5.26 or newer",
        )
    if json_mapping.old_option_prints_more(root):
        return {**options, json_mapping.OLD_OPTION: False}, True, True
    return {**options, json_mapping.OLD_OPTION: True}, False, False


def _version() -> str:
    import google.protobuf

    return google.protobuf.__version__


def bind_message(
    module: ModuleType, message_type: type[Message]
) -> tuple[Callable[[Message], bytes], Callable[[bytes], Message]]:
    """(encode, decode) of protobuf-json for `message_type` on this runtime."""
    import json

    # json_format, of whichever protobuf runtime is measured (a module given, not imported)
    to_dict: Callable[..., dict[str, Any]] = module.MessageToDict
    parse: Callable[..., Message] = module.Parse
    options, conform, add_defaults = printing_options(to_dict, message_type.DESCRIPTOR)
    pool = message_type.DESCRIPTOR.file.pool
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

    if conform:

        def encode(message: Message) -> bytes:
            printed = to_dict(message, **options)
            json_mapping.conform(message, printed, add_defaults)
            return dumps(printed).encode()

    else:

        def encode(message: Message) -> bytes:
            return dumps(to_dict(message, **options)).encode()

    def decode(data: bytes) -> Message:
        return parse(
            data, message_type(), ignore_unknown_fields=False, descriptor_pool=pool,
            max_recursion_depth=100,
        )  # fmt: skip

    return encode, decode
