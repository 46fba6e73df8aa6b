"""ISO-TP over SocketCAN: linux/can/isotp.h's option structs packed by hand (__u32 on 4
bytes, no padding before the __u8s nor at the end of the 12-byte struct) and checked against
gcc's view of the header, the isotp:// address, and one-line errors for what a host gets
wrong (no SocketCAN here: the kernel's own refusal)."""

import errno
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import require, require_command

from evbench_agent.link import (
    bus_responder,
    framing,
    handshake,
    isotp_options,
    isotp_port,
    messages,
)
from evbench_agent.link.framing import FrameError
from evbench_core.errors import UserError


def native(value: int, size: int) -> bytes:
    return value.to_bytes(size, sys.byteorder)


def test_the_options_are_two_u32_then_four_u8_and_flow_control_and_link_layer_three_u8() -> None:
    packed = isotp_options.IsotpOptions(
        flags=0x404, frame_txtime_ns=0x01020304, ext_address=0x11,
        txpad_content=0xCC, rxpad_content=0xAA, rx_ext_address=0x22,
    ).pack()  # fmt: skip
    assert packed == native(0x404, 4) + native(0x01020304, 4) + bytes((0x11, 0xCC, 0xAA, 0x22))
    assert isotp_options.IsotpOptions.unpack(packed).frame_txtime_ns == 0x01020304
    assert isotp_options.FlowControlOptions(8, 0xF1, 0).pack() == bytes((8, 0xF1, 0))
    # CAN FD: mtu = sizeof(struct canfd_frame) = 4 + 4 + 64 = 72, tx_dl 64, BRS (0x01).
    assert isotp_options.LinkLayerOptions.fd(64).pack() == bytes((72, 64, 0x01))
    # Classic: sizeof(struct can_frame) = 4 + 4 + 8 = 16, tx_dl 8, no flags.
    assert isotp_options.LinkLayerOptions().pack() == bytes((16, 8, 0))
    assert isotp_options.LinkLayerOptions.unpack(bytes((72, 32, 0))).tx_dl == 32


C_PROGRAM = r"""
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/can.h>
#include <linux/can/isotp.h>
static void dump(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) printf("%02x", b[i]);
    printf("\n");
}
int main(void) {
    struct can_isotp_options o;
    memset(&o, 0, sizeof o);
    o.flags = CAN_ISOTP_TX_PADDING | CAN_ISOTP_WAIT_TX_DONE; o.frame_txtime = 0x01020304;
    o.ext_address = 0x11; o.txpad_content = 0xCC; o.rxpad_content = 0xAA; o.rx_ext_address = 0x22;
    struct can_isotp_fc_options fc = {8, 0xF1, 0};
    struct can_isotp_ll_options ll = {CANFD_MTU, 64, CANFD_BRS};
    dump(&o, sizeof o); dump(&fc, sizeof fc); dump(&ll, sizeof ll);
    printf("%d %d %d %d %d %d\n", SOL_CAN_ISOTP, CAN_ISOTP_OPTS, CAN_ISOTP_RECV_FC,
           CAN_ISOTP_LL_OPTS, CAN_MTU, CANFD_MTU);
    return 0;
}
"""


