"""End-to-end: the link over ISO-TP with CAN FD frames on vcan, both ends on the board.

The board's root carries the CAN modules (evboard_kernel.BOARD_MODULES) and
kmod: `ip link add vcan0 type vcan` loads vcan, the first ISO-TP socket can
and can-isotp, as on a real board. QEMU does not pace a vcan bus:
this checks correctness (every message answered, a wrong id pair fails
within its deadline with a clear message), not timing. Then the link suite
itself (`evbench-agent run --suite link --link-transport isotp://...`) runs
on the board against the same responder and its records are checked: every
message of every phase answered, the transport and bit rates in the params,
and a bus load in the range worked out below (nominal: vcan has no bit rate),
and vcan0's counters recorded around every phase with no error.
"""

import json

import pytest
from evboard_fixture import BoardSession, evboard_session  # noqa: F401 (fixture `evboard`)

from evbench.usecases.deploy import build_zipapp

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]

RESPONDER_URL = "isotp://vcan0?tx=0x7E8&rx=0x7E0&fd=1&dlen=64"
SUITE_URL = "isotp://vcan0?tx=0x7E0&rx=0x7E8&fd=1&dlen=64&bitrate=500000&dbitrate=2000000"
#: Bus load per codec at 20 Hz on CAN FD 500 k / 2 M with 64-byte frames, a range
#: around what the frames take: a 64-byte FD frame is 335 us at these rates
#: (tests/test_bus_budget.py works it out), so protobuf's ~290-byte PDU (5 frames)
#: with its flow control and ack (1 frame each, shorter) is ~2 ms per 50 ms (~4 %);
#: JSON's ~1008-byte PDU (16-17 frames) is ~6 ms (~12 %).
LOAD_RANGE = {"protobuf": (2.5, 6.0), "json": (9.0, 16.0)}
CLIENT = r"""
import json, sys, time
from evbench_core.errors import UserError
from evbench_agent.link import framing, handshake, isotp_port, messages
link = messages.bind("protobuf", "seed")
hello = handshake.Hello("protobuf", "seed", messages.message_name(link.profile), "ack")
out, start = {"replies": []}, time.monotonic()
try:
    with isotp_port.IsotpPort(isotp_port.parse(sys.argv[1])) as port:
        port.send_frame(framing.HELLO, 0, json.dumps(hello.document()).encode())
        answer = port.receive_frames(20)
        out["hello"] = json.loads(answer[0].body) if answer else None
        for index, item in enumerate(link.sample_data(20, 1)):
            port.send_frame(framing.MESSAGE, index, link.encode(item))
            for frame in port.receive_frames(10):
                if frame.kind == framing.REPLY:
                    out["replies"].append(link.decode_ack(frame.body[8:])[0])
except UserError as error:
    out["error"] = str(error)
out["seconds"] = time.monotonic() - start
print(json.dumps(out))
"""


def test_the_link_over_isotp_on_vcan_with_can_fd(evboard: BoardSession) -> None:
    evboard.upload(build_zipapp(), "/tmp/evbench-agent.pyz")
    evboard.upload(CLIENT.encode(), "/tmp/isotp_client.py")
    evboard.ssh(
        "set -e; ip link show vcan0 >/dev/null 2>&1 || ip link add vcan0 type vcan;"
        " ip link set vcan0 mtu 72; ip link set vcan0 up"
    )
    pid = evboard.ssh(
        f"nohup python3 /tmp/evbench-agent.pyz serve --transport '{RESPONDER_URL}'"
        " >/tmp/responder.log 2>&1 </dev/null & echo $!"
    ).strip()
    try:
        evboard.ssh("for i in $(seq 120); do grep -q transport /tmp/responder.log && exit 0;"
                    " sleep 1; done; cat /tmp/responder.log; exit 1", timeout=180)  # fmt: skip
        client = "PYTHONPATH=/tmp/evbench-agent.pyz python3 /tmp/isotp_client.py"
        good = json.loads(evboard.ssh(f"{client} 'isotp://vcan0?tx=0x7E0&rx=0x7E8&fd=1'", 900))
        assert good.get("hello", {}).get("ok") is True, good
        assert good["replies"] == list(range(20)), good
        # Ids nobody answers on: the First Frame gets no flow control; one clear line.
        bad = json.loads(evboard.ssh(f"{client} 'isotp://vcan0?tx=0x7E1&rx=0x7E9&fd=1'", 300))
        assert "no ISO-TP flow control" in bad.get("error", ""), bad
        assert bad["seconds"] < 60
        # The kernel's modprobe loaded them on demand (the ISO-TP sockets, ip link add).
        loaded = evboard.ssh("cut -d' ' -f1 /proc/modules", 60).split()
        assert {"can_dev", "vcan", "can", "can_isotp"} <= set(loaded), loaded
        _check_the_link_suite(evboard)
    finally:
        evboard.ssh(f"kill {pid}; sleep 2; cat /tmp/responder.log")


