"""A board console for the tests: real agetty, login and bash behind a throttled pty line.

    host pty (socat) <-tcp-> LineSimulator <-tcp-> board pty (socat) <- agetty, login, bash

LineSimulator paces the bytes at 115200 baud and breaks the line on demand (mute, garbled,
silent after N bytes, chosen frames spoiled, kernel lines put in at random bytes);
KernelNoise writes kernel lines into the board end. agetty is restarted after each logout.
"""

import ast
import contextlib
import os
import random
import secrets
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

BAUD = 115200
#: Starts of agetty in a row that may fail before the rig gives up (init retries too).
GETTY_SPAWN_TRIES = 5
STEP = 64
#: A recv() that waited longer than this found the line idle.
IDLE_S = 0.001


class LineSimulator:
    """Two TCP ends joined at serial speed, with faults on demand (board to host only)."""

    def __init__(self, baud: int = BAUD) -> None:
        self.bytes_per_second = baud / 10  # 8N1
        self.listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
        self.ports = [listener.getsockname()[1] for listener in self.listeners]
        self.mute = False
        self.garble = False
        self.silent_after: int | None = None  # bytes still let through before silence
        self.spoil_frames = 0  # frames still to spoil
        #: Which kinds: data frames unless told; a tuple spoils frames of several kinds.
        self.spoil_marker: bytes | tuple[bytes, ...] = b" D "
        self._spoil_next = False
        self._spoil_tail = b""  # the last piece's end: a marker can be split between pieces
        self.spoiled = 0
        #: A kernel line put in at any byte, about one every `noise_every` bytes.
        self.noise_every: int | None = None
        self.noise_injected = 0
        #: (marker, line): `line` put right after the next `marker` (e.g. after the prompt).
        self.line_after: tuple[bytes, bytes] | None = None
        self._tail = b""
        self._random = random.Random(2217)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []

    def start(self) -> None:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        try:
            host, _ = self.listeners[0].accept()
            board, _ = self.listeners[1].accept()
        except OSError:
            return  # stopped before both ends came
        self._sockets += [host, board]
        for source, target, faults in ((host, board, False), (board, host, True)):
            thread = threading.Thread(target=self._pump, args=(source, target, faults), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _faulty(self, data: bytes) -> bytes:
        if self.mute:
            return b""
        if self.silent_after is not None:
            data = data[: self.silent_after]
            self.silent_after -= len(data)
        if self.garble:  # what a receiver at the wrong baud rate sees: mostly unprintable
            data = bytes((byte * 7 + 131) & 0xFF | 0x80 for byte in data)
        if self.noise_every and self._random.random() < len(data) / self.noise_every:
            at = self._random.randrange(len(data) + 1)
            stamp = time.monotonic() % 100000
            line = f"[{stamp:12.6f}] mmc0: error -110 whilst initialising SD card\r\n".encode()
            data = data[:at] + line + data[at:]
            self.noise_injected += 1
        if self.line_after:
            data = self._put_line_after(data, *self.line_after)
        if self._spoil_next and data:
            data = b"#" + data[1:]  # the marker ended the last piece: spoil what follows it
            self._spoil_next = False
        return self._spoiled(data)

    def _put_line_after(self, data: bytes, marker: bytes, line: bytes) -> bytes:
        """`data` with `line` after the marker, also one begun in the last piece (its tail)."""
        seen = self._tail + data
        where = seen.find(marker)
        self._tail = seen[-(len(marker) - 1) :] if len(marker) > 1 else b""
        if where < 0:
            return data
        at = where + len(marker) - len(seen) + len(data)
        self.line_after = None
        self._tail = b""
        return data[:at] + line + data[at:]

    def _spoiled(self, data: bytes) -> bytes:
        """`data` with the byte after each marker made '#', while frames are left to spoil
        (a marker begun in the last piece too: its tail, too short to hold a whole one)."""
        marker = self.spoil_marker
        markers = (marker,) if isinstance(marker, bytes) else marker
        seen = self._spoil_tail + data
        offset = len(self._spoil_tail)  # where `data` starts in `seen`
        self._spoil_tail = seen[len(seen) - max(map(len, markers)) + 1 :]
        start = 0
        while self.spoil_frames:
            found = [(index, m) for m in markers if (index := seen.find(m, start)) >= 0]
            if not found:
                break
            where, hit = min(found)
            at = where + len(hit) - offset
            self.spoil_frames -= 1
            self.spoiled += 1
            if at >= len(data):
                self._spoil_next = True
                break
            data = data[:at] + b"#" + data[at + 1 :]
            start = where + len(hit) + 1
        return data

    def _pump(self, source: socket.socket, target: socket.socket, faults: bool) -> None:
        next_time = time.monotonic()
        while not self._stop.is_set():
            asked = time.monotonic()
            try:
                data = source.recv(STEP)
            except OSError:
                return
            if not data:
                return
            now = time.monotonic()
            # Bytes already waiting follow the previous ones at the baud rate (a late
            # wake-up is caught up); after an idle line they start now.
            if now - asked > IDLE_S:
                next_time = max(next_time, now)
            next_time += len(data) / self.bytes_per_second
            delay = next_time - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if faults:
                data = self._faulty(data)
            try:
                target.sendall(data)
            except OSError:
                return

    def stop(self) -> None:
        self._stop.set()
        for connection in self._sockets:
            with contextlib.suppress(OSError):  # a peer already gone (a killed ser2net)
                connection.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=5)
        for connection in [*self._sockets, *self.listeners]:
            connection.close()


