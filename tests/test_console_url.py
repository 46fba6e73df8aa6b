"""Console addresses and frames: the pure parts of the serial console."""

import contextlib
import socket

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evbench.boards import open_board
from evbench.boards.serial import frames
from evbench.boards.serial.address import parse_console_url
from evbench.boards.serial.shell import estimate_seconds
from evbench.boards.urls import scheme_of, schemes, transport_of
from evbench.cli import evbench
from evbench_core.errors import UserError


def test_console_urls_take_evbench_options_out_and_keep_the_rest():
    address = parse_console_url("serial:///dev/ttyUSB0?baud=921600&user=field&dir=/data/evb")
    assert (address.port, address.baud, address.user) == ("/dev/ttyUSB0", 921600, "field")
    assert (address.python, address.work_dir) == ("python3", "/data/evb")
    assert not address.is_network
    defaults = parse_console_url("serial:///dev/ttyS2")
    assert (defaults.baud, defaults.user, defaults.work_dir) == (115200, "root", ".evbench")
    # rfc2217: ign_set_control added once, pyserial's own options kept; socket: left alone
    address = parse_console_url("rfc2217://lab:7000?user=root&logging=debug")
    assert address.port == "rfc2217://lab:7000?logging=debug&ign_set_control="
    assert address.is_network and address.user == "root"
    given = parse_console_url("rfc2217://lab:7000?ign_set_control")
    assert given.port.count("ign_set_control") == 1
    assert parse_console_url("socket://10.0.0.9:4001").port == "socket://10.0.0.9:4001"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("serial://dev/ttyUSB0", "names no device"),
        ("serial:///dev/ttyUSB0?baud=fast", "baud must be a positive whole number"),
        ("serial:///dev/ttyUSB0?parity=E", "unknown option(s) parity"),
        ("serial:///dev/ttyUSB0?user=a&user=b", "gives 'user' twice"),
        ("serial:///dev/ttyUSB0?user=two%20words", "invalid user"),
        ("rfc2217://lab", "needs HOST:PORT"),
        ("telnet://lab:23", "not a console URL"),
    ],
)
def test_bad_console_urls_are_refused_with_a_hint(url, says):
    with pytest.raises(UserError, match=says.replace("(", r"\(").replace(")", r"\)")) as raised:
        parse_console_url(url)
    assert raised.value.hint


def _frame(tag: str, body: str) -> bytes:
    text = f"{tag} {body}"
    return f"@@{text} {frames.check(text)}".encode()


def test_frames_survive_noise_and_refuse_spoiled_or_foreign_ones():
    tag = frames.new_tag()
    good = _frame(tag, "D o 0 aGVsbG8=")
    spoiled = good.replace(b"aGVs", b"aGXs")
    noise = b"[   12.5] usb 1-1: new device\r\n[ 13.0] kernel line before it"
    foreign = _frame("00000000", "R 0")
    buffer = bytearray(noise + good + b"\r\n" + spoiled + b"\r\n" + foreign + b"\r\npartial @@")
    found = frames.take_frames(buffer, tag)
    assert found == [frames.Frame(tag, "D", ("o", "0", "aGVsbG8="))]
    assert buffer == bytearray(b"partial @@")  # the incomplete line waits for its end


def test_the_prompt_after_a_request_s_frames_ends_it_though_a_kernel_line_follows():
    tag, prompt = frames.new_tag(), b"evb-1234abcd> "
    status = _frame(tag, "R 9")
    spoiled_end = _frame(tag, "E").replace(b" E ", b" F ")
    kernel = b"\r\n[   12.5] usb 1-1: new device\r\n"
    # The prompt before the request (still in the buffer) does not end it.
    buffer = bytearray(prompt + b"\n" + status + b"\r\n")
    reader = frames.FrameReader(buffer, (tag,), prompt)
    assert reader.take() == [frames.Frame(tag, "R", ("9",))]
    assert not reader.prompt_after
    # The spoiled end frame, the prompt, and a kernel line all in one read: the kernel
    # line ends the prompt's line, and taking the lines must not lose the prompt.
    buffer += b"\n" + spoiled_end + b"\n" + prompt + kernel
    assert reader.take() == []
    assert buffer == bytearray()
    assert reader.prompt_after
    # The prompt still arriving, no newline after it yet: seen in what is left.
    late = frames.FrameReader(bytearray(b"\n" + status + b"\n" + prompt[:5]), (tag,), prompt)
    late.take()
    assert not late.prompt_after
    late.buffer += prompt[5:]
    assert late.take() == [] and late.prompt_after