def _check_the_link_suite(evboard: BoardSession) -> None:
    """The link suite's client over ISO-TP: two quick phases per codec at 20 Hz."""
    evboard.upload(json.dumps({"link_phases": 2}).encode(), "/tmp/isotp-spec.json")
    said = evboard.ssh(
        # --count 10: the quick plan's phases now hold 6 messages (docs/link.md); 10 a phase,
        # as the checks below expect, keeps the loads' ranges worked out for that plan.
        "python3 /tmp/evbench-agent.pyz run --suite link --quick --codecs json,protobuf --count 10"
        f" --spec /tmp/isotp-spec.json --link-transport '{SUITE_URL}' --out /tmp/isotp-run"
        " >/tmp/isotp-run.log 2>&1; echo exit=$?; cat /tmp/isotp-run.log",
        1200,
    )
    assert "exit=0" in said, said
    assert "cannot go out" not in said, said  # both codecs' messages fit 50 ms on CAN FD
    found = [json.loads(line) for line in evboard.ssh("cat /tmp/isotp-run/samples.jsonl", 120)
             .splitlines()]  # fmt: skip
    periodic = [r for r in found if r["params"].get("phase") == "periodic"]

    def one(codec: str, metric: str) -> list[dict]:
        return [r for r in periodic if r["codec"] == codec and r["metric"] == metric]

    for codec in ("json", "protobuf"):
        rtts = one(codec, "rtt_transport")
        assert sorted(r["worker"] for r in rtts) == [0, 1]  # two phases
        for record in rtts:
            params = record["params"]
            assert len(record["values"]) == params["count"] == 10
            assert params["transport"] == "isotp" and params["peer"] == "bus"
            assert (params["bit_rate"], params["data_bit_rate"]) == (500000, 2000000)
            assert params["frame_length"] == 64 and params["bit_rate_source"] == "url"
        assert [r["values"] for r in one(codec, "lost")] == [[0.0], [0.0]]
        low, high = LOAD_RANGE[codec]
        loads = [r["values"][0] for r in one(codec, "bus_load")]
        assert len(loads) == 2 and all(low < load < high for load in loads), loads
    assert not [r for r in found if r["params"].get("phase") == "capacity"]
    # vcan0's counters around every phase (docs/buses.md, "Bus counters during a run"):
    # frames went out and no error counter rose on a bus QEMU does not disturb.
    errors = [r for r in found if r["metric"] == "bus_errors"]
    assert sorted((r["codec"], r["worker"]) for r in errors) == [
        ("json", 0), ("json", 1), ("protobuf", 0), ("protobuf", 1)
    ], errors  # fmt: skip
    assert all(r["values"] == [0.0] and r["params"]["interface"] == "vcan0" for r in errors)
    sent = [
        r for r in found if r["metric"] == "bus_counter" and r["params"]["counter"] == "tx_packets"
    ]
    assert len(sent) == 4 and all(r["values"][0] > 0 for r in sent), sent
    assert "bus errors on" not in said, said
