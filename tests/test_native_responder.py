"""The C link responder (native/responder/, docs/link.md "A responder in C"): built by the
native CMake, it answers the link suite's echo mode on loopback TCP as `evbench-agent serve`
does, byte for byte but the processing time (each responder's own clock), and the link
suite measures against it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from native_cross import build_documented

from evbench_agent.link import framing, messages, service

pytestmark = pytest.mark.integration

NAME = "evbench-link-responder"
COUNT = 40


@pytest.fixture(scope="module")
def responder_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """native/ configured with the documented command; only the responder built."""
    build = tmp_path_factory.mktemp("native-responder")
    build_documented(build, NAME)
    return build / NAME


class Listening:
    """A responder process and the address its `listening` line gave."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        assert self.process.stdout is not None  # stdout=PIPE
        event = json.loads(self.process.stdout.readline())
        assert event["event"] == "listening", event
        self.address = (event["host"], int(event["port"]))

    def stop(self) -> str:
        """SIGTERM; it exits 0 within 10 s; its standard error."""
        self.process.terminate()
        _out, err = self.process.communicate(timeout=10)
        assert self.process.returncode == 0, err
        return err


@pytest.fixture
def native(responder_path: Path) -> Iterator[Listening]:
    responder = Listening([str(responder_path), "--port", "0"])
    yield responder
    responder.stop()


@pytest.fixture
def python_responder() -> Iterator[service.ResponderProcess]:
    with service.start_responder() as responder:
        yield responder


def conversation(address: tuple[str, int], hello: dict, bodies: list[bytes]) -> tuple[dict, list]:
    """HELLO, then every MESSAGE and a STATS in one write; the answer and every frame back."""
    with socket.create_connection(address, timeout=30) as sock:
        reader = framing.FrameReader(sock)
        stream = framing.pack(framing.HELLO, 0, json.dumps(hello).encode())
        stream += b"".join(framing.pack(framing.MESSAGE, i, body) for i, body in enumerate(bodies))
        stream += framing.pack(framing.STATS, 7)
        sock.sendall(stream)
        frames: list[framing.Frame] = []
        while len(frames) < 1 + len(bodies) + 1:
            frames += reader.receive()
    assert frames[0].kind == framing.HELLO
    return json.loads(frames[0].body), frames[1:]


def first_answer(address: tuple[str, int], body: bytes) -> dict:
    """The responder's answer to a HELLO frame with this body."""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(framing.pack(framing.HELLO, 0, body))
        return json.loads(framing.FrameReader(sock).receive()[0].body)


def echo_hello(codec: str, profile: str = "seed") -> dict:
    link = messages.bind(codec, profile)
    return {
        "protocol": "evbench-link", "version": 2, "codec": codec, "profile": profile,
        "message": messages.message_name(link.profile), "mode": "echo",
    }  # fmt: skip


@pytest.mark.parametrize("codec", ["json", "protobuf"])
def test_every_message_is_answered_as_the_python_responder_answers_it(
    codec, native, python_responder
):
    link = messages.bind(codec, "seed")
    bodies = [link.encode(data) for data in link.sample_data(COUNT, seed=11)]
    bodies.append(b"\x00\xffnot a message at all")  # echo mode never decodes
    hello = echo_hello(codec)
    answer_c, frames_c = conversation(native.address, hello, bodies)
    answer_py, frames_py = conversation(python_responder.address, hello, bodies)
    assert answer_c["ok"] is True and answer_py["ok"] is True
    assert answer_c.keys() == answer_py.keys() == {"ok", "max_frame", "responder"}
    assert answer_c["max_frame"] == answer_py["max_frame"] == 1 << 20
    for sequence, sent in enumerate(bodies):
        c, py = frames_c[sequence], frames_py[sequence]
        assert (c.kind, c.sequence) == (py.kind, py.sequence) == (framing.REPLY, sequence)
        # 8 bytes of processing time (each responder's clock), then the message's own bytes
        assert c.body[8:] == py.body[8:] == sent
        assert 0 < int.from_bytes(c.body[:8], "little") < 10**9
    stats_c, stats_py = frames_c[-1], frames_py[-1]
    assert (stats_c.kind, stats_c.sequence) == (stats_py.kind, stats_py.sequence) == (4, 7)
    counts_c, counts_py = json.loads(stats_c.body), json.loads(stats_py.body)
    assert counts_c.keys() == counts_py.keys() == {"messages", "cpu_ns"}
    assert counts_c["messages"] == counts_py["messages"] == len(bodies)
    assert type(counts_c["cpu_ns"]) is int and counts_c["cpu_ns"] > 0


