"""A real, throw-away PostgreSQL server for the history tests (Debian's `postgresql`: initdb
and pg_ctl under /usr/lib/postgresql/VERSION/bin) on 127.0.0.1, a free port; the superuser
`evbench` has a random password (scram-sha-256). The server refuses root: under root the
cluster belongs to `nobody`, in a directory of its own under /tmp (pytest's are mode 0700).
"""

import contextlib
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from sshd import free_port

START_TIMEOUT_S = 60
USER = "evbench"


def find_bin() -> Path | None:
    """The newest Debian PostgreSQL bin directory that has initdb and pg_ctl."""
    found = Path("/usr/lib/postgresql").glob("*/bin/initdb")  # .../VERSION/bin/initdb
    newest = sorted(found, key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    return newest[-1].parent if newest else None


class Postgres:
    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.password = secrets.token_urlsafe(18)
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="evbench-pg-"))
        self.data = self.root / "data"
        self._databases = 0
        self.owner = pwd.getpwnam("nobody") if os.geteuid() == 0 else None

    def _run(self, *argv: str, timeout: float = START_TIMEOUT_S) -> None:
        owner = self.owner
        kwargs = {} if owner is None else {"user": owner.pw_uid, "group": owner.pw_gid}
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, cwd=self.root, check=False,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}, **kwargs,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")

    def start(self) -> None:
        password_file = self.root / "pw"
        password_file.write_text(self.password + "\n")
        if self.owner is not None:
            os.chown(self.root, self.owner.pw_uid, self.owner.pw_gid)
            os.chown(password_file, self.owner.pw_uid, self.owner.pw_gid)
        password_file.chmod(0o600)
        self._run(
            str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", USER,
            f"--pwfile={password_file}", "--auth=scram-sha-256", "--no-sync", "-E", "UTF8",
        )  # fmt: skip
        password_file.unlink()
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} "
            f"-c unix_socket_directories={self.root} -c fsync=off"
        )
        self._run(
            str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"),
            "-w", "-t", str(START_TIMEOUT_S), "-o", options, "start",
        )  # fmt: skip

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                      "-w", "stop")  # fmt: skip
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres", with_password: bool = False) -> str:
        secret = f":{self.password}" if with_password else ""
        return f"postgresql://{USER}{secret}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL (no password: PGPASSWORD carries it)."""
        import psycopg

        self._databases += 1
        name = f"history_{self._databases}"
        with psycopg.connect(self.url(with_password=True), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)
