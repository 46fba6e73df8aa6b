"""The link responders under the attacks of issue 44 (items 7, 8, 10), on loopback only.

    .venv/bin/python benchmarks/link_attacks.py hogs --responder c --native PATH \
        --hogs 32 --sources many
    .venv/bin/python benchmarks/link_attacks.py loris --responder python --runs 12
    .venv/bin/python benchmarks/link_attacks.py orphan --native PATH --rounds 3

Every connection goes to a responder this script starts on 127.0.0.1 (port 0), from
127.0.0.0/8 source addresses; every count, wait and time is bounded.

- `hogs`: N slot hogs (a complete handshake, then one small MESSAGE every 3 s, inside
  the idle budget of 5 s; each reconnects 0.2 s after it is refused or dropped), from one
  address (127.0.0.2) or from many (127.0.0.2, .3, ...), while real clients (the
  module's client.Connection, a handshake and 3 messages at 50 Hz) come from 127.0.0.1
  every 0.15 s for --seconds: prints how many were served.
- `loris`: a slow-loris crowd of --crowd connections on 127.0.0.1, the client's own
  address (one byte of a HELLO every 8 s, each reconnecting when dropped), while whole
  link runs (`evbench-agent run --suite link --quick --rate 100 --count 6 --peer ...`)
  run one after the other: prints how many exited 0.
- `orphan`: `evbench-agent run --suite link --responder c` with its standard output a
  pipe (as a host drives it) is SIGKILLed, with the program that reads that pipe, once
  its responder listens: prints in how many rounds the responder was still running
  5 s later, and its parent.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from evbench_agent.link import client, framing, messages

HOG_EVERY_S = 3.0
RETRY_S = 0.2
PROBE_EVERY_S = 0.15
START_LIMIT_S = 30.0
RUN_LIMIT_S = 300.0


def start(kind: str, native: str | None) -> tuple[subprocess.Popen[str], tuple[str, int]]:
    """A responder on 127.0.0.1, port 0, with its defaults; its log discarded."""
    if kind == "c":
        if native is None:
            raise SystemExit("--responder c needs --native PATH (evbench-link-responder)")
        argv = [native, "--port", "0"]
    else:
        argv = [sys.executable, "-m", "evbench_agent", "serve", "--port", "0"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(START_LIMIT_S):
            process.kill()
            raise SystemExit("the responder did not say it listens")
        event = json.loads(process.stdout.readline())
    return process, (event["host"], int(event["port"]))


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _hello(mode: str) -> bytes:
    document = {"protocol": "evbench-link", "version": 2, "codec": "json", "profile": "seed",
                "message": "evbench.seed.BackendDataPacket", "mode": mode}  # fmt: skip
    return framing.pack(framing.HELLO, 0, json.dumps(document).encode())


def _frame(sock: socket.socket) -> tuple[int, bytes]:
    """One frame (kind, body), read by hand; raises OSError when closed."""
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack("<I", data[:4])[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data[4], data[13 : 4 + struct.unpack("<I", data[:4])[0]]


class Hogs:
    """`count` hogs from `sources` (round robin), each in its own thread."""

    def __init__(self, address: tuple[str, int], count: int, sources: list[str]) -> None:
        self.address = address
        self.halt = threading.Event()
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._hog, args=(sources[i % len(sources)],), daemon=True)
            for i in range(count)
        ]

    def __enter__(self) -> Hogs:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.halt.set()
        for thread in self.threads:
            thread.join(10)

    def _count(self, what: str) -> None:
        with self.lock:
            self.counts[what] += 1

    def _hog(self, source: str) -> None:
        body = b"x" * 16
        while not self.halt.is_set():
            try:
                with socket.create_connection(self.address, 2, (source, 0)) as sock:
                    sock.settimeout(5)
                    sock.sendall(_hello("echo"))
                    _kind, answer = _frame(sock)
                    if not json.loads(answer).get("ok"):
                        self._count("refused")
                    else:
                        self._count("slots taken")
                        sequence = 0
                        while not self.halt.is_set():
                            sock.sendall(framing.pack(framing.MESSAGE, sequence, body))
                            _frame(sock)
                            sequence += 1
                            if self.halt.wait(HOG_EVERY_S):
                                return
            except (OSError, ValueError):
                self._count("dropped")
            self.halt.wait(RETRY_S)


def probe(address: tuple[str, int], link: messages.LinkCodec, data: list) -> str | None:
    """One real client: handshake and 3 messages at 50 Hz; None when served, else why not."""
    try:
        with client.Connection(address, link, "ack", timeout_s=5.0) as connection:
            result = client.run_periodic(connection, data, 50.0, 3, 0, 1.0)
    except Exception as error:  # the verdict is the point: say what went wrong
        return f"{type(error).__name__}: {str(error)[:120]}"
    if result.error or result.lost:
        return f"phase error {result.error!r}, {result.lost} lost"
    return None


def run_hogs(args: argparse.Namespace) -> dict:
    process, address = start(args.responder, args.native)
    sources = ["127.0.0.2"]
    if args.sources == "many":
        sources = [f"127.0.0.{2 + i}" for i in range(args.hogs)]
    link = messages.bind("json", "seed")
    data = link.sample_data(3, 1)
    failures: Counter[str] = Counter()
    probes = 0
    try:
        with Hogs(address, args.hogs, sources) as hogs:
            time.sleep(2.0)  # the hogs are in
            started = time.monotonic()
            while time.monotonic() - started < args.seconds:
                probes += 1
                why = probe(address, link, data)
                if why is not None:
                    failures[why[:90]] += 1
                time.sleep(PROBE_EVERY_S)
            hog_counts = dict(hogs.counts)
        alive = process.poll() is None
    finally:
        stop(process)
    served = probes - sum(failures.values())
    return {"scenario": "hogs", "responder": args.responder, "hogs": args.hogs,
            "sources": args.sources, "served": served, "probes": probes,
            "share": round(served / probes, 3) if probes else None, "responder_alive": alive,
            "hogs_counts": hog_counts, "failures": failures.most_common(4)}  # fmt: skip


class Loris:
    """`size` connections from `source` that each send a byte of a HELLO every `every_s`
    and reconnect at once when closed (one thread, one selector)."""

    def __init__(self, address: tuple[str, int], size: int, every_s: float, source: str) -> None:
        self.address, self.size, self.every_s, self.source = address, size, every_s, source
        self.halt = threading.Event()
        self.connects = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Loris:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.halt.set()
        self.thread.join(10)

    def _run(self) -> None:
        prefix = struct.pack("<I", 109) + b"\x00" * 9
        due: dict[socket.socket, float] = {}
        sent: dict[socket.socket, int] = {}
        with selectors.DefaultSelector() as selector:
            try:
                while not self.halt.is_set():
                    while len(due) < self.size and not self.halt.is_set():
                        try:
                            sock = socket.create_connection(self.address, 2, (self.source, 0))
                        except OSError:
                            break
                        self.connects += 1
                        sock.setblocking(False)
                        selector.register(sock, selectors.EVENT_READ)
                        due[sock] = time.monotonic()
                    for key, _ in selector.select(0.2):
                        sock = key.fileobj  # type: ignore[assignment]
                        try:
                            gone = sock.recv(4096) == b""
                        except (BlockingIOError, InterruptedError):
                            gone = False
                        except OSError:
                            gone = True
                        if gone:
                            selector.unregister(sock)
                            sock.close()
                            due.pop(sock, None)
                            sent.pop(sock, None)
                    now = time.monotonic()
                    for sock, when in list(due.items()):
                        if when <= now:
                            index = sent.get(sock, 0) % len(prefix)
                            with contextlib.suppress(OSError):
                                sock.send(prefix[index : index + 1])
                            sent[sock] = index + 1
                            due[sock] = now + self.every_s
            finally:
                for sock in due:
                    sock.close()


def link_run(address: tuple[str, int], out: Path) -> tuple[int, str]:
    argv = [sys.executable, "-m", "evbench_agent", "run", "--suite", "link", "--quick",
            "--rate", "100", "--count", "6", "--codecs", "json,protobuf",
            "--peer", f"{address[0]}:{address[1]}", "--out", str(out), "--debug"]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_LIMIT_S)
    except subprocess.TimeoutExpired:
        return -1, "timed out"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return done.returncode, (lines[-1][-200:] if lines and done.returncode else "")


def run_loris(args: argparse.Namespace) -> dict:
    process, address = start(args.responder, args.native)
    codes: Counter[int] = Counter()
    why: Counter[str] = Counter()
    try:
        with (
            Loris(address, args.crowd, 8.0, "127.0.0.1") as crowd,
            tempfile.TemporaryDirectory() as tmp,
        ):
            time.sleep(2.0)  # the crowd is in
            for index in range(args.runs):
                code, last = link_run(address, Path(tmp) / f"run{index}")
                codes[code] += 1
                if code:
                    why[last] += 1
                print(f"run {index + 1}: exit {code} {last}", file=sys.stderr, flush=True)
            connects = crowd.connects
        alive = process.poll() is None
    finally:
        stop(process)
    return {"scenario": "loris", "responder": args.responder, "crowd": args.crowd,
            "runs": args.runs, "succeeded": codes[0], "exit_codes": dict(codes),
            "crowd_connects": connects, "responder_alive": alive,
            "failures": why.most_common(3)}  # fmt: skip


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
                if int(fields[1]) == pid:
                    found.append(int(entry.name))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _state(pid: int) -> tuple[str, int] | None:
    """(state, parent) of a process still running (not a zombie), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else (fields[0], int(fields[1]))


