"""What the native harness adds to a sample: the harness against a bare C loop.

Run by hand on a quiet machine, never in CI:

    .venv/bin/python benchmarks/native_overhead.py [--harness-dir native/build] [--rounds 20]
        [--samples 5] [--min-time 0.01]

Both time the same protobuf-c calls (encode: get_packed_size + pack; decode:
unpack + free_unpacked) on the same bytes (the seed profile's payload 0), with
the same compiler flags (-O3 -DNDEBUG, CMake's Release) and the same clock
(CLOCK_MONOTONIC around the inner loop):

- the harness (`evbench-native-c-protobuf-c`), driven over its pipe protocol
  exactly as a worker drives it (evbench_agent.native.protocol.Harness.time);
- `benchmarks/native/bare_loop.c`, a program that does the calls in a loop and
  nothing else.

Rounds alternate which goes first; each round takes `--samples` samples of
each, of the loop count that spans `--min-time` seconds. Per round: the ratio
harness/bare of the medians. Printed: the median of the round ratios with its
distribution-free 95 % interval (order statistics of the binomial sign test;
the round is what replicates), the per-operation medians, and the agent's cost
per sample outside the timed region (the request's wall time minus what the
harness timed). Aim (issue 33): within 5 %.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evbench_agent import payloads
from evbench_agent.native.protocol import Harness, Loaded

ROOT = Path(__file__).resolve().parent.parent
TYPE = "evbench.seed.BackendDataPacket"


def build_harnesses(directory: Path) -> Path:
    subprocess.run(
        ["cmake", "-S", str(ROOT / "native"), "-B", str(directory), "-DCMAKE_BUILD_TYPE=Release",
         "-DEVBENCH_NATIVE_CODECS=c:protobuf-c"],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(["cmake", "--build", str(directory)], check=True, capture_output=True)
    return directory


def build_bare_loop(harness_dir: Path, out: Path) -> Path:
    generated = harness_dir / "generated" / "protobuf-c"
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "libprotobuf-c"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    executable = out / "bare_loop"
    subprocess.run(
        [shutil.which("cc") or "cc", "-O3", "-DNDEBUG", "-std=gnu11", f"-I{generated}",
         str(ROOT / "benchmarks" / "native" / "bare_loop.c"), str(generated / "ev_data.pb-c.c"),
         "-o", str(executable), *flags],
        check=True,
    )  # fmt: skip
    return executable


def bare_samples(executable: Path, operation: str, payload: Path, loops: int, count: int) -> list:
    done = subprocess.run(
        [str(executable), operation, str(payload), str(loops), str(count + 1)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    # The first sample of a fresh process warms its caches (the harness's are warm): dropped.
    return [int(line) / loops for line in done.stdout.split()[1:]]


def harness_samples(
    harness: Harness, operation: str, loaded: Loaded, loops: int, count: int, outside: list
) -> list[float]:
    """`count` samples from the harness (ns per operation); `outside` gets, per sample, the
    request's wall time minus what the harness timed (the agent's cost per sample)."""
    taken = []
    for _ in range(count):
        start = time.perf_counter_ns()
        timing = harness.time(operation, loaded, loops)
        outside.append(time.perf_counter_ns() - start - timing.elapsed_ns)
        taken.append(timing.elapsed_ns / loops)
    return taken


def median_interval(values: list[float]) -> tuple[float, float, float]:
    """The median and its distribution-free 95 % interval (binomial order statistics)."""
    ordered, n = sorted(values), len(values)
    k = 0  # the largest k with P(Binomial(n, 1/2) < k) <= 0.025 on each side
    while sum(math.comb(n, i) for i in range(k + 1)) / 2**n <= 0.025:
        k += 1
    low, high = (ordered[k - 1], ordered[n - k]) if k else (ordered[0], ordered[-1])
    return statistics.median(ordered), low, high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness-dir", type=Path, help="built native/ (default: build one)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.01)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evbench-native-bench-") as scratch_name:
        scratch = Path(scratch_name)
        harness_dir = args.harness_dir or build_harnesses(scratch / "build")
        bare = build_bare_loop(harness_dir, scratch)
        data = payloads.get("seed").payloads(1)[0].message.SerializeToString()
        payload_file = scratch / "payload.bin"
        payload_file.write_bytes(data)
        harness = Harness("c:protobuf-c", str(harness_dir / "evbench-native-c-protobuf-c"))
        loaded = harness.load(TYPE, None, data)
        print(f"host {platform.node()}, load average before {os.getloadavg()}")
        for operation in ("encode", "decode"):
            per_op = bare_samples(bare, operation, payload_file, 1000, 3)
            loops = max(1, math.ceil(args.min_time / (min(per_op) * 1e-9)))
            ratios, harness_all, bare_all, outside = [], [], [], []
            count = args.samples
            for round_number in range(args.rounds):
                # Which goes first alternates by round: neither always runs first.
                if round_number % 2:
                    timed = harness_samples(harness, operation, loaded, loops, count, outside)
                    plain = bare_samples(bare, operation, payload_file, loops, count)
                else:
                    plain = bare_samples(bare, operation, payload_file, loops, count)
                    timed = harness_samples(harness, operation, loaded, loops, count, outside)
                ratios.append(statistics.median(timed) / statistics.median(plain))
                harness_all += timed
                bare_all += plain
            centre, low, high = median_interval(ratios)
            print(
                f"{operation}: harness/bare {centre:.4f} [95 % CI {low:.4f}, {high:.4f}] over "
                f"{args.rounds} rounds; harness median {statistics.median(harness_all):.1f} ns, "
                f"bare {statistics.median(bare_all):.1f} ns per operation "
                f"(n = {len(harness_all)} samples each, {loops} loops a sample, "
                f"min_time {args.min_time} s); outside the timed region "
                f"{statistics.median(outside) / 1e3:.1f} µs a sample (median)"
            )
        harness.close()
        print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    sys.exit(main())
