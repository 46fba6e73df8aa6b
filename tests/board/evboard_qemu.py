"""Boot the virtual ARM64 board in QEMU and bring it to a state evbench can use.

The board is `qemu-system-aarch64 -M virt -cpu cortex-a53 -m 1024 -smp 2`
under software emulation, with -snapshot so the cached image stays clean.
Its console (the PL011 UART, ttyAMA0) is a pseudo-terminal, and QEMU logs
every byte the guest writes on it to console.log whoever is connected.
User-mode networking forwards a free loopback port to the guest's sshd;
a second virtio disk (/dev/vdb) stands in for the eMMC and is written
through (snapshot=off) so a test can read back on the host what was flashed.

The board's buses: two Kvaser PCIcan controllers (QEMU's kvaser_pci, an
SJA1000 behind a PLX bridge; the guest's kvaser_pci driver makes them can0
and can1) on one emulated CAN bus, so classic CAN frames one sends the other
receives; and a PCI 16550 (QEMU's pci-serial, the guest's ttyS0 through the
built-in 8250_pci) whose other end is a second host pseudo-terminal,
`uart_path`. QEMU paces neither: frames and bytes move as fast as the
emulation runs, whatever bit rate or baud the guest sets.

Every step has a deadline; a failure raises BoardBootError with the end of
the console transcript, and stop() kills only the QEMU started here.
"""

import contextlib
import ctypes
import os
import re
import select
import signal
import socket
import subprocess
import termios
import time
import tty
from pathlib import Path

from evboard_image import BoardImage
from evboard_rootfs import ROOT_PASSWORD

EMMC_SIZE = 64 * 1024 * 1024
GUEST_ADDRESS = "10.0.2.15"  # QEMU user-mode networking's first DHCP lease
PROMPT = "EVBOARD# "
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # bash's bracketed-paste switches
CMDLINE = "console=ttyAMA0 root=/dev/vda rw net.ifnames=0 panic=-1"


PR_SET_PDEATHSIG = 1


class BoardBootError(Exception):
    """The virtual board did not come up; the message carries the console's end."""


