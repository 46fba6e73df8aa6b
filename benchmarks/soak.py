"""Soak: the link responder under a fixed mix of clients and attackers, for a long time.

    .venv/bin/python benchmarks/soak.py --minutes 60 --out /tmp/soak.json

One `evbench-agent serve` process (loopback, --max-connections M, default 16) runs
for the whole soak. The mix repeats in cycles of CYCLE_S seconds; in each cycle:

- 4 well-behaved clients connect at 0.5 s and send the seed message at 20 Hz
  (json, ack mode) for 8 s, then close; the time each takes to connect and
  complete its handshake is recorded;
- 2 saturating clients connect at 0.5 s and keep 8 messages in flight
  (protobuf) for 8 s, then close;
- 2 x M attackers, each reconnecting: M slow-loris clients that send a HELLO one
  byte per second until the responder drops them (and reconnect until 6 s),
  M/2 garbage clients that send 64 random bytes, wait to be closed and
  reconnect (until 9 s), and M/2 stallers that complete a handshake at 0.2 s
  and then send nothing until 9 s.

Every connection of the cycle is closed by about 11 s; at 11.5 s, or once every
client of the cycle has ended and the responder holds no client connection
(on a loaded machine that comes later: the point of the cycle, not the clock,
is what is kept the same), the responder's RSS, threads and open file
descriptors are sampled. The report compares the sample nearest minute 1 with the last one:
RSS within 5 %, threads and descriptors equal; and every well-behaved client
must have been served within the responder's handshake deadline.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

import psutil

from evbench_agent.link import client, framing, messages, saturation
from evbench_agent.link.responder import HANDSHAKE_DEADLINE_S
from evbench_agent.link.service import start_responder

CYCLE_S = 12.0
START_S, SEND_S = 0.5, 8.0
SLOW_UNTIL_S, ATTACK_UNTIL_S, SAMPLE_AT_S = 6.0, 9.0, 11.5
#: How long a late client of the cycle is waited for before sampling anyway.
JOIN_LIMIT_S = 60.0
#: The responder's connection threads end within this of their clients' close.
SETTLE_S = 5.0
WELL_BEHAVED, SATURATING = 4, 2
SEED_MESSAGE = "evbench.seed.BackendDataPacket"


def _hello(mode: str = "ack") -> bytes:
    body = json.dumps(
        {
            "codec": "json",
            "profile": "seed",
            "message": SEED_MESSAGE,
            "mode": mode,
            "protocol": "evbench-link",
            "version": 2,
        }
    ).encode()
    return framing.pack(framing.HELLO, 0, body)


class Cycle:
    """One cycle's clock: absolute times from its start."""

    def __init__(self, start: float) -> None:
        self.start = start

    def at(self, offset_s: float) -> float:
        return self.start + offset_s

    def wait_until(self, offset_s: float) -> None:
        time.sleep(max(0.0, self.at(offset_s) - time.monotonic()))

    def before(self, offset_s: float) -> bool:
        return time.monotonic() < self.at(offset_s)


def _until_closed(sock: socket.socket, limit_s: float) -> None:
    sock.settimeout(limit_s)
    try:
        while sock.recv(4096):
            pass
    except OSError:
        pass


def well_behaved(address, cycle: Cycle, results: list) -> None:
    link = messages.bind("json", "seed")
    cycle.wait_until(START_S)
    started = time.monotonic()
    try:
        with client.Connection(address, link, "ack") as connection:
            handshake_s = time.monotonic() - started
            result = client.run_periodic(
                connection, link.sample_data(8, 1), 20.0, round(SEND_S * 20), 0, 0.05
            )
        results.append({"handshake_s": handshake_s, "lost": result.lost, "error": result.error})
    except Exception as error:  # a refusal is what the soak is there to find
        results.append({"handshake_s": None, "lost": None, "error": f"{error}"})


def saturating(address, cycle: Cycle, results: list) -> None:
    link = messages.bind("protobuf", "seed")
    cycle.wait_until(START_S)
    try:
        with client.Connection(address, link, "ack") as connection:
            result = saturation.run_saturation(
                connection, link.sample_data(8, 1), 8, SEND_S - 0.5, 0.5, 0.05
            )
        results.append({"messages": result.messages, "error": result.error})
    except Exception as error:
        results.append({"messages": 0, "error": f"{error}"})


def slow_loris(address, cycle: Cycle, counts: dict) -> None:
    """A HELLO, one byte a second, until the responder drops it; then again (until 6 s)."""
    data = _hello()
    while cycle.before(SLOW_UNTIL_S):
        try:
            with socket.create_connection(address, timeout=5) as sock:
                counts["slow"] += 1
                _dribble(sock, data)
        except OSError:
            time.sleep(0.1)


def _dribble(sock: socket.socket, data: bytes) -> None:
    """One byte a second, stopping when the responder answers or closes."""
    sock.settimeout(1.0)
    for byte in data[:-1]:  # never the last byte: the HELLO stays incomplete
        try:
            sock.sendall(bytes([byte]))
            if not sock.recv(4096):
                return  # closed
            _until_closed(sock, 2.0)  # answered (refused): wait for its close
            return
        except TimeoutError:
            continue  # nothing yet: the next byte
        except OSError:
            return


