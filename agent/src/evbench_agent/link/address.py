"""Peer addresses as the command line writes them: HOST:PORT or [IPV6]:PORT."""

from __future__ import annotations

from typing import Any

from evbench_core.errors import UserError


def parse_peer(text: Any) -> tuple[str, int]:
    """(host, port) from 'HOST:PORT'; a clear UserError for anything else."""
    form = "--peer takes loopback, host, or HOST:PORT (for example 192.0.2.7:50505)"
    if not isinstance(text, str) or ":" not in text:
        raise UserError(f"not a peer address: {text!r}", hint=form)
    host, _, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"not a peer address: {text!r}", hint=form)
    return host, int(port)
