"""A test's view of the processes below one of its own: read from /proc, no psutil,
so what it sees is what the kernel says (parent links, environ, command line)."""

import time
from pathlib import Path


def descendants(root: int) -> list[int]:
    """Every process below `root`, from /proc's parent links."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:  # it ended while we looked
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def read_proc(pid: int, name: str) -> bytes:
    """/proc/PID/NAME, or b"" when the process has ended."""
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return b""


def ended(pid: int, timeout_s: float = 15.0) -> bool:
    """Whether process `pid` ends within `timeout_s`: gone, or a zombie (it has ended;
    only its parent, often init after a detached start, has not reaped it yet)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = read_proc(pid, "stat").rpartition(b")")[2].split()[:1]
        if state in ([], [b"Z"], [b"X"]):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
