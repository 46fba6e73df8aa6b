"""Atheris campaign: the link frame reader on arbitrary bytes (run by hand).

    .venv/bin/pip install atheris
    .venv/bin/python benchmarks/fuzz/link_frames.py -runs=1000000 \\
        /tmp/link_frames-found benchmarks/fuzz/corpus/link_frames

Each input goes over a real socket pair to a FrameReader (cap 4096 bytes) until the
sender's EOF. Allowed outcomes: frames that re-pack to exactly the input, or a
FrameError. Anything else is a crash: atheris stops, saves the input; minimise it
(-minimize_crash=1) and keep it in tests/test_link_fuzz.py as a regression case.

libFuzzer adds what it finds to the FIRST corpus directory: give it a scratch one
(`mkdir /tmp/...-found` first), so the seed corpus in the repository stays as it is.
"""

from __future__ import annotations

import socket
import sys

import atheris

with atheris.instrument_imports():
    from evbench_agent.link import framing


def test_one_input(data: bytes) -> None:
    left, right = socket.socketpair()
    with left, right:
        right.settimeout(5)
        left.sendall(data)
        left.shutdown(socket.SHUT_WR)
        reader, frames = framing.FrameReader(right, 4096), []
        try:
            while True:
                frames += reader.receive()
        except framing.PeerClosed:
            pass
        except framing.FrameError:
            return
    packed = b"".join(framing.pack(*frame) for frame in frames)
    if packed != data:
        raise AssertionError(f"{len(frames)} frames re-pack to other bytes than the input")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