def run_orphan(args: argparse.Namespace) -> dict:
    if args.native is None:
        raise SystemExit("orphan needs --native PATH (evbench-link-responder)")
    environment = dict(os.environ, EVBENCH_NATIVE_DIR=str(Path(args.native).resolve().parent))
    orphaned, parents = 0, []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            # the host: a program that starts the agent with its stdout a pipe, as evbench does
            host_code = (
                "import subprocess, sys, time\n"
                "agent = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)\n"
                "print(agent.pid, flush=True)\n"
                "time.sleep(600)\n"
            )
            argv = [sys.executable, "-c", host_code, sys.executable, "-m", "evbench_agent", "run",
                    "--suite", "link", "--quick", "--duration", "60", "--responder", "c",
                    "--out", str(Path(tmp) / "run")]  # fmt: skip
            host = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True, env=environment)  # fmt: skip
            assert host.stdout is not None
            agent = int(host.stdout.readline())
            responder = None
            deadline = time.monotonic() + 60
            while responder is None and time.monotonic() < deadline:
                found = [p for p in _children(agent) if b"evbench-link-responder" in _cmdline(p)]
                responder = found[0] if found else None
                time.sleep(0.1)
            time.sleep(1.0)  # into its first phase
            for pid in (host.pid, agent):  # killed together
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            host.wait(10)
            host.stdout.close()
            if responder is None:
                print("the agent never started its responder", file=sys.stderr)
                continue
            time.sleep(5.0)
            state = _state(responder)
            if state is not None:
                orphaned += 1
                parents.append(state[1])
                os.kill(responder, signal.SIGKILL)
    return {"scenario": "orphan", "rounds": args.rounds, "still_running_after_5_s": orphaned,
            "their_parents": parents}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=("hogs", "loris", "orphan"))
    parser.add_argument("--responder", choices=("python", "c"), default="python")
    parser.add_argument("--native", help="the C responder (evbench-link-responder)")
    parser.add_argument("--hogs", type=int, default=16, choices=range(1, 65), metavar="1..64")
    parser.add_argument("--sources", choices=("one", "many"), default="one")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--crowd", type=int, default=50, choices=range(1, 201), metavar="1..200")
    parser.add_argument("--runs", type=int, default=12, choices=range(1, 51), metavar="1..50")
    parser.add_argument("--rounds", type=int, default=3, choices=range(1, 11), metavar="1..10")
    args = parser.parse_args()
    args.seconds = min(max(args.seconds, 1.0), 600.0)
    run = {"hogs": run_hogs, "loris": run_loris, "orphan": run_orphan}[args.scenario]
    print(json.dumps(run(args)), flush=True)


if __name__ == "__main__":
    main()
