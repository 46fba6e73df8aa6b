"""The handshake: the client names codec, message type and mode before any message.

The client's first frame is HELLO with a JSON object; the responder answers
HELLO with `{"ok": true, ...}` or `{"ok": false, "error": "..."}` and then
closes. A codec, message type or mode the two sides do not share is thus an
error message, never bytes decoded as something they are not.

Each side's whole handshake has one deadline (not a limit per recv()), the
HELLO's length is checked against MAX_HELLO as soon as its 4-byte prefix is
in (before any of its body is awaited), and frames that arrive in the same
write as the HELLO are kept for the conversation, never dropped. A responder
that has a shared token refuses a HELLO without the same `token`.
Version 2 added the processing time at the start of every REPLY body.
"""

from __future__ import annotations

import json
import re
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any

from evbench_agent.link import framing
from evbench_agent.processes import private_environment
from evbench_core import digests
from evbench_core.errors import UserError

PROTOCOL = "evbench-link"
VERSION = 2
MODES = ("echo", "ack")
#: A HELLO body longer than this is refused: it only names a few things.
MAX_HELLO = 4096
#: The `reason` of a refusal because other clients hold every connection slot.
BUSY = "busy"
#: The environment variable that holds the optional shared token (never in argv).
TOKEN_ENV = private_environment.LINK_TOKEN
#: The longest testing reply delay a HELLO may ask for (1 s).
MAX_REPLY_DELAY_NS = 1_000_000_000
#: A value from the peer is quoted in an answer or a log line up to this many characters:
#: a 4000-digit `version` must not be echoed whole.
MAX_QUOTED = 40
#: The longest codec, profile, message or mode name a HELLO may carry.
MAX_NAME = 200


class HandshakeError(UserError):
    """The peers disagree (codec, message type, mode, version) or one is not evbench."""


class BusyError(HandshakeError):
    """The responder refused the HELLO because other clients hold every slot (BUSY):
    one may free within its idle budget, so a client may try again."""


@dataclass(frozen=True)
class Hello:
    codec: str
    profile: str
    message: str  # the protobuf full name of the profile's message type
    mode: str
    protocol: str = PROTOCOL
    version: int = VERSION
    #: The shared token, if the responder has one (never logged, never in argv).
    token: str | None = None
    #: Testing only (calibration of the A/A control): the responder holds each reply
    #: this long after the message arrived, and leaves the hold out of its processing time.
    reply_delay_ns: int = 0

    def document(self) -> dict[str, Any]:
        fields = asdict(self)
        if self.token is None:
            del fields["token"]
        if not self.reply_delay_ns:
            del fields["reply_delay_ns"]
        return fields


def _body(frame: framing.Frame, who: str) -> dict[str, Any]:
    if frame.kind != framing.HELLO:
        raise HandshakeError(f"{who} sent frame kind {frame.kind} where HELLO was expected")
    if len(frame.body) > MAX_HELLO:
        raise HandshakeError(f"{who} sent a HELLO of {len(frame.body)} bytes (cap {MAX_HELLO})")
    try:
        document = json.loads(frame.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise HandshakeError(f"{who} sent a HELLO that is not JSON: {error}") from error
    except RecursionError as error:  # 4 KiB of '[' nests deeper than the parser's stack
        raise HandshakeError(f"{who} sent a HELLO nested too deeply to read") from error
    if not isinstance(document, dict):
        raise HandshakeError(f"{who} sent a HELLO that is not a JSON object")
    return document


def quoted(value: Any) -> str:
    """repr(value), cut to MAX_QUOTED characters: what a peer sent, fit for an answer or a log."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<an integer of {value.bit_length()} bits>"  # repr() of a huge int is slow
    text = repr(value)
    return text if len(text) <= MAX_QUOTED else f"{text[: MAX_QUOTED - 3]}..."


def check_first_length(reader: framing.FrameReader, who: str) -> None:
    """Refuse a first frame whose length prefix (once its 4 bytes are in) cannot be a HELLO:
    below the 9 bytes of kind and sequence, or above MAX_HELLO, before any body is awaited."""
    length, cap = reader.first_length(), framing.HEADER.size + MAX_HELLO
    if length is None:
        return
    if length < framing.HEADER.size:
        raise HandshakeError(
            f"{who} sent a first frame of {length} bytes; a frame has at least "
            f"{framing.HEADER.size} (kind and sequence)"
        )
    if length > cap:
        raise HandshakeError(
            f"{who} sent a first frame of {length} bytes; a HELLO has at most {cap}"
        )


def _first_frame(reader: framing.FrameReader, timeout_s: float, who: str) -> framing.Frame:
    """The first frame, within `timeout_s` in all (a deadline, however the bytes trickle);
    frames after it stay in the reader for the conversation."""
    sock = reader.sock
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            check_first_length(reader, who)
            frames = reader.frames()
            if frames:
                reader.unread(frames[1:])
                return frames[0]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            sock.settimeout(remaining)
            reader.fill()
    except TimeoutError as error:
        raise HandshakeError(
            f"{who} did not complete the handshake within {timeout_s:g} s"
        ) from error
    finally:
        sock.settimeout(None)


def request(reader: framing.FrameReader, hello: Hello, timeout_s: float) -> dict[str, Any]:
    """Client side: send HELLO, return the responder's accepted answer or raise."""
    framing.send(reader.sock, framing.pack(framing.HELLO, 0, json.dumps(hello.document()).encode()))
    answer = _body(_first_frame(reader, timeout_s, "the responder"), "the responder")
    if answer.get("ok") is not True:
        busy = answer.get("reason") == BUSY
        why = str(answer.get("error", "no reason given"))
        hint = (
            "check that both sides run the same evbench version with the same codecs "
            "(and the same EVBENCH_LINK_TOKEN where the responder has one)"
        )
        if busy:
            hint = (
                "other clients hold every connection slot: try again when one finishes, "
                "or start the responder with a larger --max-connections"
            )
        elif "unknown profile" in why and hello.profile.startswith("schema:"):
            hint = (
                "a responder you start yourself knows only the built-in profiles, not your "
                "--schema: measure the link with the loopback responder (the default --peer)"
            )
        kind = BusyError if busy else HandshakeError
        raise kind(f"the responder refused the connection: {why}", hint=hint)
    return answer


#: The program a responder names first in its answer's `responder`, and the implementation
#: the link suite records for it (the rows' `responder` param).
IMPLEMENTATIONS = {"evbench-agent": "python", "evbench-link-responder": "c"}
#: What a responder's program name may be to be recorded as it is (anything else: "other").
_PROGRAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,39}")


