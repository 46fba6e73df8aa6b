"""CPU and memory of the agent's processes: the runner and every worker below it.

CPU time is counted so that workers coming and going keep the total
continuous: a live process counts its own user + system time, and a finished
one is counted through its parent's children_user/children_system once it is
reaped. The difference between two samples, over the wall time between them,
is the agent's CPU use in percent of one core (above 100 when several
processes run at once). The sampler itself is left out.

Children are found through /proc/PID/task/TID/children (one small read per
process) instead of scanning every process on the machine, which would cost
more than the rest of a sample; psutil's scan is the fallback on kernels
built without that file.
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil


def _children_from_proc(pid: int) -> list[int]:
    children = []
    for task in os.listdir(f"/proc/{pid}/task"):  # noqa: PTH208 (every sample: cheaper)
        with open(f"/proc/{pid}/task/{task}/children", "rb") as stream:
            children += [int(c) for c in stream.read().split()]
    return children


def _proc_children_supported(pid: int) -> bool:
    return Path(f"/proc/{pid}/task/{pid}/children").exists()


class AgentProcesses:
    def __init__(self, agent_pid: int, exclude: int) -> None:
        self.agent_pid = agent_pid
        self.exclude = exclude
        self.fast = _proc_children_supported(agent_pid)
        self._cache: dict[int, psutil.Process] = {}
        self._previous: tuple[int, float] | None = None

    def pids(self) -> list[int]:
        """The agent and its descendants, now (without the sampler)."""
        if not self.fast:
            try:
                process = psutil.Process(self.agent_pid)
                found = [self.agent_pid] + [c.pid for c in process.children(recursive=True)]
            except psutil.Error:
                return []
            return [pid for pid in found if pid != self.exclude]
        found, queue = [], [self.agent_pid]
        while queue:
            pid = queue.pop()
            if pid == self.exclude:
                continue
            found.append(pid)
            try:
                queue += _children_from_proc(pid)
            except OSError:
                continue  # ended between the listing and now
        return found

    def _process(self, pid: int) -> psutil.Process:
        process = self._cache.get(pid)
        if process is None:
            process = self._cache[pid] = psutil.Process(pid)
        return process

    def usage(self, t_ns: int) -> tuple[float | None, int | None]:
        """(CPU percent of one core since the last call, RSS bytes summed); None at first."""
        cpu_s, rss = 0.0, 0
        pids = self.pids()
        if not pids:
            return None, None
        for pid in pids:
            try:
                process = self._process(pid)
                times = process.cpu_times()  # two small reads; oneshot() costs more than it saves
                rss += process.memory_info().rss
            except psutil.Error:
                continue  # ended just now; its parent counts it once reaped
            cpu_s += times.user + times.system + times.children_user + times.children_system
        for pid in set(self._cache) - set(pids):
            del self._cache[pid]
        previous, self._previous = self._previous, (t_ns, cpu_s)
        if previous is None or t_ns <= previous[0]:
            return None, rss
        return max(0.0, (cpu_s - previous[1]) / ((t_ns - previous[0]) / 1e9) * 100), rss