def test_the_packing_matches_what_gcc_makes_of_the_kernel_header(tmp_path: Path) -> None:
    gcc = require_command("gcc")
    require(Path("/usr/include/linux/can/isotp.h").exists(), "linux/can/isotp.h (linux-libc-dev)")
    source, program = tmp_path / "isotp.c", tmp_path / "isotp"
    source.write_text(C_PROGRAM)
    subprocess.run([gcc, "-o", str(program), str(source)], check=True, timeout=120)
    done = subprocess.run([str(program)], capture_output=True, text=True, check=True, timeout=30)
    lines = done.stdout.split("\n")
    ours = isotp_options.IsotpOptions(
        isotp_options.CAN_ISOTP_TX_PADDING | isotp_options.CAN_ISOTP_WAIT_TX_DONE,
        0x01020304, 0x11, 0xCC, 0xAA, 0x22,
    )  # fmt: skip
    assert bytes.fromhex(lines[0]) == ours.pack()
    assert bytes.fromhex(lines[1]) == isotp_options.FlowControlOptions(8, 0xF1, 0).pack()
    assert bytes.fromhex(lines[2]) == isotp_options.LinkLayerOptions.fd(64).pack()
    numbers = [int(word) for word in lines[3].split()]
    names = ("SOL_CAN_ISOTP", "CAN_ISOTP_OPTS", "CAN_ISOTP_RECV_FC", "CAN_ISOTP_LL_OPTS",
             "CAN_MTU", "CANFD_MTU")  # fmt: skip
    assert numbers == [getattr(isotp_options, name) for name in names]


def test_an_isotp_address_and_its_ids_extended_ones_with_the_eff_flag() -> None:
    assert isotp_options.can_id(0x7E0) == 0x7E0
    assert isotp_options.can_id(0x18DAF110) == 0x18DAF110 | (1 << 31)
    assert isotp_options.can_id(0x10, extended=True) == 0x10 | (1 << 31)
    with pytest.raises(ValueError):
        isotp_options.can_id(1 << 29)
    address = isotp_port.parse("isotp://can0?tx=0x7E0&rx=0x7E8&fd=1&dlen=64")
    assert (address.interface, address.tx_id, address.rx_id) == ("can0", 0x7E0, 0x7E8)
    assert (address.fd, address.data_length, address.padding) == (True, 64, True)
    assert isotp_port.parse("isotp://vcan0?tx=2016&rx=2024").data_length == 8
    assert address.swapped().tx_id == 0x7E8


@pytest.mark.parametrize(
    "url",
    ["isotp://?tx=1&rx=2", "tcp://can0?tx=1&rx=2", "isotp://can0?tx=0x7E0",
     "isotp://can0?tx=0x800&rx=0x7E8", "isotp://can0?tx=0x7E0&rx=0x7E0",
     "isotp://can0?tx=0x7E0&rx=0x7E8&dlen=64", "isotp://can0?tx=0x7E0&rx=0x7E8&fd=1&dlen=60",
     "isotp://can0?tx=0x7E0&rx=0x7E8&speed=1", "isotp://can0?tx=zz&rx=0x7E8"],
)  # fmt: skip
def test_bad_isotp_addresses_are_user_errors(url: str) -> None:
    with pytest.raises(UserError):
        isotp_port.parse(url)


def fake_can_interface(root: Path, flags: int, mtu: int) -> Path:
    """A stand-in for /sys/class/net/can0 (this host has none)."""
    where = root / "can0"
    where.mkdir(parents=True)
    for name, value in (("type", "280"), ("flags", f"{flags:#x}"), ("mtu", f"{mtu}")):
        (where / name).write_text(value + "\n")
    return root


def test_a_missing_non_can_down_or_classic_for_fd_interface_is_one_line(tmp_path: Path) -> None:
    # the real /sys/class/net: no such interface, and loopback
    with pytest.raises(UserError, match="no network interface 'evcan9'"):
        isotp_port.IsotpPort(isotp_port.parse("isotp://evcan9?tx=1&rx=2"))
    with pytest.raises(UserError, match="'lo' is not a CAN interface"):
        isotp_port.IsotpPort(isotp_port.parse("isotp://lo?tx=1&rx=2"))
    down = fake_can_interface(tmp_path / "down", flags=0x80, mtu=16)
    with pytest.raises(UserError, match="is down") as raised:
        isotp_port.check_interface(isotp_port.parse("isotp://can0?tx=1&rx=2"), down)
    assert "ip link set can0 up" in (raised.value.hint or "")
    classic = fake_can_interface(tmp_path / "classic", flags=0xC1, mtu=16)
    isotp_port.check_interface(isotp_port.parse("isotp://can0?tx=1&rx=2"), classic)
    with pytest.raises(UserError, match="does not take CAN FD"):
        isotp_port.check_interface(isotp_port.parse("isotp://can0?tx=1&rx=2&fd=1"), classic)