def test_a_worked_reply(native):
    """docs/link.md's worked REPLY: a body `ok` to sequence 5, framed by hand."""
    with socket.create_connection(native.address, timeout=30) as sock:
        sock.sendall(framing.pack(framing.HELLO, 0, json.dumps(echo_hello("json")).encode()))
        sock.sendall(bytes.fromhex("0b000000 01 0500000000000000") + b"ok")
        reader = framing.FrameReader(sock)
        frames: list[framing.Frame] = []
        while len(frames) < 2:
            frames += reader.receive()
    reply = frames[1]
    assert (reply.kind, reply.sequence, reply.body[8:]) == (2, 5, b"ok")


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"mode": "ack"}, "answers echo mode only"),
        ({"version": 1}, "version 2"),
        ({"mode": "shout"}, "unknown mode"),
        ({"codec": 5}, "needs the strings"),
        ({"profile": "x" * 201}, "over 200 characters"),
        ({"reply_delay_ns": 1.5}, "reply_delay_ns must be an integer"),
    ],
)
def test_a_hello_it_does_not_serve_is_refused_with_why(native, python_responder, change, refusal):
    """Refused, and closed, where the Python responder refuses too (ack mode aside: it decodes)."""
    hello = json.dumps(echo_hello("json") | change).encode()
    with socket.create_connection(native.address, timeout=30) as sock:
        sock.sendall(framing.pack(framing.HELLO, 0, hello))
        reader = framing.FrameReader(sock)
        answer = json.loads(reader.receive()[0].body)
        with pytest.raises(framing.PeerClosed):
            reader.receive()  # and it closes
    assert answer["ok"] is False and refusal in answer["error"], answer
    assert first_answer(python_responder.address, hello)["ok"] is (change == {"mode": "ack"})


def test_a_hello_that_is_not_an_object_or_nests_too_deeply(native):
    for body, refusal in [(b"[1, 2]", "not a JSON object"), (b"{\"a\": " + b"[" * 3000, "nested"),
                          (b"{\"codec\": \"js", "not JSON")]:  # fmt: skip
        answer = first_answer(native.address, body)
        assert answer["ok"] is False and refusal in answer["error"], (body[:20], answer)


def test_the_token_is_required_when_set(responder_path):
    env = {"EVBENCH_LINK_TOKEN": "s3cret"}
    responder = Listening([str(responder_path), "--port", "0"], env=env)
    try:
        for token, ok in [(None, False), ("wrong", False), ("s3cre", False), ("s3cret", True)]:
            hello = echo_hello("json") | ({"token": token} if token else {})
            answer = first_answer(responder.address, json.dumps(hello).encode())
            assert answer["ok"] is ok, (token, answer)
    finally:
        err = responder.stop()
    assert "s3cret" not in err and "a shared token required" in err


def test_the_link_suite_measures_against_it(native, tmp_path):
    """`--peer HOST:PORT --mode echo`: every phase answered, the responder's CPU measured."""
    host, port = native.address
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent", "run", "--suite", "link", "--quick",
         "--codecs", "json,protobuf", "--mode", "echo", "--peer", f"{host}:{port}",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    sets = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    by_metric: dict[str, list[dict]] = {}
    for s in sets:
        by_metric.setdefault(s["metric"], []).append(s)
    assert {s["codec"] for s in by_metric["rtt"]} == {"json", "protobuf"}
    assert all(s["params"]["mode"] == "echo" for s in by_metric["rtt"])
    assert all(v == 0 for s in by_metric["lost"] for v in s["values"])
    responder_cpu = [v for s in by_metric["cpu_per_msg_responder"] for v in s["values"]]
    assert responder_cpu and all(v > 0 for v in responder_cpu)
