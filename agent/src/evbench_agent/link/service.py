"""Start and stop a responder process from another program (the suite, the host).

    with start_responder(bind="192.0.2.10", port=0) as responder:
        host, port = responder.address
        ...

The responder is `python -m evbench_agent serve`, a separate process as the
seed app's isolate was, or, given `native`, the C responder
(evbench-link-responder, native/responder), which takes the same options.
Either reports the address it bound on its standard output;
`stop()` sends SIGTERM and waits for a clean exit.
"""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from collections.abc import Sequence

from evbench_agent.link import framing, placement
from evbench_agent.link.responder import DEFAULT_MAX_CONNECTIONS, LOOPBACK
from evbench_core.errors import EvbenchError

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class ResponderProcess:
    """A running `evbench-agent serve`; a context manager that stops it on exit."""

    def __init__(self, process: subprocess.Popen[str], address: tuple[str, int]) -> None:
        self.process = process
        self.address = address

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM, then wait; a responder that does not stop in time is killed."""
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()
        return self.process.returncode

    def __enter__(self) -> ResponderProcess:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def start_responder(
    bind: str = LOOPBACK,
    port: int = 0,
    max_frame: int = framing.DEFAULT_MAX_FRAME,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    realtime: bool = False,
    python: str = sys.executable,
    extra_args: Sequence[str] = (),
    native: str | None = None,
    cpu: int | None = None,
) -> ResponderProcess:
    """Start a responder bound to `bind`:`port` (0: a free port); return once it listens.

    `native`: the C responder's executable, instead of `python -m evbench_agent serve`.
    `cpu`: pin the responder, every thread of it, to this CPU (link.placement).
    Its log lines go to this process's standard error.
    """
    program = [native] if native is not None else [python, "-m", "evbench_agent", "serve"]
    argv = [*program, "--bind", bind, "--port", str(port)]
    argv += ["--max-frame", str(max_frame), "--max-connections", str(max_connections)]
    if realtime:
        argv.append("--realtime")
    process = subprocess.Popen([*argv, *extra_args], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None  # stdout=PIPE
    deadline = time.monotonic() + START_TIMEOUT_S
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while (remaining := deadline - time.monotonic()) > 0:
            if not selector.select(remaining):
                continue
            line = process.stdout.readline()
            if not line:
                break
            event = json.loads(line)
            if event.get("event") == "listening":
                # Pinned once listening: the threads it has by then and, through them,
                # every connection's thread it starts later.
                try:
                    placement.pin_process(process.pid, cpu)
                except OSError as error:
                    ResponderProcess(process, (bind, port)).stop()
                    raise EvbenchError(
                        f"could not pin the responder to CPU {cpu}: {error.strerror}"
                    ) from error
                return ResponderProcess(process, (event["host"], int(event["port"])))
    ResponderProcess(process, (bind, port)).stop()
    raise EvbenchError(
        f"the responder did not start listening on {bind}:{port} within {START_TIMEOUT_S:g} s "
        f"(exit {process.returncode}; its error is above)"
    )


__all__ = ["start_responder"]
