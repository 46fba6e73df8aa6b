"""Atheris campaign: the serial console's frame reader and reply assembly (run by hand).

    .venv/bin/pip install atheris
    mkdir -p /tmp/console_frames-found
    .venv/bin/python benchmarks/fuzz/console_frames.py -runs=1000000 \\
        /tmp/console_frames-found benchmarks/fuzz/corpus/console_frames

An input is what the board's line delivers, split into lines. A line whose first
byte is odd is sent as a frame of the request's tag with a CORRECT check (the rest
of the line, made ASCII, as its kind and fields), so the fuzzer reaches Reply.add
past the checksum, as a hostile or broken board could; other lines go as they are
(noise, kernel messages, damaged frames). Allowed outcomes: take_frames returns
frames and never raises; Reply.add raises nothing or ValueError (which the console
turns into its own ConnectionLost with the transcript); a file whose chunks are
all there assembles. Anything else is a crash (minimise it and keep it in the
console tests; tell the console's owner).
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from evbench.boards.serial import frames

TAG = "0badcafe"


def _line(raw: bytes) -> bytes:
    if not raw or raw[0] % 2 == 0:
        return raw
    body = f"{TAG} " + raw[1:].decode("ascii", "replace").replace("\ufffd", "?")
    body = body.replace("\r", " ").replace("@", " ")
    return b"noise@@" + body.encode("ascii") + b" " + frames.check(body).encode() + b"\r"


def test_one_input(data: bytes) -> None:
    buffer = bytearray(b"\n".join(_line(raw) for raw in data.split(b"\n")) + b"\n")
    found = frames.take_frames(buffer, TAG)
    if b"\n" in buffer:
        raise AssertionError("take_frames left a complete line in the buffer")
    reply = frames.Reply()
    for frame in found:
        if frame.tag != TAG:
            raise AssertionError(f"a frame of tag {frame.tag!r} was taken")
        try:
            reply.add(frame)
        except ValueError:
            return
    for state in reply.files.values():
        if not state.missing():
            state.data()


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