def garbage(address, cycle: Cycle, counts: dict, rng: random.Random) -> None:
    while cycle.before(ATTACK_UNTIL_S):
        try:
            with socket.create_connection(address, timeout=5) as sock:
                counts["garbage"] += 1
                sock.sendall(rng.randbytes(64))
                _until_closed(sock, 6.0)
        except OSError:
            pass
        time.sleep(0.05)


def staller(address, cycle: Cycle, counts: dict) -> None:
    cycle.wait_until(0.2)
    try:
        with socket.create_connection(address, timeout=5) as sock:
            sock.sendall(_hello())
            counts["stall"] += 1
            cycle.wait_until(ATTACK_UNTIL_S)
    except OSError:
        pass


def _settle(responder: psutil.Process) -> None:
    """Wait (up to SETTLE_S) until the responder holds no client connection."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        established = [
            c for c in responder.net_connections("tcp") if c.status != psutil.CONN_LISTEN
        ]
        if not established:
            return
        time.sleep(0.05)


def sample(process: psutil.Process) -> dict:
    return {
        "rss_bytes": process.memory_info().rss,
        "threads": process.num_threads(),
        "fds": process.num_fds(),
    }


def run_soak(minutes: float, max_connections: int, log=print) -> dict:
    cycles = max(2, round(minutes * 60 / CYCLE_S))
    samples, served, saturated = [], [], []
    counts = {"slow": 0, "garbage": 0, "stall": 0}
    rng = random.Random(20)
    with start_responder(max_connections=max_connections) as responder:
        process = psutil.Process(responder.pid)
        address = responder.address
        for index in range(cycles):
            cycle = Cycle(time.monotonic())
            threads = [
                threading.Thread(target=well_behaved, args=(address, cycle, served))
                for _ in range(WELL_BEHAVED)
            ]
            threads += [
                threading.Thread(target=saturating, args=(address, cycle, saturated))
                for _ in range(SATURATING)
            ]
            threads += [
                threading.Thread(target=slow_loris, args=(address, cycle, counts))
                for _ in range(max_connections)
            ]
            threads += [
                threading.Thread(target=garbage, args=(address, cycle, counts, rng))
                for _ in range(max_connections // 2)
            ]
            threads += [
                threading.Thread(target=staller, args=(address, cycle, counts))
                for _ in range(max_connections // 2)
            ]
            for thread in threads:
                thread.daemon = True
                thread.start()
            # The sampling point: every client of the cycle has closed (on a loaded
            # machine that can be after SAMPLE_AT_S; the point, not the clock, matters),
            # and the responder has had SETTLE_S to end their threads.
            for thread in threads:
                thread.join(max(JOIN_LIMIT_S, cycle.at(SAMPLE_AT_S) - time.monotonic()))
            stuck = sum(thread.is_alive() for thread in threads)
            cycle.wait_until(SAMPLE_AT_S)
            _settle(process)
            point = {"cycle": index, "t_s": round(time.monotonic() - cycle.start, 3)}
            point.update(sample(process), stuck_threads=stuck)
            samples.append(point)
            log(json.dumps(point))
            cycle.wait_until(CYCLE_S)
        alive = responder.alive()
    return summarise(samples, served, saturated, counts, max_connections, alive)


def summarise(samples, served, saturated, counts, max_connections, alive) -> dict:
    minute_one = min(samples, key=lambda s: abs((s["cycle"] + 1) * CYCLE_S - 60))
    last = samples[-1]
    handshakes = [s["handshake_s"] for s in served if s["handshake_s"] is not None]
    failures = [s["error"] for s in served if s["error"]]
    return {
        "cycles": len(samples),
        "cycle_s": CYCLE_S,
        "max_connections": max_connections,
        "responder_alive": alive,
        "minute_one": minute_one,
        "last": last,
        "rss_change": last["rss_bytes"] / minute_one["rss_bytes"] - 1,
        "threads_equal": last["threads"] == minute_one["threads"],
        "fds_equal": last["fds"] == minute_one["fds"],
        "well_behaved": {
            "clients": len(served),
            "failed": len(failures),
            "failures": failures[:5],
            "handshake_max_s": max(handshakes, default=None),
            "handshake_median_s": statistics.median(handshakes) if handshakes else None,
            "within_deadline": bool(handshakes)
            and not failures
            and max(handshakes) < HANDSHAKE_DEADLINE_S,
            "lost": sum(s["lost"] or 0 for s in served),
        },
        "saturating": {
            "clients": len(saturated),
            "failed": sum(1 for s in saturated if s["error"]),
            "messages": sum(s["messages"] for s in saturated),
        },
        "attacks": counts,
        "samples": samples,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--max-connections", type=int, default=16)
    parser.add_argument("--out", type=Path, help="write the summary here as JSON")
    args = parser.parse_args()
    summary = run_soak(
        args.minutes, args.max_connections, log=lambda line: print(line, file=sys.stderr)
    )
    text = json.dumps(summary, indent=2)
    if args.out:
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(args.out)
    print(json.dumps({k: v for k, v in summary.items() if k != "samples"}, indent=2))
    ok = (
        summary["responder_alive"]
        and abs(summary["rss_change"]) <= 0.05
        and summary["threads_equal"]
        and summary["fds_equal"]
        and summary["well_behaved"]["within_deadline"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
