"""evbench's link figures side by side with baselines, on loopback (run by hand).

(a) `rtt_transport` of the link client (echo mode, json codec, seed profile:
    about 1 KB per message) against a bare blocking-socket ping-pong in Python
    with the same framing and payload size, and against
    `sockperf ping-pong --tcp --full-rtt -m 1000`: at 50 ms and back to back.
(b) `send_lateness` of the periodic sender at 50 ms against
    `cyclictest -i 50000 -m` under the same scheduling policy, running at the
    same time (so both meet the same load).

Back to back, the codec's work between messages (encode before a send, decode
after a reply) lengthens the next round trip on its own (caches, idle CPUs),
so the bare ping-pong runs twice: sending the same bytes every time, and doing
the same codec work as the client; and the client runs once more with the
codec taken out (the same bytes every time), which isolates its machinery.

(c) `--ack-vs-echo`: `rtt_transport` in ack and echo mode for json and
    protobuf at 20 Hz, modes and codecs alternating per round: the responder
    reports its processing time, so the two modes should agree within
    max(10 %, 25 µs) (issue 13's acceptance); prints the medians of the
    per-phase medians and the raw send-to-reply times beside them.

Rounds alternate the tools (evbench, bare, sockperf, cyclictest, ...) so slow
drift hits them alike. Medians come with their 95 % interval (order
statistics); ratios are of medians. Needs the Debian packages sockperf and
rt-tests. Usage:

    .venv/bin/python benchmarks/link_vs_baselines.py [--rounds 4] [--seconds 5] [--realtime]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import time

from evbench_agent.link import client, figures, framing, messages, saturation, timing
from evbench_agent.link.service import start_responder
from evbench_core.analysis import stats

ANSI = re.compile(r"\x1b\[[0-9;]*m")
RATE_HZ = 20.0
FIFO = ["chrt", "-f", str(timing.FIFO_PRIORITY)]


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return bytes(data)


def bare_server(port: int) -> None:
    """A blocking echo server with the link framing (a REPLY's processing time first,
    as in protocol 2): one client at a time."""
    with socket.create_server(("127.0.0.1", port)) as listener:
        print(listener.getsockname()[1], flush=True)
        while True:
            sock, _ = listener.accept()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with sock:
                try:
                    while True:
                        header = _read_exactly(sock, 4)
                        body = _read_exactly(sock, struct.unpack("<I", header)[0])
                        received = time.perf_counter_ns()
                        # as evbench's responder (protocol 2): the processing time first
                        head = struct.pack("<I", len(body) + 8) + body[:9]
                        processing = struct.pack("<Q", time.perf_counter_ns() - received)
                        sock.sendall(head + processing + body[9:])
                except ConnectionError:
                    pass


def bare_ping_pong(
    port: int,
    body_size: int,
    rate_hz: float | None,
    seconds: float,
    codec: messages.LinkCodec | None = None,
    data: list | None = None,
) -> list[float]:
    """Blocking send, blocking receive; at `rate_hz` on absolute deadlines, or back to back.

    With `codec`, each message is encoded before its send and the reply decoded
    after its arrival, as an application does (and as the link client does),
    outside the timed span; otherwise the same `body_size` bytes go every time."""
    rtts = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        clock, period = time.perf_counter_ns, round(1e9 / rate_hz) if rate_hz else 0
        start = clock()
        end = start + round(seconds * 1e9)
        sequence = 0
        while clock() < end:
            if period:
                delay = start + sequence * period - clock()
                if delay > 0:
                    time.sleep(delay / 1e9)
            body = codec.encode(data[sequence % len(data)]) if codec else b"x" * body_size
            frame = framing.pack(framing.MESSAGE, sequence, body)
            sent = clock()
            sock.sendall(frame)
            length = struct.unpack("<I", _read_exactly(sock, 4))[0]
            reply = _read_exactly(sock, length)
            arrived = clock()
            processing, body = framing.split_reply(reply[framing.HEADER.size :])
            # like evbench's rtt_transport: the server's own processing time left out
            rtts.append((arrived - sent - processing) / 1e9)
            if codec:
                codec.decode(body)
            sequence += 1
    return rtts[1:]  # the first is the connection's warm-up


def sockperf_median(port: int, rate_hz: float | None, seconds: float, prefix: list[str]) -> float:
    """sockperf's median full RTT, in seconds (its own warm-up is excluded by it)."""
    mps = str(int(rate_hz)) if rate_hz else "max"
    argv = [*prefix, "sockperf", "ping-pong", "--tcp", "--full-rtt", "-m", "1000"]
    argv += ["-i", "127.0.0.1", "-p", str(port), "-t", str(int(seconds)), "--mps", mps]
    output = ANSI.sub("", subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    match = re.search(r"percentile 50\.000 =\s*([0-9.]+)", output)
    if not match:
        raise RuntimeError(f"no median in sockperf's output:\n{output}")
    return float(match.group(1)) / 1e6


def start_cyclictest(seconds: float, realtime: bool) -> subprocess.Popen:
    """cyclictest -i 50000 -m, in the background: it runs while evbench's sender does,
    so both see the same load (they sleep nearly all the time and barely meet)."""
    loops = str(int(seconds * RATE_HZ))
    argv = ["cyclictest", "-i", "50000", "-m", "-q", "-l", loops, "-h", "20000"]
    if realtime:
        argv += ["-p", str(timing.FIFO_PRIORITY)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def cyclictest_latencies(process: subprocess.Popen) -> list[float]:
    """Every wake-up latency from cyclictest's 1 µs histogram, s."""
    output, _ = process.communicate(timeout=600)
    values = []
    for line in output.splitlines():
        match = re.fullmatch(r"(\d+)\s+(\d+)", line.strip())
        if match:
            values += [int(match.group(1)) / 1e6] * int(match.group(2))
    return values


def evbench_periodic(address, link, data, seconds: float) -> client.PhaseResult:
    with client.Connection(address, link, "echo") as connection:
        count = int(seconds * RATE_HZ)
        return client.run_periodic(connection, data, RATE_HZ, count, 5, 1 / RATE_HZ)


def evbench_back_to_back(address, link, data, seconds: float) -> list[float]:
    with client.Connection(address, link, "echo") as connection:
        return saturation.run_saturation(connection, data, 1, seconds, 0.2, 0.05).rtt_transport


def _line(name: str, values: list[float]) -> str:
    summary = stats.summarize(values)
    interval = (
        f"[{summary.ci95_low * 1e6:.1f}, {summary.ci95_high * 1e6:.1f}]"
        if summary.ci95_low is not None
        else "(n too small)"
    )
    return f"  {name:<34} median {summary.median * 1e6:8.1f} µs {interval:<18} n={summary.n}"


def _ratio(name: str, ours: float, theirs: float, limit: float) -> bool:
    ratio = ours / theirs
    verdict = "PASS" if ratio <= limit else "FAIL"
    print(f"  {name:<48} ratio {ratio:5.2f} (limit {limit}) {verdict}")
    return ratio <= limit


def ack_vs_echo(rounds: int, seconds: float) -> int:
    """(c): per codec, ack-mode against echo-mode rtt_transport in the same conditions."""
    rate, per_phase = 20.0, {}
    with start_responder() as responder:
        for _ in range(rounds):
            for codec in ("json", "protobuf"):
                for mode in ("ack", "echo"):
                    link = messages.bind(codec, "seed")
                    with client.Connection(responder.address, link, mode) as connection:
                        result = client.run_periodic(
                            connection,
                            link.sample_data(100, 1),
                            rate,
                            round(seconds * rate),
                            10,
                            0.05,
                        )
                    measured = figures.PhaseFigures(result, rate, 0.05)
                    raw = [
                        (result.replies[s][0] - result.sent[s].send) / 1e9
                        for s in result.answered()
                    ]
                    per_phase.setdefault((codec, mode), []).append(
                        (statistics.median(measured.rtt_transport), statistics.median(raw))
                    )
    within = True
    for codec in ("json", "protobuf"):
        ack, echo = (statistics.median(v[0] for v in per_phase[codec, m]) for m in ("ack", "echo"))
        raw_ack, raw_echo = (
            statistics.median(v[1] for v in per_phase[codec, m]) for m in ("ack", "echo")
        )
        bound = max(0.1 * echo, 25e-6)
        ok = abs(ack - echo) <= bound
        within &= ok
        verdict = "within" if ok else "OUTSIDE"
        print(
            f"{codec:9s} rtt_transport ack {ack * 1e6:6.1f} µs, echo {echo * 1e6:6.1f} µs "
            f"({(ack - echo) * 1e6:+.1f} µs, bound {bound * 1e6:.1f}: {verdict}); "
            f"raw send to reply ack {raw_ack * 1e6:.1f}, echo {raw_echo * 1e6:.1f} µs "
            f"({rounds} phases of {seconds:g} s each)"
        )
    return 0 if within else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0, help="per tool per round at 50 ms")
    parser.add_argument("--b2b-seconds", type=float, default=1.0, help="back to back, per round")
    parser.add_argument("--realtime", action="store_true", help="SCHED_FIFO 80 for every tool")
    parser.add_argument("--ack-vs-echo", action="store_true", help="only (c)")
    parser.add_argument("--bare-server", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ack_vs_echo:
        return ack_vs_echo(args.rounds, args.seconds)
    if args.bare_server is not None:
        if args.realtime:
            timing.enter_realtime()
        bare_server(args.bare_server)
        return 0
    for tool in ("sockperf", "cyclictest", "chrt"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing: apt-get install sockperf rt-tests util-linux")
    prefix = FIFO if args.realtime else []
    scheduling = timing.enter_realtime() if args.realtime else timing.current()
    link = messages.bind("json", "seed")
    data = link.sample_data(200, 1)
    body_size = round(sum(len(link.encode(item)) for item in data) / len(data))
    # The link client with the codec taken out: the same bytes every time, as the
    # bare ping-pong sends them; what is left of a difference is the machinery.
    blob = link.encode(data[0])
    same_bytes = dataclasses.replace(link, encode=lambda _value: blob, decode=lambda _blob: 0)
    bare = subprocess.Popen(
        [*prefix, sys.executable, __file__, "--bare-server", "0"]
        + (["--realtime"] if args.realtime else []),
        stdout=subprocess.PIPE,
        text=True,
    )
    bare_port = int(bare.stdout.readline())
    sockperf_server = subprocess.Popen(
        [*prefix, "sockperf", "server", "--tcp", "-i", "127.0.0.1", "-p", "11111"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    results: dict[str, list[float]] = {}
    cpu_share = []
    try:
        with start_responder(realtime=args.realtime) as responder:
            time.sleep(1)  # sockperf's server: no ready signal
            for round_number in range(args.rounds):
                print(f"round {round_number + 1}/{args.rounds}", file=sys.stderr)
                cyclictest = start_cyclictest(args.seconds, args.realtime)
                phase = evbench_periodic(responder.address, link, data, args.seconds)
                results.setdefault("cyclictest -i 50000 -m", []).extend(
                    cyclictest_latencies(cyclictest)
                )
                measured = figures.PhaseFigures(phase, RATE_HZ, 1 / RATE_HZ)
                results.setdefault("evbench rtt_transport 50 ms", []).extend(measured.rtt_transport)
                results.setdefault("evbench send_lateness 50 ms", []).extend(measured.send_lateness)
                cpu_share.append(phase.client_cpu_ns / 1e9 / args.seconds)
                results.setdefault("bare ping-pong 50 ms", []).extend(
                    bare_ping_pong(bare_port, body_size, RATE_HZ, args.seconds)
                )
                results.setdefault("bare + codec work 50 ms", []).extend(
                    bare_ping_pong(bare_port, body_size, RATE_HZ, args.seconds, link, data)
                )
                results.setdefault("sockperf 50 ms (medians of runs)", []).append(
                    sockperf_median(11111, RATE_HZ, args.seconds, prefix)
                )
                results.setdefault("evbench rtt_transport back to back", []).extend(
                    evbench_back_to_back(responder.address, link, data, args.b2b_seconds)
                )
                results.setdefault("evbench, same bytes, back to back", []).extend(
                    evbench_back_to_back(responder.address, same_bytes, data, args.b2b_seconds)
                )
                results.setdefault("bare ping-pong back to back", []).extend(
                    bare_ping_pong(bare_port, body_size, None, args.b2b_seconds)
                )
                results.setdefault("bare + codec work back to back", []).extend(
                    bare_ping_pong(bare_port, body_size, None, args.b2b_seconds, link, data)
                )
                results.setdefault("sockperf back to back (medians of runs)", []).append(
                    sockperf_median(11111, None, max(2.0, args.b2b_seconds), prefix)
                )
    finally:
        bare.terminate()
        sockperf_server.terminate()
        bare.wait()
        sockperf_server.wait()
    cpu = platform.processor() or platform.machine()
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        model = next((line.split(":", 1)[1].strip() for line in info if "model name" in line), cpu)
    print(f"machine: {model}, {os.cpu_count()} CPUs, Linux {platform.release()}, ")
    print(f"  Python {platform.python_version()}, load average {os.getloadavg()}")
    print(f"scheduling: {scheduling.as_params()}; payload json seed, {body_size} B + 13 B framing")
    print(
        f"rounds: {args.rounds} x {args.seconds:g} s at 50 ms, {args.b2b_seconds:g} s back to back"
    )
    print("(a) round-trip time, loopback (medians with 95% CI of the median)")
    for name, values in results.items():
        if "lateness" not in name and "cyclictest" not in name:
            print(_line(name, values))
    print("(b) wake-up lateness at 50 ms")
    print(_line("evbench send_lateness", results["evbench send_lateness 50 ms"]))
    print(_line("cyclictest (1 µs histogram)", results["cyclictest -i 50000 -m"]))
    print(f"  evbench client CPU while periodic: {100 * max(cpu_share):.2f} % of a core (max)")

    def median(name: str) -> float:
        return stats.summarize(results[name]).median

    print("ratios (evbench / baseline, medians)")
    passed = [
        _ratio(
            f"rtt_transport / bare{kind}, {rate}",
            median(f"evbench rtt_transport {rate}"),
            median(f"bare {name} {rate}"),
            1.15,
        )
        for rate in ("50 ms", "back to back")
        for kind, name in (("", "ping-pong"), (" + codec work", "+ codec work"))
    ] + [
        _ratio(
            "rtt_transport, same bytes / bare, back to back",
            median("evbench, same bytes, back to back"),
            median("bare ping-pong back to back"),
            1.15,
        ),
        _ratio(
            "send_lateness / cyclictest, 50 ms",
            median("evbench send_lateness 50 ms"),
            median("cyclictest -i 50000 -m"),
            1.5,
        ),
    ]
    for name in ("50 ms", "back to back"):
        ours = median(f"evbench rtt_transport {name}")
        theirs = median(f"sockperf {name} (medians of runs)")
        print(f"  {'rtt_transport / sockperf, ' + name:<48} ratio {ours / theirs:5.2f} (reported)")
    return 0 if all(passed) else 3


if __name__ == "__main__":
    sys.exit(main())
