"""Atheris campaign: the responder's side of the link handshake (run by hand).

    .venv/bin/pip install atheris
    .venv/bin/python benchmarks/fuzz/link_handshake.py -runs=1000000 \\
        /tmp/link_handshake-found benchmarks/fuzz/corpus/link_handshake

Each input is what a client sends before EOF, over a real socket pair, to
handshake.receive with a shared token configured. Allowed outcomes: a Hello with a
known mode, or one of the project's own errors (EvbenchError: HandshakeError,
FrameError, PeerClosed). Anything else is a crash (see link_frames.py for what then).

libFuzzer adds what it finds to the FIRST corpus directory: give it a scratch one
(`mkdir /tmp/...-found` first), so the seed corpus in the repository stays as it is.
"""

from __future__ import annotations

import socket
import sys

import atheris

with atheris.instrument_imports():
    from evbench_agent.link import framing, handshake
    from evbench_core.errors import EvbenchError


def test_one_input(data: bytes) -> None:
    left, right = socket.socketpair()
    with left, right:
        left.sendall(data)
        left.shutdown(socket.SHUT_WR)
        try:
            hello = handshake.receive(framing.FrameReader(right), 2.0, token="corpus-token")
        except EvbenchError:
            return
    if hello.mode not in handshake.MODES:
        raise AssertionError(f"accepted mode {hello.mode!r}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
