"""Real data for a user's message: JSON lines or length-delimited binary protobuf.

- `jsonl`: one message per line in protobuf's proto3 JSON mapping (json_format
  accepts the .proto names and the lowerCamelCase names); blank lines skip.
- `binary`: each message preceded by its length as a varint, what
  `writeDelimitedTo` in Java and C++ and most loggers and CAN bridges write.

A run takes the first `--payloads N` messages, in file order (fewer when the
file has fewer). A line or record that does not match the schema is an error
naming the file and the line (or the record and its byte offset).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from evbench_agent.payloads.convert import json_pool
from evbench_core import regular_file
from evbench_core.errors import UserError

FORMATS = ("jsonl", "binary")
#: The samples travel inside the run spec; a benchmark needs hundreds, not gigabytes.
MAX_BYTES = 32 * 1024 * 1024
MAX_RECORD = 16 * 1024 * 1024
#: The longest JSONL line (one message in the proto3 JSON mapping) that is parsed.
MAX_LINE = 1024 * 1024
_JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
_BINARY_SUFFIXES = (".bin", ".pb", ".binpb", ".ld", ".delimited")


def detect_format(name: str, data: bytes) -> str:
    """By the file's suffix; otherwise JSON lines when it starts with '{'."""
    suffix = Path(name).suffix.lower()
    if suffix in _JSON_SUFFIXES:
        return "jsonl"
    if suffix in _BINARY_SUFFIXES:
        return "binary"
    return "jsonl" if data.lstrip()[:1] == b"{" else "binary"


def prefix_length(data: bytes, fmt: str, limit: int) -> int:
    """Bytes of `data` that hold its first `limit` messages (all of it when fewer)."""
    count, offset = 0, 0
    if fmt == "jsonl":
        for line in data.splitlines(keepends=True):
            if count >= limit:
                break
            offset += len(line)
            count += bool(line.strip())
        return offset
    while offset < len(data) and count < limit:
        try:
            length, start = _varint(data, offset)
        except ValueError:
            return len(data)  # the parse names the damage
        offset, count = start + length, count + 1
    return min(offset, len(data))


def source_from_file(
    path: Path, fmt: str | None = None, limit: int | None = None
) -> dict[str, Any]:
    """The spec's `schema.samples` object for a file: name, format, SHA-256 and data.

    The data is the file's first `limit` messages, byte for byte (line numbers
    stay those of the file); the SHA-256 is the whole file's.
    """
    data = regular_file.read_regular(path, MAX_BYTES, "samples file")  # a FIFO never blocks
    fmt = fmt or detect_format(path.name, data)
    if fmt not in FORMATS:
        raise UserError(f"unknown samples format {fmt!r}", hint=f"known: {', '.join(FORMATS)}")
    shipped = data if limit is None else data[: prefix_length(data, fmt, limit)]
    return {
        "name": path.name,
        "format": fmt,
        "sha256": hashlib.sha256(data).hexdigest(),
        "data": base64.b64encode(shipped).decode("ascii"),
    }


def parse_jsonl(data: bytes, name: str, message_type: type[Message], limit: int) -> list[Message]:
    messages: list[Message] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"{name}: not UTF-8 text at byte {error.start}") from None
    pool = json_pool(message_type.DESCRIPTOR)  # an Any names the schema's own types
    for number, line in enumerate(text.splitlines(), start=1):
        if len(messages) >= limit:
            break
        if not line.strip():
            continue
        if len(line) > MAX_LINE:  # parsing 25 MiB of JSON took 136 s and 651 MB
            raise UserError(
                f"{name} line {number} is {len(line)} characters, over {MAX_LINE}",
                hint="one 20 Hz message is far smaller: is this the right file?",
            )
        try:
            messages.append(json_format.Parse(line, message_type(), descriptor_pool=pool))
        except json_format.ParseError as error:
            raise UserError(
                f"{name} line {number}: not a {message_type.DESCRIPTOR.full_name}: {error}",
                hint="each line is one message in the proto3 JSON mapping",
            ) from None
    return messages


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if offset >= len(data) or shift > 63:
            raise ValueError("a cut-off or overlong length prefix")
        byte = data[offset]
        value |= (byte & 0x7F) << shift
        offset += 1
        if not byte & 0x80:
            return value, offset
        shift += 7


def parse_delimited(
    data: bytes, name: str, message_type: type[Message], limit: int
) -> list[Message]:
    messages: list[Message] = []
    offset = 0
    full_name = message_type.DESCRIPTOR.full_name
    while offset < len(data) and len(messages) < limit:
        record = len(messages) + 1
        try:
            length, start = _varint(data, offset)
        except ValueError as error:
            raise UserError(f"{name}: record {record} at byte {offset}: {error}") from None
        if length > MAX_RECORD or start + length > len(data):
            raise UserError(
                f"{name}: record {record} at byte {offset}: length {length} runs past the "
                f"file's end ({len(data)} bytes)",
                hint="the file is not length-delimited protobuf, or it is cut off",
            )
        try:
            messages.append(message_type.FromString(data[start : start + length]))
        except DecodeError as error:
            raise UserError(
                f"{name}: record {record} at byte {offset}: not a {full_name}: {error}"
            ) from None
        offset = start + length
    return messages


def reader(
    source: Mapping[str, Any], message_type: type[Message]
) -> Callable[[int, int], list[Message]]:
    """Check every sample now (errors before anything runs); give (count, seed) -> messages."""
    if not isinstance(source, Mapping) or not isinstance(source.get("data"), str):
        raise UserError("spec key 'schema.samples' needs 'data' (base64)")
    fmt = source.get("format", "jsonl")
    if fmt not in FORMATS:
        raise UserError(f"unknown samples format {fmt!r}", hint=f"known: {', '.join(FORMATS)}")
    name = str(source.get("name", "samples"))
    try:
        data = base64.b64decode(source["data"], validate=True)
    except ValueError:
        raise UserError("spec key 'schema.samples.data' is not valid base64") from None
    parse = parse_jsonl if fmt == "jsonl" else parse_delimited
    every = parse(data, name, message_type, limit=1 << 62)
    if not every:
        raise UserError(f"{name} holds no message")

    def messages(count: int, _seed: int) -> list[Message]:
        return [_copy(m) for m in every[:count]]

    return messages


def _copy(message: Message) -> Message:
    fresh = type(message)()
    fresh.CopyFrom(message)
    return fresh


__all__ = ["source_from_file"]
