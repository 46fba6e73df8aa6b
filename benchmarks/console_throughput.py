"""What the serial console moves: command round trips and file throughput at 115200 baud.

Run by hand as root (it creates a throwaway user), never in CI:

    .venv/bin/python benchmarks/console_throughput.py [--repeats 5] [--size 65536]

The line is the tests' one (tests/console_rig.py): agetty, login and bash on a
socat pty pair, 11 520 bytes/s each way (115200 baud, 8N1) through the test
line, without and with kernel-style noise lines (mean interval 0.4 s). For
each: the round trip of `true` (n = 30), and `get` and `put` of a random file
(n = --repeats), as the payload's bytes per second of wall time. Reported as
median [min, max] with n, beside the line's raw capacity and evbench's own
estimate (shell.estimate_seconds) for the same size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from console_rig import BYTES_PER_SECOND, ConsoleRig, ThrowawayUser  # noqa: E402

from evbench.boards.serial import SerialBoard  # noqa: E402
from evbench.boards.serial.shell import estimate_seconds  # noqa: E402


def _line(label: str, values: list[float], unit: str) -> str:
    median = statistics.median(values)
    return (
        f"{label}: {median:.4g} {unit} [{min(values):.4g}, {max(values):.4g}] (n = {len(values)})"
    )


def _measure(board: SerialBoard, size: int, repeats: int, work: Path, home: Path) -> list[str]:
    round_trips = []
    for _ in range(30):
        started = time.perf_counter()
        board.run(["true"], timeout=30)
        round_trips.append(time.perf_counter() - started)
    local = work / "payload.bin"
    local.write_bytes(os.urandom(size))
    remote = f"{home}/evbench-bench.bin"
    gets, puts = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        board.put(local, remote)
        puts.append(size / (time.perf_counter() - started))
        started = time.perf_counter()
        board.get(remote, work / "back.bin")
        gets.append(size / (time.perf_counter() - started))
        assert (work / "back.bin").read_bytes() == local.read_bytes()
    return [
        _line("  round trip of `true`", round_trips, "s"),
        _line(f"  get {size} B", gets, "bytes/s"),
        _line(f"  put {size} B", puts, "bytes/s"),
        f"  frames asked for again (spoiled by noise): {board.session.retried}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--size", type=int, default=65536)
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run as root: it creates a throwaway user to log in as")
    tools = [shutil.which(name) or f"/usr/sbin/{name}" for name in ("useradd", "userdel")]
    user = ThrowawayUser(*tools, shutil.which("chpasswd") or "/usr/sbin/chpasswd")
    os.environ["EVBENCH_PASSWORD"] = user.password
    estimate = estimate_seconds(args.size, 115200)
    print(f"line: {BYTES_PER_SECOND} bytes/s each way; evbench's estimate for {args.size} B:")
    print(f"  {estimate:.2f} s ({args.size / estimate:.0f} bytes/s)")
    try:
        for noise in (False, True):
            with tempfile.TemporaryDirectory() as directory:
                work = Path(directory)
                os.chdir(work)
                rig = ConsoleRig(work / "line", shutil.which("socat"), "/usr/sbin/agetty", noise)
                try:
                    url = f"{rig.url}?user={user.name}"
                    with SerialBoard(url, show_progress=False) as board:
                        print(f"kernel noise {'on' if noise else 'off'}:")
                        for line in _measure(board, args.size, args.repeats, work, user.home):
                            print(line, flush=True)
                finally:
                    rig.stop()
    finally:
        user.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
