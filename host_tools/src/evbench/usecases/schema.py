"""A user's own .proto on the host: compile it with protoc, check it, make the spec's `schema`.

protoc comes from grpcio-tools (`python -m grpc_tools.protoc`, with its bundled
well-known types such as google/protobuf/timestamp.proto), or a `protoc` on
PATH when grpcio-tools is not installed. The result is a FileDescriptorSet
with every import (`--include_imports`), shipped to the board in the run
spec; the board needs no protoc (evbench_agent.payloads.user_schema).

Everything the agent would refuse is refused here first, before a run
directory exists: a .proto that does not compile (protoc's own messages), a
message that is not in it, a samples line or record that does not match, a
generator file with an unknown field, option or an impossible range.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from evbench import yaml_errors
from evbench.boards.base import child_environment
from evbench_agent.payloads import DEFAULT_COUNT, DEFAULT_SEED, samples, user_schema
from evbench_agent.payloads.json_style import STYLES
from evbench_core import regular_file
from evbench_core.errors import UserError

PROTOC_TIMEOUT = 120.0
#: protoc reports every error it finds: the first ones say what is wrong, the rest are counted.
MAX_PROTOC_LINES = 20
#: Far above any real .proto (it is read whole to check that it is text).
MAX_PROTO_BYTES = 64 * 1024 * 1024
MAX_GENERATOR_BYTES = 1024 * 1024


def add_schema_options(parser: argparse.ArgumentParser) -> None:
    """The options of a run with the user's own message (host side: they need protoc)."""
    group = parser.add_argument_group("your own message (docs/own-messages.md)")
    group.add_argument("--schema", type=Path, metavar="FILE.proto", help="the .proto to compile")
    group.add_argument(
        "-I",
        "--proto-path",
        dest="proto_path",
        action="append",
        type=Path,
        metavar="DIR",
        help="an import directory for protoc (repeatable; default: the .proto's directory)",
    )
    group.add_argument("--message", metavar="FULL.NAME", help="the message to measure")
    group.add_argument(
        "--samples",
        type=Path,
        metavar="FILE",
        help="real messages: JSON lines (proto3 JSON) or length-delimited binary",
    )
    group.add_argument(
        "--generate",
        type=Path,
        metavar="FILE",
        help="generator rules (YAML or JSON); default: the documented rules per type",
    )
    group.add_argument(
        "--json-style", choices=STYLES, help="the JSON codecs' data: proto3 (default) or fields"
    )
    group.add_argument(
        "--json-map", type=Path, metavar="FILE", help="JSON object: field name -> JSON key"
    )
    group.add_argument("--profile-name", help="the profile's name (default: schema:FULL.NAME)")


def protoc_command() -> list[str]:
    """grpcio-tools' protoc in this Python, else `protoc` on PATH."""
    if importlib.util.find_spec("grpc_tools") is not None:
        return [sys.executable, "-m", "grpc_tools.protoc"]
    found = shutil.which("protoc")
    if found:
        return [found]
    raise UserError(
        "no protoc to compile the schema",
        hint="install grpcio-tools (pip install grpcio-tools) or protoc (protobuf-compiler)",
    )


def compile_schema(proto: Path, include: list[Path] | None = None) -> bytes:
    """The serialized FileDescriptorSet of `proto` and its imports; protoc's first errors."""
    if not proto.is_file():
        raise UserError(f"the .proto file {proto} does not exist or is not a file")
    # protoc reports every byte of a file that is not text (a binary given by mistake:
    # megabytes of errors); one line says what is wrong instead.
    what = ".proto file"
    _utf8_text(regular_file.read_regular(proto, MAX_PROTO_BYTES, what), proto, what)
    include = include or [proto.parent]
    with tempfile.TemporaryDirectory(prefix="evbench-protoc-") as scratch:
        out = Path(scratch) / "schema.binpb"
        command = [
            *protoc_command(),
            *(f"-I{directory}" for directory in include),
            "--include_imports",
            f"--descriptor_set_out={out}",
            str(proto),
        ]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=PROTOC_TIMEOUT,
                env=child_environment(),
            )
        except subprocess.TimeoutExpired:
            raise UserError(f"protoc did not finish within {PROTOC_TIMEOUT:g} s") from None
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip() or f"exit {done.returncode}"
            raise UserError(
                f"protoc cannot compile {proto}:\n{_first_lines(said, MAX_PROTOC_LINES)}",
                hint="-I DIR adds an import directory" if "not found" in said else None,
            )
        return out.read_bytes()


