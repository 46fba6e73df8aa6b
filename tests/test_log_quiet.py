"""Third-party loggers stay quiet unless --debug: a real paramiko failure on loopback.

A TCP server on loopback accepts and closes at once; paramiko's transport thread then
logs "Exception (client): Error reading SSH protocol banner" and its traceback, line
by line, at ERROR: the noise a recovering lab run printed some 20 times per attempt.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration  # a real paramiko connection on loopback

SCRIPT = textwrap.dedent(
    """
    import socket, sys, threading
    import paramiko
    from evbench_core.log_output import setup_logging

    setup_logging("evbench", 0, False, debug=sys.argv[1] == "debug")
    server = socket.create_server(("127.0.0.1", 0))

    def refuse():
        connection, _ = server.accept()
        connection.recv(256)  # the client's banner: then the board goes away
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\\x01\\0\\0\\0\\0\\0\\0\\0")
        connection.close()  # a reset, as from a board that went away

    threading.Thread(target=refuse, daemon=True).start()
    sock = socket.create_connection(server.getsockname(), timeout=10)
    transport = paramiko.Transport(sock)
    try:
        transport.start_client(timeout=10)
    except paramiko.SSHException:
        pass
    transport.close()
    import logging
    logging.getLogger("paramiko.transport").info("connected (version 2.0, client OpenSSH)")
    logging.getLogger("paramiko.transport").error("a plain error line from the library")
    """
)


def _stderr(mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_without_debug_paramiko_says_nothing_of_its_traceback_and_no_error() -> None:
    stderr = _stderr("quiet")
    assert "Traceback" not in stderr and "Error reading SSH protocol banner" not in stderr
    assert "evbench: error:" not in stderr
    assert "connected (version" not in stderr  # its INFO chatter is below the cap
    # What the library says outside a traceback still shows, as a warning.
    assert stderr.splitlines() == ["evbench: warning: a plain error line from the library"]


def test_with_debug_everything_paramiko_logs_is_shown() -> None:
    stderr = _stderr("debug")
    assert "Traceback (most recent call last):" in stderr
    assert "evbench: error: Exception (client): Error reading SSH protocol banner" in stderr
