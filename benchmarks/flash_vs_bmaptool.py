"""evbench flash against `bmaptool copy`: the same image, the same kind of target, side by side.

Run by hand, as root (loop devices), on a quiet machine, never in CI:

    .venv/bin/python benchmarks/flash_vs_bmaptool.py [--rounds 7] [--json OUT]

The image is the issue's acceptance image: 256 MiB with 20 MiB of data in 40
extents of 512 KiB, compressed with `xz -0`, its bmap made by `bmaptool
create`. Each round runs both tools once per target kind (a regular file, a
loop device over a file), the order alternating from round to round, so drift
on a shared machine hits both alike. Both sync before they exit.

Measured, in seconds of wall clock (time.perf_counter around the process):
1. end to end: the whole command, as a user waits for it (Python start-up and
   the CLI's imports included);
2. the copy alone, as each tool reports it: evbench's "in X s" (first read to
   the end of verification, 10 ms resolution) and bmaptool's "copying time"
   (0.1 s resolution);
3. evbench's CPU time (user + sys, its xz included), from getrusage: far less
   sensitive than wall clock to other load (bmaptool does not always wait for
   its xz, so its own figure would miss the decompression);
4. `evbench flash --help`: the start-up alone, which (1) and (3) include;
5. (1) again with only the flash command imported (LEAN), no `evbench` CLI:
   the CLI builds its parser from the named command alone and commands/flash.py
   imports the flash package only when it runs, so (5) should match (1); a gap
   would show the CLI's own start-up creeping back.
Reported per figure: median with its 95 % CI (order statistics), min-max, n;
the ratio evbench/bmaptool of medians, with the Hodges-Lehmann 95 % interval.
The acceptance bar (issue 21) is a ratio of at most 1.1, end to end.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evbench_core.analysis.stats import ratio_ci, summarize
from evbench_core.results import write_json

MiB = 1024 * 1024
IMAGE_SIZE = 256 * MiB
EXTENTS = [(i * 6 * MiB + i * 8192, 512 * 1024) for i in range(40)]
EVBENCH = str(Path(sys.executable).with_name("evbench"))
#: The end-to-end ratio evbench/bmaptool must stay at or under this (issue 21, item 2).
BAR = 1.1
#: `evbench flash` with only the flash command imported, without the CLI around it.
LEAN = [
    sys.executable,
    "-c",
    "import argparse, sys; from evbench.commands import flash; p = argparse.ArgumentParser(); "
    "flash.setup_parser(p); sys.exit(flash.run(p.parse_args(sys.argv[1:])))",
]


def make_image(folder: Path) -> Path:
    image = folder / "core-image.wic"
    with image.open("wb") as handle:
        handle.truncate(IMAGE_SIZE)
        for index, (offset, length) in enumerate(EXTENTS):
            block = random.Random(index).randbytes(4096)
            handle.seek(offset)
            handle.write(b"".join(os.urandom(32) + block[32:] for _ in range(length // 4096)))
    subprocess.run(["bmaptool", "create", "-o", f"{image}.bmap", str(image)], check=True)
    with Path(f"{image}.xz").open("wb") as packed:
        subprocess.run(["xz", "-0", "-T2", "-c", str(image)], stdout=packed, check=True)
    return Path(f"{image}.xz")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall clock, CPU time (user + sys of the command and what it waited for), output."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed, _children_cpu() - cpu_before, done.stdout + done.stderr


def reported_seconds(output: str, pattern: str) -> float:
    match = re.search(pattern, output)
    if not match:
        raise SystemExit(f"no time in the output: {output[-300:]}")
    return float(match.group(1))


def fmt(values: list[float]) -> str:
    s = summarize(values)
    ci = f"[{s.ci95_low:.3f}, {s.ci95_high:.3f}]" if s.ci95_low is not None else "[n/a]"
    return f"median {s.median:.3f} s {ci}, min-max {s.min:.3f}-{s.max:.3f}, n={s.n}"


def compare(name: str, ours: list[float], theirs: list[float]) -> dict:
    ratio = summarize(ours).median / summarize(theirs).median
    interval = ratio_ci(theirs, ours)
    shown = f"[{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "[n/a]"
    print(f"{name}\n  evbench  {fmt(ours)}\n  bmaptool {fmt(theirs)}")
    print(f"  ratio evbench/bmaptool {ratio:.2f} (95 % CI {shown}); bar <= {BAR}")
    return {
        "evbench": summarize(ours).as_dict(),
        "bmaptool": summarize(theirs).as_dict(),
        "ratio_of_medians": ratio,
        "ratio_ci95": interval,
        "unit": "s",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args()
    for command in ("bmaptool", "xz", "losetup"):
        if shutil.which(command) is None:
            raise SystemExit(f"needs {command} (Debian: bmap-tools, xz-utils, util-linux)")
    folder = Path(tempfile.mkdtemp(prefix="evbench-flash-bench-"))
    loop = None
    try:
        packed = make_image(folder)
        file_target = folder / "card.img"
        backing = folder / "loop-backing.img"
        for path in (file_target, backing):
            with path.open("wb") as handle:
                handle.truncate(IMAGE_SIZE)
        loop = subprocess.run(
            ["losetup", "--find", "--show", str(backing)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        targets = {"file": (str(file_target), []), "loop": (loop, ["--allow-fixed", "--yes"])}
        tool_names = ("evbench", "lean", "bmaptool")
        wall = {f"{k}/{tool}": [] for k in targets for tool in tool_names}
        copy = {key: [] for key in wall}
        cpu = {key: [] for key in wall}
        startup = []
        for round_index in range(args.rounds):
            for kind, (target, flags) in targets.items():
                for tool in tool_names[:: 1 if round_index % 2 == 0 else -1]:
                    if tool in ("evbench", "lean"):
                        start = [EVBENCH, "flash"] if tool == "evbench" else LEAN
                        seconds, used, out = timed(
                            [*start, str(packed), "--device", target, *flags]
                        )
                        copy[f"{kind}/{tool}"].append(reported_seconds(out, r" in ([\d.]+) s "))
                    else:
                        seconds, used, out = timed(["bmaptool", "copy", str(packed), target])
                        copy[f"{kind}/bmaptool"].append(
                            reported_seconds(out, r"copying time: ([\d.]+)s")
                        )
                    wall[f"{kind}/{tool}"].append(seconds)
                    cpu[f"{kind}/{tool}"].append(used)
            startup.append(timed([EVBENCH, "flash", "--help"])[:2])
        print(f"image: {packed.name}, {IMAGE_SIZE // MiB} MiB, 20 MiB mapped in 40 extents, xz -0")
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end\n")
        figures = {}
        for kind in targets:
            figures[f"{kind}/end_to_end"] = compare(
                f"{kind} target, end to end (wall clock of the command)",
                wall[f"{kind}/evbench"],
                wall[f"{kind}/bmaptool"],
            )
            figures[f"{kind}/end_to_end_lean"] = compare(
                f"{kind} target, end to end, only the flash command imported",
                wall[f"{kind}/lean"],
                wall[f"{kind}/bmaptool"],
            )
            figures[f"{kind}/copy_only"] = compare(
                f"{kind} target, the copy alone (as each tool reports it)",
                copy[f"{kind}/evbench"],
                copy[f"{kind}/bmaptool"],
            )
            # bmaptool does not always wait for its xz, so its CPU time is not comparable.
            print(
                f"{kind} target, evbench CPU time (user + sys, xz included): "
                f"{fmt(cpu[f'{kind}/evbench'])}\n"
            )
            figures[f"{kind}/evbench_cpu"] = summarize(cpu[f"{kind}/evbench"]).as_dict()
        print(f"evbench start-up (evbench flash --help), wall: {fmt([w for w, _ in startup])}")
        print(f"evbench start-up (evbench flash --help), CPU:  {fmt([c for _, c in startup])}")
        figures["evbench_startup_wall"] = summarize([w for w, _ in startup]).as_dict()
        figures["evbench_startup_cpu"] = summarize([c for _, c in startup]).as_dict()
        if args.json:
            write_json(args.json, {"benchmark": "flash_vs_bmaptool", "figures": figures})
    finally:
        if loop:
            subprocess.run(["losetup", "-d", loop], check=False)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