def _source_files(serialized: bytes, include: list[Path]) -> list[dict[str, str]]:
    """Name and SHA-256 of each file of the set found in the import paths (not bundled ones)."""
    from google.protobuf import descriptor_pb2

    files = []
    for file in descriptor_pb2.FileDescriptorSet.FromString(serialized).file:
        for directory in include:
            candidate = directory / file.name
            if candidate.is_file():
                digest = hashlib.sha256(candidate.read_bytes()).hexdigest()
                files.append({"name": file.name, "sha256": digest})
                break
    return files


def _utf8_text(data: bytes, path: Path, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"the {what} {path} is not UTF-8 text (byte {error.start})") from None


def _first_lines(text: str, limit: int) -> str:
    """At most `limit` lines of `text`, then how many more there were."""
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    return "\n".join([*lines[:limit], f"... and {len(lines) - limit} more lines"])


def _read_document(path: Path, what: str) -> Any:
    text = _utf8_text(regular_file.read_regular(path, MAX_GENERATOR_BYTES, what), path, what)
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as error:
            why = yaml_errors.one_line(error, text)
            raise UserError(f"the {what} {path} is not valid YAML: {why}") from None
        except RecursionError:
            raise UserError(f"the {what} {path} nests too deeply to read") from None
    try:
        return json.loads(text)
    except ValueError as error:
        raise UserError(f"the {what} {path} is not valid JSON: {error}") from None
    except RecursionError:
        raise UserError(f"the {what} {path} nests too deeply to read") from None


def _file_record(path: Path) -> dict[str, str]:
    data = regular_file.read_regular(path, MAX_GENERATOR_BYTES, "generator file")
    return {"name": path.name, "sha256": hashlib.sha256(data).hexdigest()}


def _check_peer_knows_it(args: argparse.Namespace, profile: str) -> None:
    """A responder evbench does not start here (HOST:PORT, or the board's) knows only the
    built-in profiles: a link suite that would send it the user's message is refused now,
    before a run directory exists, not at its handshake."""
    peer = getattr(args, "peer", None)
    if peer in (None, "loopback", "host"):
        return
    suites = [s.strip() for s in (getattr(args, "suite", None) or "all").split(",")]
    if "link" not in suites and "all" not in suites:
        return
    link_profiles = getattr(args, "link_profile", None)
    if link_profiles and profile not in [p.strip() for p in link_profiles.split(",")]:
        return
    raise UserError(
        f"--peer {peer}: that responder knows only the built-in profiles, not {profile!r} "
        "of --schema, so the link suite could not send it your message",
        hint="leave --peer out (the loopback responder gets the schema), use --peer host, "
        "or give --link-profile a built-in profile or --suite codec",
    )


def schema_document(args: argparse.Namespace) -> dict[str, Any] | None:
    """The spec's `schema` for the run's options, checked as the agent will; None without."""
    proto = getattr(args, "schema", None)
    others = ("message", "samples", "generate", "json_style", "json_map", "profile_name")
    if proto is None:
        given = [f"--{name.replace('_', '-')}" for name in others if getattr(args, name, None)]
        if given:
            raise UserError(f"{', '.join(given)} need --schema FILE.proto")
        return None
    if not args.message:
        raise UserError("--schema needs --message FULL.NAME (the message to measure)")
    if args.samples and args.generate:
        raise UserError("give --samples or --generate, not both")
    include = [Path(p) for p in (args.proto_path or [])] or [proto.parent]
    serialized = compile_schema(proto, include)
    document: dict[str, Any] = {
        "descriptor_set": base64.b64encode(serialized).decode("ascii"),
        "message": args.message,
        "files": _source_files(serialized, include),
        "json_style": args.json_style,
    }
    if args.profile_name:
        document["profile_name"] = args.profile_name
    if args.json_map:
        document["json_map"] = _read_document(args.json_map, "JSON map")
    if args.generate:
        document["generator"] = dict(
            _file_record(args.generate), document=_read_document(args.generate, "generator file")
        )
    if args.samples:
        document["samples"] = samples.source_from_file(args.samples)
    profile = user_schema.build_profile(document)  # every check the agent makes, up front
    _check_peer_knows_it(args, profile.name)
    # The run's payloads, made and converted once here too: a generator budget blown or a
    # value the JSON style cannot carry stops the run before its directory exists.
    profile.payloads(getattr(args, "payloads", None) or DEFAULT_COUNT, DEFAULT_SEED)
    if args.samples:  # ship only the messages the run takes, byte for byte
        count = getattr(args, "payloads", None) or DEFAULT_COUNT
        document["samples"] = samples.source_from_file(args.samples, limit=count)
    # A link responder started here (--peer host) is a child: it finds the profile too.
    user_schema.activate(document)
    return document


def write_spec(document: dict[str, Any], directory: Path) -> Path:
    """A spec file holding the `schema` key, for `evbench-agent run --spec`."""
    path = directory / "schema-spec.json"
    path.write_text(json.dumps({"schema": document}), encoding="utf-8")
    return path
