"""How soon a labgrid place is free again after Ctrl-C or SIGTERM during a run.

Run by hand as root, never in CI:

    .venv/bin/python benchmarks/place_release.py [--repeats 5] [--busy 0] [--signal INT]

The lab is the tests' one (tests/labgrid_rig.py): a labgrid coordinator and exporter from
.venv-labgrid (`python tests/setup_envs.py` builds it), place am62x-a a NetworkService for
an OpenSSH sshd on loopback (tests/sshd.py), this machine the board. Each repeat starts
`evbench run` of the codec suite (four profiles, json and protobuf) on that place, sends
the signal once the agent writes samples on the board, and times the signal to evbench's
"released place" line, which it prints after `labgrid-client release` returned (an upper
bound on the freeing). `--busy K` keeps K busy loops running beside it, as a shared lab
PC or a CI machine would. Reported: median [min, max] in seconds, with n.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import labgrid_rig  # noqa: E402
from sshd import Sshd  # noqa: E402

EVBENCH = str(Path(sys.executable).parent / "evbench")
PLAN = ["--suite", "codec", "--profile", "seed,ev-full,int,double", "--codecs", "json,protobuf"]
WAIT_S = 300.0


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"place_release: {what} within {WAIT_S:.0f} s")
        time.sleep(0.02)


def one_release(work: Path, stop: signal.Signals, env: dict[str, str]) -> float:
    """Seconds from the signal to evbench's "released place" line."""
    board = work / "board"
    url = f"labgrid://am62x-a?dir={board}&python=/usr/bin/python3"
    log = work / "evbench.err"
    with log.open("w") as errors:
        job = subprocess.Popen(
            [EVBENCH, "run", "--board", url, *PLAN, "--out", str(work / "run")],
            stdout=subprocess.DEVNULL, stderr=errors, env=env,
        )  # fmt: skip
        try:
            _until(lambda: any(board.glob("runs/*/results/samples.jsonl")), "no samples")
            job.send_signal(stop)
            signalled = time.monotonic()
            _until(lambda: "released place am62x-a" in log.read_text(), "no release")
            took = time.monotonic() - signalled
            job.wait(timeout=WAIT_S)
        finally:
            if job.poll() is None:
                job.kill()
                job.wait()
    if job.returncode != 130:
        raise SystemExit(f"place_release: evbench run exited {job.returncode}: {log.read_text()}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--busy", type=int, default=0, help="busy loops beside the runs")
    parser.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    args = parser.parse_args()
    stop = signal.Signals[f"SIG{args.signal}"]
    scratch = Path(tempfile.mkdtemp(prefix="evbench-place-release-"))
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    switch = labgrid_rig.PowerSwitch()
    sshd = Sshd(shutil.which("sshd") or "/usr/sbin/sshd", "ssh-keygen", scratch)
    lab = None
    try:
        sshd.start()
        (scratch / "lab").mkdir()
        lab = labgrid_rig.two_place_lab(sshd, scratch / "lab", switch)
        env = {
            **os.environ,
            "HOME": str(sshd.client_home(scratch / "home")),
            "EVBENCH_LABGRID_CLIENT": str(labgrid_rig.CLIENT),
            "LG_COORDINATOR": lab.coordinator,
            "LG_USERNAME": "nightly",
            "EVBENCH_HISTORY": str(scratch / "history.sqlite"),
        }
        env.pop("SSH_AUTH_SOCK", None)
        seconds = []
        for repeat in range(args.repeats):
            work = scratch / f"repeat{repeat}"
            work.mkdir()
            seconds.append(one_release(work, stop, env))
            print(f"repeat {repeat + 1}: released {seconds[-1]:.2f} s after SIG{args.signal}")
        print(
            f"place free after SIG{args.signal}, {args.busy} busy loop(s) beside: median "
            f"{statistics.median(seconds):.2f} s [min {min(seconds):.2f}, max {max(seconds):.2f}],"
            f" n = {len(seconds)}"
        )
    finally:
        for loop in busy:
            loop.kill()
        if lab is not None:
            lab.stop()
        sshd.stop()
        switch.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
