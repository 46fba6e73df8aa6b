"""A user's own message: classes built at run time from a serialized FileDescriptorSet.

The host compiles the user's .proto with protoc and ships the descriptor set
in the run spec (key `schema`), so a board needs neither protoc nor generated
code. The classes come from a fresh descriptor pool (never the default one, so
a user file cannot clash with the agent's own schema) and protobuf's message
factory, whose API differs between runtimes: `GetMessageClass` since 4.22,
`MessageFactory.GetPrototype` before it (4.21, Debian 12).

The spec's `schema` object:

    descriptor_set  base64 of a FileDescriptorSet (protoc --include_imports)
    message         the full name of the message to measure
    files           [{"name", "sha256"}] of the .proto files (recorded only)
    profile_name    the profile's name (default "schema:" + message)
    json_style      "proto3" (default) or "fields"
    json_map        {field name: JSON key} (implies the fields style)
    samples         {"name", "format", "sha256", "data" (base64)} or null
    generator       {"name", "sha256", "document"} or null (defaults per type)

Worker processes and the link responder are separate interpreters; `activate`
leaves the document in a private file named by EVBENCH_AGENT_SCHEMA so that
they build the same profile.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import json
import os
import random
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError, Message

from evbench_agent.payloads.convert import message_class
from evbench_agent.payloads.json_style import JsonStyle, make_style
from evbench_agent.payloads.profile import DEFAULT_COUNT, DEFAULT_SEED, PROFILES, Payload, Profile
from evbench_core.errors import UserError

ENVIRONMENT = "EVBENCH_AGENT_SCHEMA"
PREFIX = "schema:"
KEYS = (
    "descriptor_set",
    "message",
    "files",
    "profile_name",
    "json_style",
    "json_map",
    "samples",
    "generator",
)
#: A descriptor set is a few kilobytes; this only stops a wrong file early.
MAX_DESCRIPTOR_SET = 8 * 1024 * 1024


def build_pool(serialized: bytes) -> descriptor_pool.DescriptorPool:
    """A fresh pool holding every file of the set (dependencies before dependants)."""
    try:
        files = descriptor_pb2.FileDescriptorSet.FromString(serialized).file
    except DecodeError as error:
        raise UserError(f"the schema's descriptor set does not parse: {error}") from None
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    pending = list(files)
    while pending:  # protoc lists dependencies first; other tools may not
        ready = [f for f in pending if set(f.dependency) <= added]
        if not ready:
            missing = sorted({d for f in pending for d in f.dependency} - added)
            raise UserError(
                f"the schema's descriptor set lacks imported files: {', '.join(missing)}",
                hint="compile with protoc --include_imports",
            )
        for file in ready:
            try:
                pool.AddSerializedFile(file.SerializeToString())
            except (TypeError, ValueError) as error:  # cpp and upb raise TypeError
                raise UserError(f"the schema file {file.name} does not load: {error}") from None
            added.add(file.name)
        pending = [f for f in pending if f.name not in added]
    return pool


def message_names(serialized: bytes) -> list[str]:
    """Full names of every message in the set (nested ones too, map entries not)."""
    names: list[str] = []

    def visit(prefix: str, messages: Any) -> None:
        for message in messages:
            if message.options.map_entry:
                continue
            full = f"{prefix}{message.name}"
            names.append(full)
            visit(f"{full}.", message.nested_type)

    for file in descriptor_pb2.FileDescriptorSet.FromString(serialized).file:
        visit(f"{file.package}." if file.package else "", file.message_type)
    return names


def find_message(serialized: bytes, full_name: str) -> type[Message]:
    """The class of message `full_name`; a name not in the set lists those that are."""
    pool = build_pool(serialized)
    try:
        descriptor = pool.FindMessageTypeByName(full_name)
    except KeyError:
        names = message_names(serialized)
        raise UserError(
            f"no message {full_name!r} in the schema",
            hint=f"messages there: {', '.join(names) or 'none'}",
        ) from None
    return message_class(descriptor)


@dataclass(frozen=True)
class SchemaProfile(Profile):
    """A profile whose payloads are the user's messages, generated or from samples."""

    style: JsonStyle = field(kw_only=True)
    #: (count, seed) -> the messages, in order.
    make: Callable[[int, int], list[Message]] = field(kw_only=True)

    def to_message(self, plain: Mapping[str, Any]) -> Message:
        return self.style.to_message(plain, self.message_type)

    def to_plain(self, message: Message) -> Any:
        return self.style.to_plain(message)

    def payloads(self, count: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED) -> list[Payload]:
        return [Payload(self.style.to_plain(m), m) for m in self.make(count, seed)]


