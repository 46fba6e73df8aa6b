"""Secrets stay out of children (their /proc/PID/environ read while they run), whether the
agent is started by hand or by `evbench run --board local`, and out of the host's other
children (protoc here; tests/test_flash_write.py: the decompressor, test_peer_host_bus.py:
`evbench serve`, test_lava.py: lavacli). A killed agent's run: test_run_local.py."""

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import ROOT, require
from process_tree import descendants, read_proc

from evbench_core import results

AGENT = [sys.executable, "-m", "evbench_agent"]
EVBENCH = [sys.executable, "-m", "evbench"]
CODEC = ["--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf"]
QUICK_CODEC = [*CODEC, "--quick"]
QUICK_LINK = ["--suite", "link", "--profile", "seed", "--codecs", "json,protobuf", "--quick"]
WAIT_S = 300


def _secrets(tag: str) -> dict[str, str]:
    return {
        "EVBENCH_PASSWORD": f"pw-sentinel-{tag}-" + os.urandom(6).hex(),
        "EVBENCH_LINK_TOKEN": f"token-sentinel-{tag}-" + os.urandom(6).hex(),
    }


class Watch:
    """Every command line seen below the roots, and those whose environment holds a secret."""

    def __init__(self, secrets: dict[str, str]) -> None:
        self.needles = [value.encode() for value in secrets.values()]
        self.seen: dict[int, str] = {}
        self.leaked: dict[int, str] = {}

    def look(self, roots: list[int]) -> None:
        starters = {read_proc(root, "cmdline") for root in roots}
        for pid in [child for root in roots for child in descendants(root)]:
            raw = read_proc(pid, "cmdline")
            if raw in starters:
                # Forked, not yet exec'd: /proc still shows the parent's original environ,
                # which withholding cannot change; it is looked at once it execs.
                continue
            command = raw.replace(b"\0", b" ").decode()
            environ = read_proc(pid, "environ")
            if command:
                self.seen[pid] = command
            if any(needle in environ for needle in self.needles):
                self.leaked[pid] = command

    def until(self, done: Callable[[], bool], roots: list[int], roots_too: bool = False) -> None:
        """Look below `roots` (and at them, with `roots_too`) every 10 ms until `done()`."""
        deadline = time.monotonic() + WAIT_S
        while not done():
            assert time.monotonic() < deadline, f"not done within {WAIT_S} s"
            for root in roots if roots_too else []:
                if any(needle in read_proc(root, "environ") for needle in self.needles):
                    self.leaked[root] = _cmdline(root)
            self.look(roots)
            time.sleep(0.01)

    def saw(self, word: str) -> bool:
        return any(word in command for command in self.seen.values())

    def files_holding(self, folder: Path) -> list[Path]:
        """The files below `folder` (a run's) that hold a secret."""
        files = (path for path in folder.rglob("*") if path.is_file())
        return [path for path in files if any(n in path.read_bytes() for n in self.needles)]


