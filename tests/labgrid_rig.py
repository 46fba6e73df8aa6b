"""A real labgrid lab on loopback: coordinator, exporters and places. labgrid 26 lives in
.venv-labgrid (its `pyserial-labgrid` would replace pyserial here)."""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import psutil
from conftest import require
from sshd import free_port

LABGRID_VENV = Path(__file__).resolve().parent.parent / ".venv-labgrid"
BIN = LABGRID_VENV / "bin"
CLIENT = BIN / "labgrid-client"
START_TIMEOUT = 90.0  # a loaded 2-core machine: each labgrid program takes seconds to start


def require_installed() -> None:
    programs = ("labgrid-coordinator", "labgrid-exporter", "labgrid-client")
    installed = all(os.access(BIN / name, os.X_OK) for name in programs)
    require(installed, "labgrid 26 in .venv-labgrid (tests/setup_envs.py)")


class Lab:
    """One coordinator, an exporter named `exporter` (with `exporter_options` such as
    --isolated) and places made with labgrid-client; labgrid required."""

    def __init__(self, directory: Path, resources: str, exporter_options: tuple = ()) -> None:
        require_installed()
        self.directory = directory
        self.port = free_port()
        self.coordinator = f"127.0.0.1:{self.port}"
        self._processes: list[subprocess.Popen] = []
        self._start("coordinator", [str(BIN / "labgrid-coordinator"), "--listen", self.coordinator])
        self._wait_for_log("coordinator", "Coordinator ready")
        self.exporters: dict[str, subprocess.Popen] = {}
        self.add_exporter("exporter", resources, exporter_options)

    def add_exporter(self, name: str, resources: str, options: tuple = ()) -> None:
        """Another exporter (its own process, log and config), ready when this returns."""
        config = self.directory / f"{name}.yaml"
        config.write_text(resources)
        exporter = [str(BIN / "labgrid-exporter"), "-c", self.coordinator, "-n", name]
        self._start(name, [*exporter, "--hostname", "127.0.0.1", *options, str(config)])
        self.exporters[name] = self._processes[-1]
        self._wait_for_log(name, "Exporter ready")

    def kill_exporter(self, name: str) -> None:
        """SIGKILL the exporter and what it started (ser2net): nothing of it serves any more."""
        process = psutil.Process(self.exporters[name].pid)
        victims = [process, *process.children(recursive=True)]
        for victim in victims:
            with contextlib.suppress(psutil.NoSuchProcess):
                victim.kill()
        psutil.wait_procs(victims, timeout=10)

    def _start(self, name: str, argv: list[str]) -> None:
        log = open(self.directory / f"{name}.log", "wb")  # noqa: SIM115 - lives with the process
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._processes.append(
            subprocess.Popen(argv, cwd=self.directory, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env)
        )  # fmt: skip
        log.close()

    def _wait_for_log(self, name: str, text: str) -> None:
        log = self.directory / f"{name}.log"
        deadline = time.monotonic() + START_TIMEOUT
        while text not in log.read_text(errors="replace"):
            if time.monotonic() > deadline or self._processes[-1].poll() is not None:
                self.stop()
                raise RuntimeError(f"labgrid {name} did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)

    def use(self, monkeypatch) -> None:
        """evbench's environment: .venv-labgrid's labgrid-client, this lab, as user nightly."""
        monkeypatch.setenv("EVBENCH_LABGRID_CLIENT", str(CLIENT))
        monkeypatch.setenv("LG_COORDINATOR", self.coordinator)
        monkeypatch.setenv("LG_USERNAME", "nightly")

    def client(self, *arguments: str, user: str = "lab-admin", check: bool = True):
        """labgrid-client as another lab user (LG_USERNAME), not as evbench."""
        env = {**os.environ, "LG_COORDINATOR": self.coordinator, "LG_USERNAME": user}
        env.pop("LG_TOKEN", None)
        argv = [str(CLIENT), *arguments]
        return subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=120, check=check
        )

    def make_place(
        self, name: str, group: str, tags: dict[str, str], exporter: str = "exporter"
    ) -> None:
        self.client("-p", name, "create")
        self.client("-p", name, "add-match", f"{exporter}/{group}/*")
        if tags:
            self.client("-p", name, "set-tags", *(f"{k}={v}" for k, v in tags.items()))

    def acquired_by(self, place: str) -> str | None:
        for line in self.client("-p", place, "show").stdout.splitlines():
            if line.startswith("  acquired:"):
                owner = line.split(":", 1)[1].strip()
                return None if owner == "None" else owner
        raise AssertionError(f"labgrid-client show {place} printed no 'acquired:' line")

    def reservations(self) -> str:
        return self.client("reservations").stdout

    def cancel_reservations_of(self, owner_suffix: str) -> list[str]:
        """Cancel, as the lab's administrator, the reservations whose owner ends with
        `owner_suffix` (a killed job leaves its own); their tokens."""
        found = re.findall(r"^Reservation '(\w+)':\n  owner: (\S+)$", self.reservations(), re.M)
        tokens = [token for token, owner in found if owner.endswith(owner_suffix)]
        for token in tokens:
            self.client("cancel-reservation", token, user="lab-admin")
        return tokens

    def stop(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)


#: The password am62x-a's NetworkService carries (labgrid's own SSH driver would log in
#: with it; evbench logs in with keys): it must reach no file and no message of a run.
SERVICE_PASSWORD = "LabSecret-sentinel-42"


def network_service(group: str, server, password: str | None = None) -> str:
    """Exporter resources: the group `group`, a NetworkService for the sshd `server`."""
    return (f"{group}:\n  NetworkService:\n    address: 127.0.0.1\n"
            f"    username: {server.user}\n    port: {server.port}\n"
            + (f"    password: '{password}'\n" if password else ""))  # fmt: skip


def power_port(switch: PowerSwitch) -> str:
    """A NetworkPowerPort for the group before it: outlet 1 of `switch` (model simplerest)."""
    return (f"  NetworkPowerPort:\n    model: simplerest\n    host: '{switch.url}'\n"
            "    index: '1'\n")  # fmt: skip


def two_place_lab(sshd, directory: Path, switch: PowerSwitch) -> Lab:
    """Places am62x-a (its NetworkService with a password) and am62x-b, each a
    NetworkService for the loopback sshd, and am62x-p, another whose NetworkPowerPort is
    `switch`."""
    groups = network_service("board-a", sshd, SERVICE_PASSWORD) + "".join(
        network_service(f"board-{unit}", sshd) for unit in "bp"
    )
    lab = Lab(directory, groups + power_port(switch))
    try:
        lab.make_place("am62x-a", "board-a", {"board": "am62x", "site": "loop", "unit": "a"})
        lab.make_place("am62x-b", "board-b", {"board": "am62x", "site": "loop", "unit": "b"})
        lab.make_place("am62x-p", "board-p", {"board": "am62x", "site": "power"})
    except BaseException:
        lab.stop()
        raise
    return lab


class PowerSwitch:
    """An HTTP power switch for labgrid's `simplerest` model: GET /outlet/INDEX/VALUE switches
    (recorded in `seen`), every GET answers the state; `on_switch("0" or "1")`, if given,
    is called before it answers."""

    def __init__(self, on_switch=None) -> None:
        switch = self
        self.seen: list[str] = []
        self.state = "1"

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")
                if len(parts) == 3 and parts[0] == "outlet" and parts[2] in ("0", "1"):
                    switch.seen.append(self.path)
                    switch.state = parts[2]
                    if on_switch is not None:
                        on_switch(parts[2])
                body = switch.state.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/outlet/{{index}}/{{value}}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