def test_tags_never_spell_alarm_words():
    for _ in range(200):
        tag = frames.new_tag()
        assert "ERROR" not in tag.upper() and "FAIL" not in tag.upper()


def test_transfer_estimate_at_115200_baud():
    # 8 KiB as base64 frames at 11520 bytes/s: a little over one second.
    assert 0.9 < estimate_seconds(8192, 115200) < 1.3


@pytest.mark.parametrize(
    ("url", "hint"),
    [
        ("serial:///dev/evbench-no-such-tty", "check the device path"),
        # a port nothing listens on (a closed socket's): the console server is not there
        ("rfc2217://127.0.0.1:PORT", "is ser2net (or the console server) running"),
        ("socket://127.0.0.1:PORT", "is ser2net (or the console server) running"),
    ],
)
def test_a_missing_device_or_server_is_one_clear_error(url, hint, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connecting is refused
        url = url.replace("PORT", str(closed.getsockname()[1]))
        assert evbench(["diag", "--board", url]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith(f"evbench: error: cannot open console {url}")
    assert lines[1].startswith(f"evbench: hint: {hint}")
    assert len(lines) == 2


@settings(max_examples=150, deadline=None)
@given(line=st.binary(max_size=200), tag=st.from_regex(r"[0-9a-f]{8}", fullmatch=True))
def test_property_any_line_is_a_frame_or_nothing(line, tag):
    frame = frames.parse_line(line, tag)
    assert frame is None or frame.tag == tag


FIELD = st.text(alphabet="0123456789abcdef-=+/AZ", max_size=12)
FIELD |= st.sampled_from(["-1", "9" * 5000, "00", "o", "e", "f"])


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(list("RSDLEAX")), fields=st.lists(FIELD, max_size=4))
def test_property_a_checked_frame_with_any_fields_is_added_or_refused(kind, fields):
    # The check only proves the line was not spoiled: a hostile board can frame anything.
    frame = frames.Frame("0badc0de", kind, tuple(fields))
    reply = frames.Reply()
    try:
        reply.add(frame)
    except ValueError:  # the session turns it into a ConsoleError naming the transcript
        return
    for state in reply.files.values():
        assert state.size is None or state.size <= frames.MAX_FILE


@settings(max_examples=100, deadline=None)
@given(url=st.text(max_size=60))
@example(url="ssh://[")  # urlsplit's ValueError for an unclosed IPv6 bracket
@example(url="rfc2217://lab:99999")  # and for a port out of range, raised when read
@example(url="labgrid://[::1")
def test_property_a_board_url_parses_or_is_a_user_error(url):
    # Every registered parser (the registry's, so a new scheme is fuzzed too).
    for parse in (transport_of, *(entry.parse for entry in schemes())):
        with contextlib.suppress(UserError):  # anything else fails the test
            parse(url)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("rfc2217://lab:99999", "bad port in 'rfc2217://lab:99999'"),
        ("socket://lab:0x10", "bad port in 'socket://lab:0x10'"),
        ("ssh://root@[2001:db8::7", "malformed board URL 'ssh://root@[2001:db8::7'"),
        ("labgrid://[am62x", "malformed board URL 'labgrid://[am62x'"),
    ],
)
def test_a_malformed_host_or_port_is_a_user_error_naming_the_url(url, says):
    with pytest.raises(UserError) as raised:
        scheme_of(url).parse(url)
    assert says in str(raised.value)


def test_the_local_board_says_what_it_is(tmp_path):
    with open_board("local") as board:
        assert board.is_local and board.transcript_path is None
        assert board.save_transcript(tmp_path) is None
        assert not list(tmp_path.iterdir())


def test_fetch_progress_counts_from_the_described_size_when_the_size_frame_is_spoiled():
    from evbench.boards.serial.transfer import _FetchProgress

    shown: list[tuple[int, int]] = []
    progress = _FetchProgress(115200, 2000, lambda done, total, _: shown.append((done, total)))
    # No S frame (the line spoiled it): two chunks of 768 bytes (1024 base64 characters).
    chunk = "A" * 1024
    for index in range(2):
        progress.on_frame(frames.Frame("t", "D", ("f", str(index), chunk)))
    assert shown == [(768, 2000), (1536, 2000)]
    progress.finish(2000)  # the last chunk came as a repair, outside the reports
    progress.finish(2000)  # and the end is said once
    assert shown[2:] == [(2000, 2000)]