def _unused_generate(_rng: random.Random, _index: int) -> dict[str, Any]:
    raise TypeError("a schema profile makes messages, not plain data")


def _decode_base64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise UserError(f"spec key 'schema.{what}' must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise UserError(f"spec key 'schema.{what}' is not valid base64") from None


def _check_keys(document: Any) -> None:
    if not isinstance(document, dict):
        raise UserError("spec key 'schema' must be an object")
    unknown = sorted(set(document) - set(KEYS))
    if unknown:
        raise UserError(
            f"unknown key {', '.join(map(repr, unknown))} in spec key 'schema'",
            hint=f"known: {', '.join(KEYS)}",
        )
    for key in ("descriptor_set", "message"):
        if key not in document:
            raise UserError(f"spec key 'schema' needs {key!r}")
    if not isinstance(document["message"], str) or not document["message"]:
        raise UserError("spec key 'schema.message' must be a message's full name")
    if document.get("samples") and document.get("generator"):
        raise UserError("give samples or a generator file, not both")


def profile_name(document: Mapping[str, Any]) -> str:
    name = document.get("profile_name") or f"{PREFIX}{document['message']}"
    if not isinstance(name, str) or not name.strip() or any(c in name for c in ",|\n"):
        raise UserError(
            f"the profile name {name!r} is not usable",
            hint="a profile name has no commas, '|' or newlines",
        )
    return name


def build_profile(document: Mapping[str, Any]) -> SchemaProfile:
    """Validate a `schema` document and build its profile; UserError on anything wrong."""
    from evbench_agent.payloads import generate, samples

    _check_keys(document)
    serialized = _decode_base64(document["descriptor_set"], "descriptor_set")
    if len(serialized) > MAX_DESCRIPTOR_SET:
        raise UserError(f"the schema's descriptor set is over {MAX_DESCRIPTOR_SET} bytes")
    message_type = find_message(serialized, document["message"])
    style = make_style(
        document.get("json_style"), document.get("json_map"), message_type.DESCRIPTOR
    )
    name = profile_name(document)
    sample_source = document.get("samples")
    if sample_source:
        read = samples.reader(sample_source, message_type)
        make = read
        source = f"samples {sample_source.get('name', '?')}"
    else:
        generator_source = document.get("generator") or {}
        make = generate.Generator(
            message_type,
            generator_source.get("document"),
            name,
            generator_source.get("name"),
            any_types=[n for n in message_names(serialized) if not n.startswith("google.")],
        ).messages
        source = f"generated ({generator_source.get('name') or 'default rules'})"
    return SchemaProfile(
        name=name,
        description=f"{document['message']}, {source}, JSON style {style.name}",
        message_type=message_type,
        generate=_unused_generate,
        leaves=style.leaves,
        style=style,
        make=make,
    )


def activate(document: Mapping[str, Any]) -> SchemaProfile:
    """Build, register and hand down the profile to this run's child processes."""
    profile = build_profile(document)
    if profile.name in PROFILES and not isinstance(PROFILES[profile.name], SchemaProfile):
        raise UserError(f"the profile name {profile.name!r} is a built-in profile's")
    PROFILES[profile.name] = profile
    handle, path = tempfile.mkstemp(prefix="evbench-schema-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(dict(document), stream)
    atexit.register(_remove, path)
    os.environ[ENVIRONMENT] = path
    return profile


def _remove(path: str) -> None:
    Path(path).unlink(missing_ok=True)


def from_environment() -> SchemaProfile | None:
    """The profile a parent process activated, in a worker or responder; None without."""
    path = os.environ.get(ENVIRONMENT)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as stream:
            return build_profile(json.load(stream))
    except (OSError, ValueError):
        return None  # a stale variable from an ended run: nothing to add


__all__ = ["activate", "build_profile"]