def implementation(accepted: dict[str, Any]) -> str | None:
    """Which responder answered, by what its accepted answer names itself: "python"
    (`evbench-agent serve`), "c" (evbench-link-responder), another program's name, or
    None when the answer names none."""
    named = accepted.get("responder")
    if not isinstance(named, str) or not named.split():
        return None
    program = named.split()[0]
    if program in IMPLEMENTATIONS:
        return IMPLEMENTATIONS[program]
    known = _PROGRAM.fullmatch(program) and program not in IMPLEMENTATIONS.values()
    return program if known else "other"


def receive(reader: framing.FrameReader, timeout_s: float, token: str | None = None) -> Hello:
    """Responder side: read and check the client's HELLO (types, protocol and token)."""
    return parse_hello(_first_frame(reader, timeout_s, "the client"), token)


def parse_hello(frame: framing.Frame, token: str | None = None) -> Hello:
    """A client's HELLO frame, checked; the bus transports (UART, ISO-TP) use it directly."""
    document = _body(frame, "the client")
    if document.get("protocol") != PROTOCOL or document.get("version") != VERSION:
        raise HandshakeError(
            f"protocol {quoted(document.get('protocol'))} version "
            f"{quoted(document.get('version'))}; this responder speaks {PROTOCOL!r} "
            f"version {VERSION}"
        )
    fields = ("codec", "profile", "message", "mode")
    if not all(isinstance(document.get(key), str) for key in fields):
        raise HandshakeError(f"a HELLO needs the strings {', '.join(fields)}")
    for key in fields:
        if len(document[key]) > MAX_NAME:
            raise HandshakeError(
                f"the HELLO's {key} {quoted(document[key])} is over {MAX_NAME} characters"
            )
    if document["mode"] not in MODES:
        raise HandshakeError(f"unknown mode {quoted(document['mode'])} (known: {', '.join(MODES)})")
    if token is not None:
        offered = document.get("token")
        if not isinstance(offered, str) or not digests.compare_digest(
            offered.encode("utf-8", "surrogatepass"), token.encode("utf-8", "surrogatepass")
        ):
            raise HandshakeError("the HELLO does not carry this responder's token")
    delay = document.get("reply_delay_ns", 0)
    if type(delay) is not int or not 0 <= delay <= MAX_REPLY_DELAY_NS:
        raise HandshakeError(f"reply_delay_ns must be an integer 0..{MAX_REPLY_DELAY_NS}")
    return Hello(**{key: document[key] for key in fields}, reply_delay_ns=delay)


def answer(
    sock: socket.socket, error: str | None = None, reason: str | None = None, **details: Any
) -> None:
    """Responder side: accept (`error` None) or refuse the HELLO (`reason`: BUSY or None)."""
    document: dict[str, Any] = {"ok": True, **details}
    if error:
        document = {"ok": False, "error": error}
        if reason:
            document["reason"] = reason
    framing.send(sock, framing.pack(framing.HELLO, 0, json.dumps(document).encode()))
