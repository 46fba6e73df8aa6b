"""A real OpenSSH server on a free loopback port with a throwaway host key and one authorized
client key; a drop kills the per-connection sshd processes."""

from __future__ import annotations

import contextlib
import getpass
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil

#: sshd needs this directory for privilege separation (Debian creates it at boot).
PRIVSEP_DIR = Path("/run/sshd")
START_TIMEOUT = 15.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def keygen(ssh_keygen: str, path: Path, comment: str) -> Path:
    subprocess.run(
        [ssh_keygen, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return path


class Sshd:
    """One sshd process (`sshd -D`): start, drop its connections, stop."""

    def __init__(self, sshd: str, ssh_keygen: str, directory: Path) -> None:
        self.sshd = sshd
        self.ssh_keygen = ssh_keygen
        self.directory = directory
        self.user = getpass.getuser()
        self.port = free_port()
        self.host_key = keygen(ssh_keygen, directory / "host_ed25519", "evbench-test-host")
        self.client_key = keygen(ssh_keygen, directory / "client_ed25519", "evbench-test-client")
        self.log = directory / "sshd.log"
        #: On the sessions' PATH first: where a test installs an agent "in the image".
        self.image_bin = directory / "image-bin"
        self.image_bin.mkdir()
        self.process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    def another(self, directory: Path) -> Sshd:
        """Another server (a jump host, a board of its own), started, for this client key."""
        other = Sshd(self.sshd, self.ssh_keygen, directory)
        key = "client_ed25519.pub"
        (other.directory / key).write_text((self.directory / key).read_text())
        other.start()
        return other

    def client_home(self, home: Path) -> Path:
        """`home` as a HOME whose ~/.ssh holds the client key and trusts this server's host key."""
        dot_ssh = home / ".ssh"
        dot_ssh.mkdir(parents=True, mode=0o700)
        key = dot_ssh / "id_ed25519"
        key.write_bytes(self.client_key.read_bytes())
        key.chmod(0o600)
        (dot_ssh / "known_hosts").write_text(self.host_key_line())
        return home

    def host_key_line(self) -> str:
        """The known_hosts line that trusts this server's host key."""
        key_type, key_data = (self.directory / "host_ed25519.pub").read_text().split()[:2]
        return f"[127.0.0.1]:{self.port} {key_type} {key_data}\n"

    def _write_config(self) -> Path:
        authorized = self.directory / "authorized_keys"
        authorized.write_text((self.directory / "client_ed25519.pub").read_text())
        config = self.directory / "sshd_config"
        config.write_text(
            f"Port {self.port}\n"
            "ListenAddress 127.0.0.1\n"
            f"HostKey {self.host_key}\n"
            f"PidFile {self.directory / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {authorized}\n"
            # The test user, and the throwaway users tests create (evb...) for passwords.
            f"AllowUsers {self.user} evb*\n"
            # The key files live in a pytest temporary directory, not a home.
            "StrictModes no\n"
            "UsePAM no\n"
            "PasswordAuthentication yes\n"
            "KbdInteractiveAuthentication no\n"
            "PermitRootLogin prohibit-password\n"
            "MaxStartups 50\n"
            "LogLevel VERBOSE\n"
            "Subsystem sftp internal-sftp\n"
            f"SetEnv PATH={self.image_bin}:/usr/local/bin:/usr/bin:/bin\n"
        )
        return config

    def start(self) -> None:
        if os.geteuid() == 0:
            PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        config = self._write_config()
        self.process = subprocess.Popen(
            [self.sshd, "-D", "-f", str(config), "-E", str(self.log)],
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sshd exited with {self.process.returncode}: {self.log_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen within {START_TIMEOUT} s: {self.log_text()}")

    def connection_processes(self) -> list[psutil.Process]:
        """The listener's sshd children (their commands find out from the closed pipes)."""
        if self.process is None:
            return []
        children = psutil.Process(self.process.pid).children(recursive=True)
        return [child for child in children if _name(child) == "sshd"]

    def drop_connections(self) -> int:
        """Kill every connection's sshd process, as a pulled cable would end it."""
        victims = self.connection_processes()
        for process in victims:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.send_signal(signal.SIGKILL)
        psutil.wait_procs(victims, timeout=5)
        return len(victims)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            # Held first: before its exit it would still accept a reconnect, whose sshd
            # outlives it (the board would never go silent).
            self.process.send_signal(signal.SIGSTOP)
            self.drop_connections()
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


def _name(process: psutil.Process) -> str | None:
    """The process's name, or None when it ended after it was listed."""
    try:
        return process.name()
    except psutil.NoSuchProcess:
        return None
