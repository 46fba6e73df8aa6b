"""Secrets the agent may find in its environment, and keeps from its children.

Started by hand (`EVBENCH_LINK_TOKEN=... evbench-agent run ...`), the agent
would otherwise pass its whole environment on to every process it starts: the
codec workers, the telemetry sampler, the loopback responder, a detached run.
Any process of the same user can read a child's environment from
/proc/PID/environ, so at start-up (`withhold`, called once by `cli.main`) the
agent takes these variables out of `os.environ`; no child started afterwards
inherits them.

- `EVBENCH_PASSWORD` is the host's board password: the agent never needs it, it
  is dropped.
- `EVBENCH_LINK_TOKEN` is the link responder's shared token: the agent keeps its
  value in memory (`link_token`) for the link client and `serve`; a detached run
  receives it from `launch` through a pipe, never through its environment.

The agent's own /proc/PID/environ still shows what it was started with (the
kernel keeps the original block): that is the caller's choice, not a leak to
a process the caller did not start.
"""

from __future__ import annotations

import os

PASSWORD = "EVBENCH_PASSWORD"
#: The same name as `evbench_agent.link.handshake.TOKEN_ENV` (that module is heavier).
LINK_TOKEN = "EVBENCH_LINK_TOKEN"
#: Never passed on to a child process.
PRIVATE_VARIABLES = (PASSWORD, LINK_TOKEN)
#: The longest token a detached run accepts on its standard input (bytes).
MAX_TOKEN = 4096

_kept: dict[str, str] = {}


def withhold() -> None:
    """Take every private variable out of `os.environ`; keep the link token's value."""
    for name in PRIVATE_VARIABLES:
        value = os.environ.pop(name, None)
        if name == LINK_TOKEN and value:
            _kept[name] = value


def link_token() -> str | None:
    """The shared link token: from the environment (a library caller) or as withheld."""
    return os.environ.get(LINK_TOKEN) or _kept.get(LINK_TOKEN) or None


def keep_link_token(token: str) -> None:
    """Remember `token` as the link token (a detached run, given it on its stdin)."""
    if token:
        _kept[LINK_TOKEN] = token
