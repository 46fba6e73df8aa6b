"""End-to-end: a cross-built aarch64 native harness measures in a codec run on the QEMU board,
and the C link responder shipped with it answers a link run there (`--responder c`).

The harness is built here as docs/native-codecs.md says for the AM62x (tests/native_cross.py:
Debian's aarch64 cross-compiler, statically linked; under tests/run-tiers.sh the integration
tier's build of it), shipped with `evbench deploy --native`
over SSH and run natively by the board's aarch64 kernel, not by qemu-user on the host. The
read-backs (the file's SHA-256 on the board, the Python codec's sizes) do not trust evbench.
"""

import hashlib
import json
from pathlib import Path

import pytest
from evboard_fixture import (  # noqa: F401 (fixture `evboard`)
    ONE_WORKER,
    BoardSession,
    evboard_session,
)
from native_cross import CODEC, RESPONDER, build_aarch64_harness, build_host_harness
from native_sizes import nlohmann_sizes

from evbench_agent import codecs, payloads
from evbench_agent.native import runtimes

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(2400)]

PROFILE = "seed"


def _texts(codec: str, params: dict) -> list[bytes]:
    """What `codec` writes on this host for the run's payloads."""
    profile = payloads.get(PROFILE)
    bound = codecs.get(codec).bind(profile)
    items = profile.payloads(params["payloads"], params["seed"])
    texts = [bound.encode(bound.data(item)) for item in items]
    if hasattr(bound, "close"):  # a native harness
        bound.close()
    return texts


@pytest.fixture(scope="module")
def deployed(evboard: BoardSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The cross-build deployed once with `evbench deploy --native`: its directory, and
    what the deploy said. Both tests use this one deploy of the same files."""
    build = build_aarch64_harness(tmp_path_factory)
    done = evboard.evbench("deploy", "--board", evboard.ssh_url, "--native", str(build))
    assert done.returncode == 0, done.stderr
    return build, done.stderr


def test_a_cross_built_harness_measures_on_the_board(
    evboard: BoardSession,
    deployed: tuple[Path, str],
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
):
    build, said = deployed
    harness = next(build.glob("evbench-native-*"))
    assert f"native executables: {harness.name}" in said
    out = tmp_path / "run"
    done = evboard.evbench(
        "run", "--board", evboard.ssh_url, "--suite", "codec", "--profile", PROFILE,
        "--codecs", f"json,{CODEC}", "--quick", *ONE_WORKER, "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (out / "complete").is_file(), f"the run in {out} is partial"

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["platform"]["machine"] == "aarch64"
    stated = manifest["platform"]["native_codecs"][CODEC]
    assert stated["library"] == "nlohmann::json" and stated["version"].count(".") == 2, stated
    assert "GNU" in stated["compiler"], stated
    on_board = evboard.ssh(f"sha256sum {stated['executable']}").split()[0]
    assert on_board == hashlib.sha256(harness.read_bytes()).hexdigest()

    sets = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    sizes = {s["codec"]: s for s in sets if s["metric"] == "size" and s["profile"] == PROFILE}
    native, python = sizes[CODEC], sizes["json"]
    assert native["params"] == python["params"]  # the same payloads (their digest included)
    python_texts = _texts("json", native["params"])
    assert python["values"] == [len(text) for text in python_texts]
    monkeypatch.setenv(runtimes.ENVIRONMENT, str(build_host_harness(tmp_path_factory)))
    expected = nlohmann_sizes(python_texts, _texts(CODEC, native["params"]))
    assert native["values"] == expected
    for metric in ("encode", "decode", "decode_access"):
        timed = [s for s in sets if s["codec"] == CODEC and s["metric"] == metric]
        assert timed and all(v > 0 for s in timed for v in s["values"]), metric


def test_the_shipped_c_responder_answers_a_link_run_on_the_board(
    evboard: BoardSession, deployed: tuple[Path, str], tmp_path: Path
):
    """The cross-build's echo-only responder, deployed with the harness, is the one the link
    suite starts on the board: its own log lines are in the agent's log the run brings back."""
    build, said = deployed
    assert RESPONDER in said
    out = tmp_path / "run"
    done = evboard.evbench(
        "run", "--board", evboard.ssh_url, "--suite", "link", "--quick", "--mode", "echo",
        "--responder", "c", "--rate", "100", "--count", "6", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (out / "complete").is_file(), f"the run in {out} is partial"
    agent_log = (out / "agent.log").read_text()
    assert f"{RESPONDER}: listening on 127.0.0.1:" in agent_log, agent_log[-3000:]
    assert "echo mode only" in agent_log  # the cross-build's, which has no C runtime
    stated = json.loads((out / "manifest.json").read_text())["platform"]["link_responder"]
    assert stated["responder"] == "evbench-link-responder 2 (C)" and stated["ack_codecs"] == ""
    on_board = evboard.ssh(f"sha256sum {stated['executable']}").split()[0]
    assert on_board == hashlib.sha256((build / RESPONDER).read_bytes()).hexdigest()
    sets = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    rtt = [s for s in sets if s["metric"] == "rtt"]
    assert rtt and all(s["params"]["responder"] == "c" for s in rtt)
    assert all(v == 0 for s in sets if s["metric"] == "lost" for v in s["values"])