class KernelNoise:
    """Kernel-style lines written into the board's end at random moments."""

    MESSAGES = (
        "usb 1-1: new high-speed USB device number 3 using xhci-hcd",
        "EXT4-fs (mmcblk0p2): recovery complete",
        "thermal thermal_zone0: critical temperature reached",
        "@@deadbeef R 0 0123456789ab",
        "evb-00000000> printk: console [ttyS2] enabled",
    )

    def __init__(self, device: str, mean_interval: float = 0.4, seed: int = 6) -> None:
        self.device = device
        self.mean_interval = mean_interval
        self.random = random.Random(seed)
        self.written = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _line(self) -> bytes:
        stamp = time.monotonic() % 100000
        text = f"[{stamp:12.6f}] {self.random.choice(self.MESSAGES)}"
        lead = "" if self.random.random() < 0.5 else "\r\n"  # like printk: sometimes mid-line
        return f"{lead}{text}\r\n".encode()

    def _run(self) -> None:
        descriptor = None
        while not self._stop.wait(self.random.expovariate(1 / self.mean_interval)):
            try:
                if descriptor is None:
                    descriptor = os.open(self.device, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
                line = self._line()
                half = self.random.randrange(len(line))
                # In two writes, so the board's own output can land between them.
                os.write(descriptor, line[:half])
                time.sleep(self.random.random() * 0.01)
                os.write(descriptor, line[half:])
                self.written += 1
            except OSError:  # agetty's vhangup() cuts every open descriptor: open it again
                if descriptor is not None:
                    os.close(descriptor)
                descriptor = None
        if descriptor is not None:
            os.close(descriptor)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class ThrowawayUser:
    """A user created for the test session and removed after it."""

    def __init__(self, useradd: str, userdel: str, chpasswd: str) -> None:
        self.name = f"evbcon{secrets.token_hex(3)}"
        self.password = f"pw-{secrets.token_urlsafe(12)}"
        self._userdel = userdel
        subprocess.run([useradd, "-m", "-s", "/bin/bash", self.name], check=True)
        subprocess.run([chpasswd], input=f"{self.name}:{self.password}\n", text=True, check=True)
        self.home = Path(f"/home/{self.name}")

    def install_agent(self) -> None:
        """The agent's zipapp where `evbench deploy` puts it, owned by this user."""
        from evbench.usecases import deploy

        target = self.home / ".evbench" / "agent" / "evbench-agent.pyz"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(deploy.build_zipapp())
        for path in (target.parent.parent, target.parent, target):
            shutil.chown(path, self.name, self.name)

    def remove(self) -> None:
        subprocess.run([self._userdel, "-r", "-f", self.name], check=False, capture_output=True)


class ConsoleRig:
    """The whole line: socat ptys, the line simulator, agetty restarted per login, noise."""

    def __init__(self, directory: Path, socat: str, agetty: str, noise: bool = True) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.host_link = directory / "host"
        self.board_link = directory / "board"
        self.line = LineSimulator()
        self.line.start()
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self._processes = [
            subprocess.Popen([socat, f"PTY,link={link},rawer", f"TCP:127.0.0.1:{port}"], **quiet)
            for link, port in zip((self.host_link, self.board_link), self.line.ports, strict=True)
        ]
        deadline = time.monotonic() + 10
        while not (self.host_link.exists() and self.board_link.exists()):
            if time.monotonic() > deadline:
                raise RuntimeError("socat did not create the pty pair within 10 s")
            time.sleep(0.05)
        self.board_device = os.path.realpath(self.board_link)
        # A pty's master reads EIO (the end of the line for socat) while no one holds its
        # other end: keep the host end open, as a USB serial adapter stays present.
        self._hold = os.open(self.host_link, os.O_RDWR | os.O_NOCTTY)
        self._agetty = agetty
        self._stop = threading.Event()
        self._getty_thread = threading.Thread(target=self._keep_getty, daemon=True)
        self._getty_thread.start()
        self.noise = KernelNoise(self.board_device) if noise else None
        if self.noise:
            self.noise.start()
            self.line.noise_every = 4000

    @property
    def url(self) -> str:
        return f"serial://{self.host_link}"

    def _keep_getty(self) -> None:
        # agetty takes the port relative to /dev; its own session makes the line the
        # shell's controlling terminal (job control, Ctrl-C).
        port = self.board_device.removeprefix("/dev/")
        failed_spawns = 0
        while not self._stop.is_set():
            try:
                process = subprocess.Popen(
                    [self._agetty, "-L", "--noclear", port, str(BAUD), "vt100"],
                    start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
            except OSError:  # init respawns a getty whose start failed (an EFAULT exec)
                failed_spawns += 1
                if failed_spawns > GETTY_SPAWN_TRIES:
                    raise
                self._stop.wait(0.2)
                continue
            failed_spawns = 0
            self._getty = process
            while process.poll() is None and not self._stop.is_set():
                time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        if self.noise:
            self.noise.stop()
        getty = getattr(self, "_getty", None)
        if getty is not None and getty.poll() is None:
            os.killpg(getty.pid, signal.SIGTERM)  # login hangs up its shell too
            try:
                getty.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(getty.pid, signal.SIGKILL)
                getty.wait(timeout=5)
        self._getty_thread.join(timeout=5)
        os.close(self._hold)
        for process in self._processes:
            process.terminate()
            process.wait(timeout=5)
        self.line.stop()


class Ser2net:
    """A real ser2net 4.x serving the host end of the line as RFC 2217 on loopback."""

    def __init__(self, ser2net: str, device: str, directory: Path) -> None:
        with socket.create_server(("127.0.0.1", 0)) as probe:
            self.port = probe.getsockname()[1]
        config = directory / "ser2net.yaml"
        config.write_text(
            "%YAML 1.1\n---\nconnection: &evbench\n"
            f"  accepter: telnet(rfc2217),tcp,127.0.0.1,{self.port}\n"
            f"  connector: serialdev,{device},115200n81,local\n"
            "  options:\n    kickolduser: true\n"
        )
        self.log = directory / "ser2net.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [ser2net, "-n", "-u", "-c", str(config), "-P", str(directory / "ser2net.pid")],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"ser2net did not listen: {self.log.read_text()}") from None
                time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"rfc2217://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=5)


def transcript_streams(path: Path) -> dict[str, bytes]:
    """Each direction's bytes in a console transcript, joined from its records (where the
    reads split them depends on timing)."""
    joined = {"<": b"", ">": b""}
    for line in path.read_text(encoding="ascii").splitlines():
        if line.startswith("#"):
            continue
        _elapsed, direction, payload = line.split(" ", 2)
        if direction in joined:
            joined[direction] += ast.literal_eval(payload)
    return joined


def read_until(fd: int, wanted: bytes | None) -> bytes:
    """What `fd` gives up to and including `wanted` (None: up to its end), within 60 s."""
    seen, deadline = b"", time.monotonic() + 60
    while wanted is None or wanted not in seen:
        assert time.monotonic() < deadline, seen
        if select.select([fd], [], [], 0.5)[0]:
            try:
                data = os.read(fd, 4096)
            except OSError:  # EIO: the other end of the pty was closed
                data = b""
            if not data:
                assert wanted is None, seen  # it ended before saying `wanted`
                return seen
            seen += data
    return seen


def typed_on_a_terminal(
    setsid: str, argv: list, prompt: bytes, answer: bytes, cwd: Path | None = None
) -> tuple[int, bytes]:
    """`argv` on a pty made its controlling terminal (`setsid --ctty`: getpass reads it),
    `answer` typed once `prompt` shows: its exit status and everything on the screen."""
    master, slave = os.openpty()
    process = subprocess.Popen(
        [setsid, "--ctty", *argv], stdin=slave, stdout=slave, stderr=slave, cwd=cwd
    )
    os.close(slave)
    try:
        screen = read_until(master, prompt)
        os.write(master, answer)
        screen += read_until(master, None)  # up to the end: it closed the terminal
    finally:
        os.close(master)
    return process.wait(timeout=60), screen
