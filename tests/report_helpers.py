"""What the report tests share: evbench as a subprocess, and a real local run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

QUICK_SEED = ("--quick", "--profile", "seed")


def evbench(
    *argv: str, env: dict | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """`evbench ARGV` in a fresh process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "evbench", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


def local_run(out: Path, *extra: str, codecs: str = "json,protobuf", env: dict | None = None):
    """A quick seed run on the local board into `out`; it must succeed."""
    done = evbench("run", "--board", "local", *QUICK_SEED, "--codecs", codecs, "--out", str(out),
                   *extra, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done
