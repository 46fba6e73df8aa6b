"""Raw sockets against a link responder, for the tests of its limits (test_link_hardening,
test_native_responder): what a peer sees, without the module's client."""

from __future__ import annotations

import socket


def closed(sock: socket.socket, timeout_s: float) -> bool:
    """True once the peer closes (EOF or reset) within `timeout_s`."""
    sock.settimeout(timeout_s)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def connect_from(source: str, address: tuple[str, int]) -> socket.socket:
    """A connection from the loopback address `source` (127.0.0.0/8 gives many peers)."""
    return socket.create_connection(address, timeout=5, source_address=(source, 0))
