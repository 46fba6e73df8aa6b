"""Which CPUs the link's sender and its loopback responder run on.

Left to the scheduler, each connection's sender thread and responder thread
land on the same CPU or on two, and stay so for the length of a phase: on a
2-core VM a duet's transport RTT then took one of two levels per connection
(about 120 µs or 160 µs), independently for the two codecs of a duet, so the
placement, not the codec, made most of a pair's difference (docs/link.md,
"Placement"). Pinned, every connection of a run has the same placement, and the
pairs compare the codecs alone.

`--link-cpus` (spec `link_cpus`) says where:

- ``auto`` (the default): the sender on the second-last CPU this agent may run
  on, the loopback responder on the last, skipping the telemetry sampler's CPU
  while two others remain; nothing is pinned with fewer than two CPUs;
- ``none``: nothing is pinned (the scheduler places every thread);
- ``C`` or ``C,R``: the sender on CPU C, the loopback responder on CPU R
  (unpinned when not given).

The responder is pinned only when the suite starts it (loopback); a responder
at `--peer` or at a bus's other end is not this agent's to place.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evbench_core.errors import UserError

log = logging.getLogger(__name__)

AUTO = "auto"
NONE = "none"
#: ``C`` or ``C,R``: whole numbers of CPUs.
_CPUS = re.compile(r"^(\d+)(?:,(\d+))?$")


@dataclass(frozen=True)
class Placement:
    """The sender's CPU and the loopback responder's; None: left to the scheduler."""

    client_cpu: int | None = None
    responder_cpu: int | None = None

    def as_params(self) -> dict[str, Any]:
        """The records' identity param: only when something is pinned, so unpinned
        runs keep the identity they had before placement existed."""
        if self.client_cpu is None and self.responder_cpu is None:
            return {}
        return {"cpus": f"{_name(self.client_cpu)},{_name(self.responder_cpu)}"}


#: Nothing pinned: every thread left to the scheduler.
UNPINNED = Placement()


def _name(cpu: int | None) -> str:
    return "-" if cpu is None else str(cpu)


def choose(
    value: str,
    allowed: Collection[int],
    loopback: bool,
    avoid: int | None = None,
) -> Placement:
    """The placement `value` asks for, among the `allowed` CPUs. `loopback`: the suite
    starts the responder here. `avoid`: a CPU kept for something else (telemetry)."""
    cpus = sorted(allowed)
    if value == NONE:
        return UNPINNED
    if value == AUTO:
        free = [cpu for cpu in cpus if cpu != avoid]
        pool = free if len(free) >= 2 else cpus
        if len(pool) < 2:
            return UNPINNED  # one CPU: pinning would change nothing
        return Placement(pool[-2], pool[-1] if loopback else None)
    found = _CPUS.match(value)
    if found is None:  # the spec's schema refuses it first
        raise UserError(
            f"--link-cpus takes auto, none, CLIENT or CLIENT,RESPONDER (CPU numbers), not {value!r}"
        )
    asked = [int(group) for group in found.groups() if group is not None]
    for cpu in asked:
        if cpu not in cpus:
            raise UserError(
                f"--link-cpus {value}: CPU {cpu} is not one this agent may run on",
                hint=f"choose among {', '.join(map(str, cpus))}",
            )
    client, responder = asked[0], (asked[1] if len(asked) > 1 else None)
    if responder is not None and not loopback:
        raise UserError(
            f"--link-cpus {value}: the responder is at the other end (--peer or a bus), "
            "not started here, so it cannot be placed",
            hint=f"give --link-cpus {client}",
        )
    return Placement(client, responder)


@contextlib.contextmanager
def sender_on(cpu: int | None) -> Iterator[None]:
    """Pin the calling thread (and so every thread it starts) to `cpu` until the end
    of the block, then give it back the CPUs it had."""
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def pin_process(pid: int, cpu: int | None, proc: Path = Path("/proc")) -> None:
    """Pin every thread of process `pid` to `cpu` (threads it starts later inherit
    their starter's CPUs). A thread that ends meanwhile is skipped."""
    if cpu is None:
        return
    tasks = proc / str(pid) / "task"
    try:
        tids = [int(entry.name) for entry in tasks.iterdir()]
    except OSError:
        tids = [pid]  # no /proc: its first thread at least
    for tid in tids:
        try:
            os.sched_setaffinity(tid, {cpu})
        except ProcessLookupError:
            continue
    log.debug("responder %d pinned to CPU %d (%d threads)", pid, cpu, len(tids))
