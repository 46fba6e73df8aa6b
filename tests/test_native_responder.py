"""The C link responder (native/responder/, docs/link.md "A responder in C"): it answers the
link suite's echo and ack modes on loopback TCP byte for byte as `evbench-agent serve` does
(but for each responder's own clock readings), and the link suite measures against it.
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import process_tree
import pytest
from link_sockets import LINK_RUN, closed, connect_from, measured_link_run
from native_cross import (
    RESPONDER_KINDS,
    NativeResponder,
    build_responder,
    expected_ack,
    link_responder,
    receipt_time,
)

from evbench_agent import payloads
from evbench_agent.link import client, framing, handshake, messages, service

pytestmark = pytest.mark.integration

COUNT = 40
#: The profiles whose messages the C responder decodes in ack mode (docs/link.md).
ACK_PROFILES = {"seed", "ev-full"}


@pytest.fixture(scope="module")
def responder_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_responder(tmp_path_factory)


@pytest.fixture(scope="module")
def native(responder_path: Path) -> Iterator[NativeResponder]:
    """One C responder for the tests that only talk to it; one reading its log starts its own."""
    with NativeResponder(responder_path) as responder:
        yield responder


@pytest.fixture(scope="module")
def python_responder() -> Iterator[service.ResponderProcess]:
    with service.start_responder() as responder:
        yield responder


def receive(reader: framing.FrameReader, count: int) -> list[framing.Frame]:
    frames: list[framing.Frame] = []
    while len(frames) < count:
        frames += reader.receive()
    return frames


def conversation(address: tuple[str, int], hello: bytes, bodies: list[bytes]) -> tuple:
    """HELLO, every MESSAGE and a STATS in one write; the answer, the frames back, and
    CLOCK_MONOTONIC (both responders' clock) before and after."""
    before = time.monotonic_ns()
    with socket.create_connection(address, timeout=30) as sock:
        stream = framing.pack(framing.HELLO, 0, hello)
        stream += b"".join(framing.pack(framing.MESSAGE, i, body) for i, body in enumerate(bodies))
        sock.sendall(stream + framing.pack(framing.STATS, 7))
        frames = receive(framing.FrameReader(sock), 1 + len(bodies) + 1)
    assert frames[0].kind == framing.HELLO
    return json.loads(frames[0].body), frames[1:], before, time.monotonic_ns()


def first_answer(address: tuple[str, int], body: bytes, closes: bool = False) -> dict:
    """The responder's answer to a HELLO frame with this body (and that it then closes)."""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(framing.pack(framing.HELLO, 0, body))
        reader = framing.FrameReader(sock)
        answer = json.loads(reader.receive()[0].body)
        if closes:
            with pytest.raises(framing.PeerClosed):
                reader.receive()
        return answer


def hello_bytes(codec: str, profile: str = "seed", mode: str = "echo", change=None) -> bytes:
    link = messages.bind(codec, profile)
    return json.dumps({
        "protocol": "evbench-link", "version": 2, "codec": codec, "profile": profile,
        "message": messages.message_name(link.profile), "mode": mode, **(change or {}),
    }).encode()  # fmt: skip


def about_fields(path: Path) -> dict[str, str]:
    """`--about`'s one line: ok, then tab-separated key=value fields."""
    done = subprocess.run([path, "--about"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    first, *fields = done.stdout.rstrip("\n").split("\t")
    assert first == "ok" and done.stdout.count("\n") == 1, done.stdout
    return dict(field.split("=", 1) for field in fields)


@pytest.mark.parametrize(
    ("mode", "profile"), [("echo", "seed"), ("ack", "seed"), ("ack", "ev-full")]
)
@pytest.mark.parametrize("codec", ["json", "protobuf"])
def test_every_message_is_answered_as_the_python_responder_answers_it(
    codec, mode, profile, native, python_responder
):
    """Echo: each message's own bytes back, never decoded. Ack: each message decoded, answered
    with the Python responder's ack, byte for byte for the same receipt time."""
    link = messages.bind(codec, profile)
    bodies = [link.encode(data) for data in link.sample_data(COUNT, seed=12)]
    if mode == "echo":
        bodies.append(b"\x00\xffnot a message at all")
    hello = hello_bytes(codec, profile, mode)
    runs = [conversation(r.address, hello, bodies) for r in (native, python_responder)]
    (answer_c, frames_c, *_), (answer_py, frames_py, *_) = runs
    assert answer_c["ok"] is True and answer_py["ok"] is True, (answer_c, answer_py)
    assert answer_c.keys() == answer_py.keys() == {"ok", "max_frame", "responder"}
    assert answer_c["max_frame"] == answer_py["max_frame"] == 1 << 20
    runtime = {"json": "cJSON 1.", "protobuf": "protobuf-c 1."}[codec]
    named = answer_c["responder"]
    assert named.startswith("evbench-link-responder") and runtime in named, answer_c
    for _answer, frames, before, after in runs:
        for sequence, sent in enumerate(bodies):
            reply = frames[sequence]
            assert (reply.kind, reply.sequence) == (framing.REPLY, sequence)
            # 8 bytes of processing time (each responder's clock), then the echo or the ack
            processing, body = int.from_bytes(reply.body[:8], "little"), reply.body[8:]
            assert 0 < processing < min(after - before, 10**9)
            if mode == "echo":
                assert body == sent
                continue
            receipt = receipt_time(codec, body)
            assert before <= receipt <= after
            assert body == expected_ack(codec, sequence, receipt)
            assert link.decode_ack(body) == (sequence, receipt)  # what the client reads
    stats_c, stats_py = frames_c[-1], frames_py[-1]
    assert (stats_c.kind, stats_c.sequence) == (stats_py.kind, stats_py.sequence) == (4, 7)
    counts_c, counts_py = json.loads(stats_c.body), json.loads(stats_py.body)
    assert counts_c.keys() == counts_py.keys() == {"messages", "cpu_ns"}
    assert counts_c["messages"] == counts_py["messages"] == len(bodies)
    assert type(counts_c["cpu_ns"]) is int and counts_c["cpu_ns"] > 0


@pytest.mark.parametrize("codec", ["json", "protobuf"])
def test_a_message_that_does_not_decode_ends_the_conversation(
    codec, responder_path, python_responder
):
    """As `evbench-agent serve` does: the messages before it answered, none after, the
    connection closed, one log line naming the codec and message type."""
    link = messages.bind(codec, "seed")
    good = link.encode(link.sample_data(1, seed=3)[0])
    bad = b"\xff\xff\xff not json, and a truncated protobuf varint"
    replies = {}
    with NativeResponder(responder_path) as native:
        for name, address in [("c", native.address), ("py", python_responder.address)]:
            with socket.create_connection(address, timeout=30) as sock:
                stream = framing.pack(framing.HELLO, 0, hello_bytes(codec, mode="ack"))
                for sequence, body in enumerate([good, bad, good]):
                    stream += framing.pack(framing.MESSAGE, sequence, body)
                sock.sendall(stream)
                reader, frames = framing.FrameReader(sock), []
                with pytest.raises(framing.PeerClosed):
                    while True:
                        frames += reader.receive()
            replies[name] = [(frame.kind, frame.sequence) for frame in frames]
        err = native.stop()
    assert replies["c"] == replies["py"] == [(framing.HELLO, 0), (framing.REPLY, 0)]
    assert f"message 1 does not decode as {codec} evbench.seed.BackendDataPacket" in err, err


def test_a_worked_reply(native):
    """docs/link.md's worked REPLY: a body `ok` to sequence 5, framed by hand."""
    with socket.create_connection(native.address, timeout=30) as sock:
        sock.sendall(framing.pack(framing.HELLO, 0, hello_bytes("json")))
        sock.sendall(bytes.fromhex("0b000000 01 0500000000000000") + b"ok")
        reply = receive(framing.FrameReader(sock), 2)[1]
    assert (reply.kind, reply.sequence, reply.body[8:]) == (2, 5, b"ok")


@pytest.mark.parametrize(
    ("mode", "change", "refusal", "python_serves"),
    [
        ("echo", {"version": 1}, "version 2", False),
        ("echo", {"mode": "shout"}, "unknown mode", False),
        ("echo", {"codec": 5}, "needs the strings", False),
        ("echo", {"profile": "x" * 201}, "over 200 characters", False),
        ("echo", {"reply_delay_ns": 1.5}, "reply_delay_ns must be an integer", False),
        # ack mode: the Python responder decodes every codec and built-in profile
        ("ack", {"codec": "protobuf-json"}, "decodes json and protobuf in ack mode, not codec "
         "'protobuf-json'", True),
        ("ack", {"profile": "int", "message": "evbench.shapes.OneInt"}, "unknown profile 'int'",
         True),
        # a value is quoted back as repr() quotes it, cut to 40 characters
        ("ack", {"profile": "schema:x" * 10}, "unknown profile '" + ("schema:x" * 10)[:36] +
         "...", False),
        ("ack", {"message": "evbench.frame.EvFrame"}, "profile 'seed' carries "
         "evbench.seed.BackendDataPacket, not 'evbench.frame.EvFrame'", False),
        # a HELLO that is no JSON object, nests too deeply to read, or is no JSON at all
        ("echo", b"[1, 2]", "not a JSON object", False),
        pytest.param("echo", b'{"a": ' + b"[" * 3000, "nested", False, id="nested-deeply"),
        ("echo", b'{"codec": "js', "not JSON", False),
    ],
)  # fmt: skip
def test_a_hello_it_does_not_serve_is_refused_with_why(
    native, python_responder, mode, change, refusal, python_serves
):
    """Refused, and closed; the Python responder refuses it too unless it serves it."""
    hello = change if isinstance(change, bytes) else hello_bytes("json", mode=mode, change=change)
    answer = first_answer(native.address, hello, closes=True)
    assert answer["ok"] is False and refusal in answer["error"], answer
    assert first_answer(python_responder.address, hello)["ok"] is python_serves


def test_the_client_shows_why_ack_mode_is_refused(native):
    """What `evbench run --peer` prints: the responder's reason."""
    with pytest.raises(handshake.HandshakeError) as refused:
        client.Connection(native.address, messages.bind("protobuf-json", "seed"), "ack")
    assert "decodes json and protobuf in ack mode, not codec 'protobuf-json'" in str(refused.value)


@pytest.mark.parametrize(
    ("codecs", "served", "refusal"),
    [
        ("c:cjson", "json", "decodes json (this build has no protobuf-c) in ack mode"),
        ("c:protobuf-c", "protobuf", "decodes protobuf (this build has no cJSON) in ack mode"),
        ("cpp:nlohmann", None, "built without its codec runtimes"),
    ],
)
def test_a_build_with_fewer_runtimes_acks_what_it_has_and_says_what_it_lacks(
    codecs, served, refusal, tmp_path_factory
):
    """A build without c:cjson or c:protobuf-c refuses that codec's ack HELLO, saying why;
    echo mode needs neither."""
    path = build_responder(tmp_path_factory, codecs)
    assert about_fields(path)["ack_codecs"] == (served or "")
    with NativeResponder(path) as native:
        for codec in ("json", "protobuf"):
            for mode in ("echo", "ack"):
                answer = first_answer(native.address, hello_bytes(codec, mode=mode))
                assert answer["ok"] is (mode == "echo" or codec == served), (codec, mode, answer)
                if not answer["ok"]:
                    assert refusal in answer["error"], answer


def test_about_and_ack_mode_name_the_built_in_profiles_it_serves(native, responder_path):
    """`--about` names the responder as its HELLO answers do; in ack mode each Python profile
    is served for seed and ev-full, refused for the others, never a type mismatch."""
    about = about_fields(responder_path)
    assert about["responder"] == first_answer(native.address, hello_bytes("json"))["responder"]
    assert about["ack_codecs"] == "json,protobuf"
    assert set(about["ack_profiles"].split(",")) == ACK_PROFILES
    served = set()
    for name in payloads.PROFILES:
        answer = first_answer(native.address, hello_bytes("json", name, "ack"))
        if answer["ok"]:
            served.add(name)
        else:
            assert f"unknown profile '{name}'" in answer["error"], answer
    assert served == ACK_PROFILES


@pytest.fixture(scope="module")
def both_with_token(responder_path: Path) -> Iterator[list]:
    """The C and the Python responder, each requiring the token s3cret."""
    with contextlib.ExitStack() as running:
        with pytest.MonkeyPatch.context() as patch:  # their environment, no other test's
            patch.setenv("EVBENCH_LINK_TOKEN", "s3cret")
            native = running.enter_context(NativeResponder(responder_path))
            python = running.enter_context(service.start_responder())
        yield [native, python]


def test_the_token_is_required_when_set(both_with_token):
    for responder in both_with_token:
        for token, ok in [(None, False), ("wrong", False), ("s3cre", False), ("s3cret", True)]:
            hello = hello_bytes("json", change={"token": token} if token else {})
            answer = first_answer(responder.address, hello)
            assert answer["ok"] is ok, (token, answer)
    err = both_with_token[0].stderr()  # the C responder's log
    assert "s3cret" not in err and "a shared token required" in err


#: A HELLO both serve, but for what a case below changes in it.
SERVED = hello_bytes("json", mode="ack", change={"token": "s3cret"})


@pytest.mark.parametrize(
    ("old", "new", "refusal"),
    [
        # a \u0000 is part of its string, as in Python: no mode, no key of a HELLO, no token
        (b'"mode": "ack"', b'"mode": "ack\\u0000zz"', "unknown mode"),
        (b'"mode": "ack"', b'"mode\\u0000x": "ack"', "needs the strings"),
        (b'"token": "s3cret"', b'"token": "s3cret\\u0000junk"', "does not carry this responder's"),
        # bytes that are not UTF-8 (RFC 3629) are no JSON, even in a member neither reads:
        # a stray byte, an overlong '/', a surrogate (U+D800)
        (b'"mode": "ack"', b'"mode": "ack", "note": "\xff"', "not JSON"),
        (b'"mode": "ack"', b'"mode": "ack", "note": "\xc0\xaf"', "not JSON"),
        (b'"mode": "ack"', b'"mode": "ack", "note": "\xed\xa0\x80"', "not JSON"),
        (b'"mode": "ack"', b'"mode": "ack", "note": "\xc3\xa9\xf0\x9f\x98\x80"', None),
        # the version is the number 2, however written (docs/link.md)
        (b'"version": 2', b'"version": 2.0', None),
        (b'"version": 2', b'"version": 20e-1', None),
        (b'"version": 2', b'"version": 2.5', "speaks 'evbench-link' version 2"),
        (b'"mode": "ack"', b'"mode": "ack", "x": [NaN, -Infinity]', None),  # Python's json
    ],
)  # fmt: skip
def test_a_hello_is_read_as_the_python_responder_reads_it(both_with_token, old, new, refusal):
    """Served by both, or refused by both for the same reason."""
    assert SERVED.count(old) == 1
    hello = SERVED.replace(old, new)
    answers = [first_answer(responder.address, hello) for responder in both_with_token]
    assert [answer["ok"] for answer in answers] == [refusal is None] * 2, answers
    assert all(refusal in answer["error"] for answer in answers if refusal), answers


#: docs/link.md "Responder limits": pending places per slot, and one peer's share of them.
PENDING_PER_SLOT, PEER_SHARE = 8, 4
#: docs/link.md: a client with no MESSAGE for this long gives up its slot to a new one.
IDLE_BUDGET_S = 2.0
#: A pending connection closed for a newcomer goes at the newcomer's accept: waited for up
#: to this long (a loaded machine), below the 5 s handshake deadline that closes it anyway.
EVICTED_WITHIN_S = 3.0


@pytest.mark.parametrize(
    ("slots", "share", "peers", "evicted"),
    [
        # 2 slots: 16 pending places, 4 per peer. .3 holds 3; each of .2's 10 connections past
        # its 4 closes .2's oldest: its first 6 go, and .3 keeps its places.
        (2, 4, [3] * 3 + [2] * 10, range(3, 9)),
        # 1 slot: 8 places, 2 per peer. .2, .3, .4 hold 2 each, .5 and .6 one: full. A
        # newcomer from .7 closes the oldest of a peer holding the most (2): .2's first.
        (1, 2, [2, 2, 3, 3, 4, 4, 5, 6, 7], [0]),
    ],
    ids=["one-peers-share", "every-place-taken"],
)
@pytest.mark.parametrize("kind", RESPONDER_KINDS)
def test_a_newcomer_closes_the_oldest_pending_connection_of_the_crowdedest_peer(
    kind, slots, share, peers, evicted, request
):
    """One peer cannot take the pending places of another (127.0.0.0/8 gives many peers); a
    real client from another address is served at once."""
    assert slots * PENDING_PER_SLOT // PEER_SHARE == share
    build = lambda: request.getfixturevalue("responder_path")  # noqa: E731
    with (
        link_responder(kind, build, max_connections=slots) as responder,
        contextlib.ExitStack() as held,
    ):
        # accepted in this order: the listen queue is FIFO
        address = responder.address
        socks = [held.enter_context(connect_from(f"127.0.0.{n}", address)) for n in peers]
        assert [closed(socks[i], EVICTED_WITHIN_S) for i in evicted] == [True] * len(evicted)
        kept = [sock for i, sock in enumerate(socks) if i not in evicted]
        assert [closed(sock, 0.1) for sock in kept] == [False] * len(kept)
        with client.Connection(address, messages.bind("json", "seed"), "ack") as connection:
            assert connection.accepted["ok"] is True


def test_a_client_stalled_after_its_handshake_gives_its_slot_to_a_new_client(responder_path):
    """2 slots held by clients silent after their HELLO (one asks for STATS every 0.5 s: not
    measuring traffic). Within the idle budget a newcomer is refused, busy; past it,
    newcomers take the slots, longest idle first, and the log says why once for the two."""
    link = messages.bind("json", "seed")
    with NativeResponder(responder_path, "--max-connections", "2") as native:
        silent = client.Connection(native.address, link, "ack")
        asking = client.Connection(native.address, link, "ack")
        newcomers: list[client.Connection] = []
        try:
            with connect_from("127.0.0.9", native.address) as sock:
                sock.sendall(framing.pack(framing.HELLO, 0, hello_bytes("json", mode="ack")))
                busy = json.loads(framing.FrameReader(sock).receive()[0].body)
            assert busy["ok"] is False and busy["reason"] == "busy", busy
            assert "connection limit (2) is reached: other clients hold every slot" in busy["error"]
            stats = client.Exchange(asking, [])
            started = time.monotonic()
            while time.monotonic() - started < IDLE_BUDGET_S + 0.5:
                stats.request_stats()
                assert stats.wait(1_000_000_000)
                time.sleep(0.5)
            for held in (silent, asking):  # each newcomer takes the longest idle slot
                fresh = client.Connection(native.address, link, "ack")
                newcomers.append(fresh)
                result = client.run_periodic(fresh, link.sample_data(2, 1), 100.0, 5, 0, 0.5)
                assert result.error is None and result.lost == 0
                assert closed(held.sock, 2.0)
        finally:
            for connection in [silent, asking, *newcomers]:
                connection.close()
        log = native.stderr()
    lines = [line for line in log.splitlines() if "dropped" in line]
    assert len(lines) == 2, log  # 127.0.0.9's refusal; 127.0.0.1's first eviction
    assert "127.0.0.9:" in lines[0] and "connection limit (2)" in lines[0], lines
    idle = "gave up its slot to a new client: no message for 2 s (the idle budget)"
    assert "127.0.0.1:" in lines[1] and idle in lines[1], lines


@pytest.mark.parametrize("realtime", [True, False])
def test_realtime_is_asked_for_before_the_connection_threads_start(realtime, responder_path):
    """`--realtime`: SCHED_FIFO 80 for the responder and each connection's thread, read in
    /proc (1 is SCHED_FIFO, 0 SCHED_OTHER: sched.h), and the policy said in its log."""
    options = ("--realtime",) if realtime else ()
    with NativeResponder(responder_path, *options) as native:
        with socket.create_connection(native.address, timeout=30) as sock:
            sock.sendall(framing.pack(framing.HELLO, 0, hello_bytes("json")))
            answer = framing.FrameReader(sock).receive()[0]  # its thread has served it
            assert json.loads(answer.body)["ok"] is True
            threads = {}  # each thread: (policy, rt_priority), /proc stat fields 41 and 40
            for task in Path(f"/proc/{native.process.pid}/task").iterdir():
                fields = (task / "stat").read_text().rpartition(")")[2].split()  # field 3 on
                threads[int(task.name)] = (int(fields[41 - 3]), int(fields[40 - 3]))
        logged = native.stderr()
    assert len(threads) >= 2, threads  # the accepting thread and the connection's
    policies = set(threads.values())
    said = "SCHED_FIFO" if policies == {(1, 80)} else "SCHED_OTHER"
    assert f"16 connections, {said}, " in logged
    if realtime and os.geteuid() == 0:  # root may always have SCHED_FIFO; CI runs as root
        assert policies == {(1, 80)}, threads
    if not realtime:
        assert policies == {(0, 0)}, threads


def test_slow_clients_of_one_peer_are_logged_once_saying_who_and_why(responder_path):
    with NativeResponder(responder_path) as native, contextlib.ExitStack() as held:
        slow = [held.enter_context(connect_from("127.0.0.4", native.address)) for _ in range(4)]
        for sock in slow:
            sock.sendall(b"\x20")  # one byte of a length prefix, then nothing
        for sock in slow:
            assert closed(sock, 10.0)  # the 5 s handshake deadline
        lines = [line for line in native.stop().splitlines() if "handshake" in line]
    assert len(lines) == 1, lines  # once per peer per minute, not once per connection
    assert "127.0.0.4:" in lines[0] and "did not complete the handshake within 5 s" in lines[0]


def test_responder_c_starts_the_installed_one_for_the_link_suite(responder_path, tmp_path):
    """`--responder c` (echo mode against a --peer: test_link_crowd.py's recorded run): the
    suite starts the C responder found where the native harnesses are
    (EVBENCH_NATIVE_DIR), its rows say so, and it stops with the run. With none installed
    the run stops before writing anything, naming where it looked."""
    installed = tmp_path / "libexec"
    installed.mkdir()
    env = dict(os.environ, EVBENCH_NATIVE_DIR=str(installed))

    def run(*more: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
        argv = [*LINK_RUN, "--responder", "c", *more]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)

    missing = run("--out", str(tmp_path / "none"))
    assert missing.returncode == 2, missing.stderr[-2000:]
    assert f"--responder c: no evbench-link-responder in {installed}," in missing.stderr
    assert not (tmp_path / "none").exists()
    shutil.copy2(responder_path, installed / responder_path.name)
    # a codec its ack mode does not decode (an A/A copy) is refused before the run starts
    copy = run("--aa", "json", "--out", str(tmp_path / "none"))
    assert copy.returncode == 2, copy.stderr[-2000:]
    assert "decodes the codecs json, protobuf in ack mode, not json-aa" in copy.stderr
    assert not (tmp_path / "none").exists()
    out = tmp_path / "run"
    done = run("--out", str(out), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # the C responder answered: its own log lines, on the run's standard error
    assert "evbench-link-responder: listening on 127.0.0.1:" in done.stderr
    assert "evbench-link-responder: stopped" in done.stderr
    rtt = [s for s in measured_link_run(out, "ack") if s["metric"] == "rtt"]  # the default
    assert all(s["params"]["responder"] == "c" and s["params"]["peer"] == "loopback" for s in rtt)
    stated = json.loads((out / "manifest.json").read_text())["platform"]["link_responder"]
    about = about_fields(responder_path)
    assert stated == {"executable": str(installed / responder_path.name), **about}
    # the report's environment box says which responder answered
    report = subprocess.run(
        [Path(sys.executable).with_name("evbench"), "report", out],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-2000:]
    expected = f"- Link responder: C, {about['responder']}, started by the run"
    assert expected in (out / "report.md").read_text().splitlines()


#: docs/link.md "A responder in C": it looks at the program that started it every 0.5 s;
#: then it closes its port and its connections (a few seconds on a loaded machine).
HOST_GONE_WITHIN_S = 5.0


def _agent_child(agent: int, name: str, within_s: float) -> int | None:
    """The pid of `agent`'s child whose command names `name`, once it has one."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for pid in process_tree.descendants(agent):
            if name.encode() in process_tree.read_proc(pid, "cmdline"):
                return pid
        time.sleep(0.1)
    return None


@pytest.mark.parametrize("how", ["host and agent", "agent"])
def test_it_stops_when_the_agent_that_started_it_is_killed(how, responder_path, tmp_path):
    """`--responder c` under an agent driven through a pipe (as `evbench` drives it), killed
    (SIGKILL: it cannot stop its responder) with the program reading it, or alone: the C
    responder, reparented, must not stay listening."""
    host_code = (
        "import subprocess, sys, time\n"
        "agent = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)\n"
        "print(agent.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    # a link run of 60 s phases: it would run for many minutes by itself
    argv = [sys.executable, "-c", host_code, sys.executable, "-m", "evbench_agent", "run",
            "--suite", "link", "--quick", "--duration", "60", "--responder", "c",
            "--out", str(tmp_path / "run")]  # fmt: skip
    env = dict(os.environ, EVBENCH_NATIVE_DIR=str(responder_path.parent))
    host = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    assert host.stdout is not None
    responder = None
    try:
        agent = int(host.stdout.readline())
        responder = _agent_child(agent, "evbench-link-responder", 60.0)
        assert responder is not None, "the run never started the C responder"
        killed = [host.pid, agent] if how == "host and agent" else [agent]
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        assert process_tree.ended(responder, HOST_GONE_WITHIN_S), (
            f"still running {HOST_GONE_WITHIN_S:g} s after its agent was killed, parent "
            f"{process_tree.read_proc(responder, 'stat').rpartition(b')')[2].split()[1:2]}"
        )
    finally:
        if host.poll() is None:
            host.kill()
        host.wait(10)
        host.stdout.close()
        if responder is not None and not process_tree.ended(responder, 0):
            os.kill(responder, signal.SIGKILL)