def test_a_kernel_without_socketcan_is_one_line() -> None:
    # the real kernel's answer; where it has SocketCAN and can-isotp the socket opens
    try:
        probe = socket.socket(socket.AF_CAN, socket.SOCK_DGRAM, socket.CAN_ISOTP)
    except OSError as error:
        expected = {errno.EAFNOSUPPORT: "no SocketCAN", errno.EPROTONOSUPPORT: "not loaded"}
        with pytest.raises(UserError, match=expected[error.errno]):
            isotp_port.open_socket()
    else:
        probe.close()
        isotp_port.open_socket().close()


def test_a_pdu_is_one_link_frame() -> None:
    frame = framing.pack(framing.MESSAGE, 7, b"body")
    assert isotp_port.unpack(frame) == (framing.MESSAGE, 7, b"body")
    with pytest.raises(FrameError):
        isotp_port.unpack(frame + b"x")  # length says 13, the PDU has 14
    with pytest.raises(FrameError):
        isotp_port.unpack(frame[:10])


class KernelSays:
    """No SocketCAN here: a Unix socket pair carries the PDUs (one send, one recv), and the
    first recv() gives the kernel's report of one damaged transfer instead."""

    def __init__(self, sock: socket.socket, code: int) -> None:
        self.sock, self.code = sock, code

    def setsockopt(self, *_option: object) -> None: ...

    def bind(self, _address: object) -> None: ...

    def settimeout(self, seconds: float) -> None:
        self.sock.settimeout(seconds)

    def recv(self, size: int) -> bytes:
        if self.code:
            code, self.code = self.code, 0
            raise OSError(code, os.strerror(code))
        return self.sock.recv(size)

    def send(self, data: bytes) -> int:
        return self.sock.send(data)

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("code", [errno.EILSEQ, errno.EBADMSG, errno.ECOMM])
def test_one_damaged_transfer_costs_the_responder_one_message_not_its_life(
    code: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """linux net/can/isotp.c's errors of one transfer: a consecutive frame out of sequence
    (EILSEQ), bad padding (EBADMSG), no flow control for our last send (ECOMM)."""
    responder_end, client_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    monkeypatch.setattr(isotp_port, "check_interface", lambda *_args: None)
    monkeypatch.setattr(isotp_port, "open_socket", lambda: KernelSays(responder_end, code))
    link = messages.bind("json", "seed")
    hello = handshake.Hello("json", "seed", messages.message_name(link.profile), "ack")
    message = link.encode(link.sample_data(1, 1)[0])
    answers: list[framing.Frame] = []

    def client() -> None:
        client_end.settimeout(10)
        try:
            client_end.send(framing.pack(framing.HELLO, 0, json.dumps(hello.document()).encode()))
            answers.append(isotp_port.unpack(client_end.recv(4096)))
            client_end.send(framing.pack(framing.MESSAGE, 0, message))
            answers.append(isotp_port.unpack(client_end.recv(4096)))
        finally:
            if serving.is_set():  # (a responder that ended on its own needs no stop)
                os.kill(os.getpid(), signal.SIGTERM)  # the responder's stop

    serving, thread = threading.Event(), threading.Thread(target=client)
    serving.set()
    thread.start()
    try:
        with caplog.at_level(logging.WARNING):
            bus_responder.serve_transport("isotp://can0?tx=0x7E8&rx=0x7E0")
    finally:
        serving.clear()
        thread.join(15)
        client_end.close()
    assert [frame.kind for frame in answers] == [framing.HELLO, framing.REPLY]
    assert json.loads(answers[0].body)["ok"] is True and answers[1].sequence == 0
    assert [record.getMessage()[:17] for record in caplog.records] == ["dropped a transfe"]