def run_watched(argv: list[str], secrets: dict[str, str]) -> tuple[Watch, str]:
    """`argv` run to its end with `secrets` in its environment, its descendants watched."""
    watch = Watch(secrets)
    process = subprocess.Popen(
        argv, env={**os.environ, **secrets}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        watch.until(lambda: process.poll() is not None, [process.pid])
        _stdout, stderr = process.communicate(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    return watch, stderr


@pytest.mark.parametrize(
    ("start", "children", "secrets"),
    [
        # The agent started by hand: with the link tests, five real runs, too slow for the
        # fast tier.
        pytest.param(
            [*AGENT, "run"],
            ["evbench_agent worker", "evbench_agent.telemetry.sampler"],
            _secrets("codec"),
            marks=pytest.mark.slow,
            id="agent-by-hand",
        ),
        # evbench withholds the password only: its agent needs the link token for a link run
        # (evbench.boards.base.child_environment).
        pytest.param(
            [*EVBENCH, "run", "--board", "local"],
            ["evbench_agent"],
            {"EVBENCH_PASSWORD": "evbench-sentinel-" + os.urandom(6).hex()},
            id="evbench-run",
        ),
    ],
)
def test_no_child_of_a_codec_run_is_given_a_secret(tmp_path, start, children, secrets):
    out = tmp_path / "run"
    watch, _stderr = run_watched([*start, *QUICK_CODEC, "--out", str(out)], secrets)
    for child in children:  # it did look at them
        assert watch.saw(child), watch.seen
    assert watch.leaked == {}
    assert watch.files_holding(out) == []  # nor does any file the run leaves hold one


@contextlib.contextmanager
def serving_with_token(token: str) -> Iterator[int]:
    """`evbench-agent serve` requiring `token`, while the block runs: its port."""
    responder = subprocess.Popen(
        [*AGENT, "serve", "--port", "0"], env={**os.environ, "EVBENCH_LINK_TOKEN": token},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        yield int(json.loads(responder.stdout.readline())["port"])
    finally:
        responder.terminate()
        responder.wait(30)
        responder.stdout.close()


@pytest.mark.slow
def test_link_runs_attached_or_detached_keep_the_token_from_their_children(tmp_path):
    secrets = _secrets("link")
    run_dir = tmp_path / "detached"
    with serving_with_token(secrets["EVBENCH_LINK_TOKEN"]) as port:
        # Against a peer that requires the token: the agent still has it after withholding.
        peer = ["--peer", f"127.0.0.1:{port}"]
        watch, _stderr = run_watched(
            [*AGENT, "run", *QUICK_LINK, *peer, "--out", str(tmp_path / "peer")], secrets
        )
        assert watch.saw("evbench_agent.telemetry.sampler"), watch.seen
        assert watch.leaked == {}
        # The loopback peer: the agent's own responder is a child and gets no secret either.
        loopback = [*AGENT, "run", *QUICK_LINK, "--out", str(tmp_path / "loopback")]
        watch, _stderr = run_watched(loopback, secrets)
        assert watch.saw("evbench_agent serve"), watch.seen
        assert watch.leaked == {}
        # Detached (`launch`): the token reaches the run through a pipe, not its environment.
        run = [*QUICK_LINK, "--peer", f"127.0.0.1:{port}", "--out", str(run_dir / "results")]
        launched = subprocess.run(
            [*AGENT, "launch", "--run-dir", str(run_dir), "--", "run", *run],
            env={**os.environ, **secrets}, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert launched.returncode == 0, launched.stderr
        supervisor = json.loads(launched.stdout)["pid"]  # detached: no longer our descendant
        watch = Watch(secrets)
        watch.until((run_dir / "exit").exists, [supervisor], roots_too=True)
    assert (run_dir / "exit").read_text().strip() == "0", (run_dir / "agent.log").read_text()
    assert watch.saw("evbench_agent.telemetry.sampler"), watch.seen
    assert watch.leaked == {}
    assert (run_dir / "results" / results.COMPLETE).exists()
    assert (tmp_path / "peer" / results.COMPLETE).exists()


def _cmdline(pid: int) -> str:
    return read_proc(pid, "cmdline").replace(b"\0", b" ").decode()


#: A sitecustomize.py: every Python process started with it on PYTHONPATH (site imports it
#: at start-up) adds a line to EVBENCH_TEST_SPY: whether it has the password, its command.
SPY = """import os
command = open("/proc/self/cmdline", "rb").read().replace(b"\\0", b" ").decode()
with open(os.environ["EVBENCH_TEST_SPY"], "a") as log:
    log.write(f"{'EVBENCH_PASSWORD' in os.environ} {command}\\n")
"""


def test_protoc_compiling_a_schema_is_not_given_the_password(tmp_path):
    # protoc runs for a moment only: it says itself what it was given (/proc might miss it).
    require(importlib.util.find_spec("grpc_tools") is not None, "grpcio-tools (protoc)")
    (tmp_path / "spy").mkdir()
    (tmp_path / "spy" / "sitecustomize.py").write_text(SPY)
    log = tmp_path / "spy.log"
    paths = [str(tmp_path / "spy"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, **_secrets("protoc"), "PYTHONPATH": ":".join(paths),
           "EVBENCH_TEST_SPY": str(log)}  # fmt: skip
    broken = ROOT / "tests" / "data" / "bms" / "broken.proto"  # protoc runs and refuses it
    argv = [*EVBENCH, "run", "--board", "local", *QUICK_CODEC, "--schema", str(broken),
            "--message", "x.Y", "--out", str(tmp_path / "run")]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 2 and "protoc cannot compile" in done.stderr, done.stderr
    started = log.read_text().splitlines()
    assert started[0].startswith("True ") and " -m evbench run " in started[0]  # the spy works
    protoc = [line for line in started if " -m grpc_tools.protoc " in line]
    assert len(protoc) == 1 and protoc[0].startswith("False "), started
