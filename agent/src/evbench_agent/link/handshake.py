"""The handshake: the client names codec, message type and mode before any message.

The client's first frame is HELLO with a JSON object; the responder answers
HELLO with `{"ok": true, ...}` or `{"ok": false, "error": "..."}` and then
closes. A codec, message type or mode the two sides do not share is thus an
error message, never bytes decoded as something they are not.
"""

from __future__ import annotations

import json
import socket
from dataclasses import asdict, dataclass
from typing import Any

from evbench_agent.errors import UserError
from evbench_agent.link import framing

PROTOCOL = "evbench-link"
VERSION = 1
MODES = ("echo", "ack")
#: A HELLO body longer than this is refused: it only names a few things.
MAX_HELLO = 4096


class HandshakeError(UserError):
    """The peers disagree (codec, message type, mode, version) or one is not evbench."""


@dataclass(frozen=True)
class Hello:
    codec: str
    profile: str
    message: str  # the protobuf full name of the profile's message type
    mode: str
    protocol: str = PROTOCOL
    version: int = VERSION


def _body(frame: framing.Frame, who: str) -> dict[str, Any]:
    if frame.kind != framing.HELLO:
        raise HandshakeError(f"{who} sent frame kind {frame.kind} where HELLO was expected")
    if len(frame.body) > MAX_HELLO:
        raise HandshakeError(f"{who} sent a HELLO of {len(frame.body)} bytes (cap {MAX_HELLO})")
    try:
        document = json.loads(frame.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise HandshakeError(f"{who} sent a HELLO that is not JSON: {error}") from error
    if not isinstance(document, dict):
        raise HandshakeError(f"{who} sent a HELLO that is not a JSON object")
    return document


def _first_frame(reader: framing.FrameReader, timeout_s: float, who: str) -> framing.Frame:
    sock = reader.sock
    sock.settimeout(timeout_s)
    try:
        while True:
            frames = reader.frames() or reader.receive()
            if frames:
                return frames[0]
    except TimeoutError as error:
        raise HandshakeError(
            f"{who} did not complete the handshake within {timeout_s:g} s"
        ) from error
    finally:
        sock.settimeout(None)


def request(reader: framing.FrameReader, hello: Hello, timeout_s: float) -> dict[str, Any]:
    """Client side: send HELLO, return the responder's accepted answer or raise."""
    framing.send(reader.sock, framing.pack(framing.HELLO, 0, json.dumps(asdict(hello)).encode()))
    answer = _body(_first_frame(reader, timeout_s, "the responder"), "the responder")
    if answer.get("ok") is not True:
        raise HandshakeError(
            f"the responder refused the connection: {answer.get('error', 'no reason given')}",
            hint="check that both sides run the same evbench version with the same codecs",
        )
    return answer


def receive(reader: framing.FrameReader, timeout_s: float) -> Hello:
    """Responder side: read and check the client's HELLO (types and protocol only)."""
    document = _body(_first_frame(reader, timeout_s, "the client"), "the client")
    if document.get("protocol") != PROTOCOL or document.get("version") != VERSION:
        raise HandshakeError(
            f"protocol {document.get('protocol')!r} version {document.get('version')!r}; "
            f"this responder speaks {PROTOCOL!r} version {VERSION}"
        )
    fields = ("codec", "profile", "message", "mode")
    if not all(isinstance(document.get(key), str) for key in fields):
        raise HandshakeError(f"a HELLO needs the strings {', '.join(fields)}")
    if document["mode"] not in MODES:
        raise HandshakeError(f"unknown mode {document['mode']!r} (known: {', '.join(MODES)})")
    return Hello(**{key: document[key] for key in fields})


def answer(sock: socket.socket, error: str | None = None, **details: Any) -> None:
    """Responder side: accept (`error` None) or refuse the HELLO."""
    document = {"ok": False, "error": error} if error else {"ok": True, **details}
    framing.send(sock, framing.pack(framing.HELLO, 0, json.dumps(document).encode()))