def _die_with_parent() -> None:
    """In the child: have the kernel kill QEMU when pytest dies, even by SIGKILL,
    so a killed test run never leaves an emulator behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


#: What ends a boot on the console: the login prompt, or the initramfs saying it cannot
#: mount the root disk (evboard_init.sh), so that boot fails then instead of at the
#: deadline. The device's name counts once the character after it has come: a read can
#: end inside it ("cannot mount /"), and the failure would name the wrong device.
BOOT_OUTCOME = r"login: ?$|login: |evboard-initramfs: cannot mount [^\s;]+(?=[\s;])"


class VirtualBoard:
    """One QEMU process running the board, and the console to drive it."""

    def __init__(self, image: BoardImage, workdir: Path, cmdline: str = CMDLINE) -> None:
        self.image = image
        self.cmdline = cmdline
        self.workdir = workdir
        self.console_log = workdir / "console.log"
        self.qemu_log = workdir / "qemu.log"
        self.emmc = workdir / "emmc.img"
        self.ssh_port = 0
        self.console_path = ""
        self.uart_path = ""
        self._process: subprocess.Popen | None = None
        self._fd = -1

    # -- QEMU process ---------------------------------------------------------------------------

    def command(self) -> list[str]:
        """The QEMU command line (also what the README shows for booting by hand)."""
        return [
            "qemu-system-aarch64",
            "-M", "virt", "-cpu", "cortex-a53", "-m", "1024", "-smp", "2",
            "-display", "none", "-monitor", "none", "-no-reboot", "-snapshot",
            "-kernel", str(self.image.kernel),
            "-initrd", str(self.image.initramfs),
            "-append", self.cmdline,
            "-chardev", f"pty,id=console,logfile={self.console_log},logappend=off",
            "-serial", "chardev:console",
            "-drive", f"if=none,id=root,format=raw,file={self.image.disk}",
            "-device", "virtio-blk-pci,drive=root",
            "-drive", f"if=none,id=emmc,format=raw,snapshot=off,file={self.emmc}",
            "-device", "virtio-blk-pci,drive=emmc,serial=evboard-emmc",
            "-netdev", f"user,id=net,hostfwd=tcp:127.0.0.1:{self.ssh_port}-:22",
            "-device", "virtio-net-pci,netdev=net,romfile=",  # no iPXE boot ROM: -kernel boots
            "-object", "can-bus,id=canbus0",
            "-device", "kvaser_pci,canbus=canbus0",
            "-device", "kvaser_pci,canbus=canbus0",
            "-chardev", "pty,id=uart",
            "-device", "pci-serial,chardev=uart",
        ]  # fmt: skip

    def start(self, timeout: float = 30) -> None:
        """Start QEMU and wait until it names the console's and the UART's pseudo-terminals."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.emmc.open("wb") as emmc:
            emmc.truncate(EMMC_SIZE)
        self.ssh_port = free_loopback_port()
        with self.qemu_log.open("wb") as log:
            self._process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ptys = dict(
                (label, path)
                for path, label in re.findall(
                    r"redirected to (/dev/pts/\d+) \(label (\w+)\)", self.qemu_log.read_text()
                )
            )
            if {"console", "uart"} <= ptys.keys():
                self.console_path, self.uart_path = ptys["console"], ptys["uart"]
                return
            if self._process.poll() is not None:
                self.fail("QEMU exited at start")
            time.sleep(0.2)
        self.fail(f"QEMU named no console and UART pseudo-terminals within {timeout:.0f} s")

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        """Kill the QEMU started here (its own process group) and wait for it."""
        self.close_console()
        if self._process is None:
            return
        if self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait(timeout=15)
        self._process = None

    def transcript(self, lines: int = 80) -> str:
        try:
            text = self.console_log.read_text(errors="replace")
        except OSError:
            return "(no console output)"
        return "\n".join(text.splitlines()[-lines:])

    def fail(self, what: str) -> None:
        qemu = self.qemu_log.read_text(errors="replace").strip() if self.qemu_log.exists() else ""
        raise BoardBootError(
            f"virtual board: {what}\n--- QEMU said ---\n{qemu}\n"
            f"--- console transcript (end; whole: {self.console_log}) ---\n{self.transcript()}"
        )

    # -- console --------------------------------------------------------------------------------

    def open_console(self) -> None:
        self._fd = os.open(self.console_path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self._fd, termios.TCSANOW)
        self._seen = ""

    def close_console(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def send(self, text: str) -> None:
        os.write(self._fd, text.encode())

    def expect(self, pattern: str, timeout: float, what: str) -> re.Match:
        """Read the console until pattern matches what arrived since the last match."""
        deadline = time.monotonic() + timeout
        while True:
            match = re.search(pattern, self._seen)
            if match:
                self._seen = self._seen[match.end() :]
                return match
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.running():
                state = "QEMU exited" if not self.running() else f"no {what} within {timeout:.0f} s"
                self.fail(state)
            ready, _, _ = select.select([self._fd], [], [], min(remaining, 1.0))
            if ready:
                self._seen += os.read(self._fd, 4096).decode(errors="replace")

    def _read_to_line_end(self, timeout: float) -> None:
        """Read the console through the end of the line under way, so that the transcript
        (console.log) holds all of it: QEMU writes each piece of console output to the
        pseudo-terminal first and to its log after (qemu_chr_write_buffer in chardev/char.c,
        under one lock), so a line's end read here means the log has everything before it.
        Reading the log at once lost the line's tail once ("…cannot mount /dev/vdz", without
        "; dropping to a shell"). A line that never ends is left at the deadline."""
        with contextlib.suppress(BoardBootError):
            self.expect(r"\n", timeout, "the end of the console's line")

    def shell(self, command: str, timeout: float = 60) -> str:
        """Run one command in the logged-in console shell; return its output."""
        self.send(f"{command}; echo EVB-END-$((40+2))\r")
        match = self.expect(r"(?s)\n(.*?)EVB-END-42", timeout, f"end of `{command}`")
        self.expect(re.escape(PROMPT), timeout, "prompt")
        return ANSI_ESCAPE.sub("", match.group(1)).replace("\r", "")

    # -- bring-up -------------------------------------------------------------------------------

    def boot(self, boot_timeout: float = 480, network_timeout: float = 90) -> None:
        """Start QEMU, log in on the console, check the network, log out again."""
        self.start()
        self.open_console()
        found = self.expect(BOOT_OUTCOME, boot_timeout, "login prompt")
        if found.group(0).startswith("evboard-initramfs"):
            self._read_to_line_end(timeout=30)
            self.fail(f"no root file system ({found.group(0)})")
        self.send("root\r")
        self.expect(r"Password: ?", 60, "password prompt")
        self.send(f"{ROOT_PASSWORD}\r")
        self.expect(r"[#$] ", 120, "shell prompt after login")
        # Quoted apart, so the echo of this line does not itself read as the prompt.
        self.send(f"PS1='{PROMPT[:4]}''{PROMPT[4:]}'\r")
        self.expect(re.escape(PROMPT), 60, "the test prompt")
        deadline = time.monotonic() + network_timeout
        addresses = ""
        while time.monotonic() < deadline and GUEST_ADDRESS not in addresses:
            addresses = self.shell("ip -4 -o addr show dev eth0")
            if GUEST_ADDRESS not in addresses:
                time.sleep(2)
        if GUEST_ADDRESS not in addresses:
            self.fail(f"the guest has no {GUEST_ADDRESS} on eth0 (network down): {addresses!r}")
        state = ""
        while time.monotonic() < deadline and state.strip() != "active":
            state = self.shell("systemctl is-active ssh.service")
            if state.strip() != "active":
                time.sleep(2)
        if state.strip() != "active":
            self.fail(f"sshd is not running in the guest: {state.strip()!r}")
        # Leave the console at a login prompt, as a real board's would be.
        self.send("exit\r")
        self.expect(r"login: ", 60, "login prompt after logout")
        self.close_console()
        self.wait_for_ssh_banner(deadline)

    def wait_for_ssh_banner(self, deadline: float) -> None:
        """The forwarded port answers with the guest sshd's banner."""
        banner = b""
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.ssh_port), timeout=10) as conn:
                    conn.settimeout(max(1.0, deadline - time.monotonic()))
                    banner = conn.recv(64)
                if banner.startswith(b"SSH-2.0-"):
                    return
            except OSError:
                pass
            time.sleep(1)
        self.fail(f"no SSH banner on 127.0.0.1:{self.ssh_port} (got {banner!r})")
