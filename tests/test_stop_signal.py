"""A responder stopped by SIGTERM exits 0, also when the signal comes twice.

timeout(1) signals its child and then its process group; under load the child may
handle the first, leave its serve loop and put back the handler it had before the
second arrives. The host CLI's handler maps SIGTERM to "interrupted" (exit 130):
docs/buses.md's `timeout --preserve-status -s TERM 5 evbench serve ...` ended so in a
CI run. The script stands in for the host CLI with a handler of its own.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, signal, time
from evbench_agent.link.stop_signal import until_sigterm

def host_cli(signum, frame):
    print("interrupted", flush=True)
    os._exit(130)

signal.signal(signal.SIGTERM, host_cli)
with until_sigterm():
    print("serving", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
    print("not stopped", flush=True)
os.kill(os.getpid(), signal.SIGTERM)
print("stopped cleanly", flush=True)
"""


def test_a_second_sigterm_after_the_stop_is_the_same_request():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout.split()) == (0, ["serving", "stopped", "cleanly"])


def test_without_a_stop_the_previous_handler_comes_back():
    script = (
        "import signal\nfrom evbench_agent.link.stop_signal import until_sigterm\n"
        "def mine(*_): pass\n"
        "signal.signal(signal.SIGTERM, mine)\n"
        "with until_sigterm():\n    pass\n"
        "print(signal.getsignal(signal.SIGTERM) is mine)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "True"
