"""A board in a labgrid place: `labgrid://PLACE` or `labgrid://?tags=board=am62x,site=lab1`.

The place is taken through the lab's own coordinator (_labgrid_client.py drives
`labgrid-client`): evbench reserves it under an owner of this job's own, keeps the
reservation alive while it waits (showing how long), acquires it, and releases it when
the board is closed, also after a failure or Ctrl-C. A place the user already holds is
used as it is and left held. The place's resources decide the transport, through the
existing boards: a `NetworkService` is the SSH board, a `NetworkSerialPort` (ser2net's
RFC 2217, started by the exporter on acquire) the serial board. An SSH board behind an
isolated exporter (or with LG_PROXY set) is reached through the exporter host, with an
SSH jump (boards/_ssh_jump.py), as labgrid's own client forwards through it. The
`labgrid://` scheme is declared here, on its parser (parse_labgrid_url; the URL itself
is read in _labgrid_address.py).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from evbench.boards._labgrid_address import LABGRID_SCHEME, LabgridUrl, read_labgrid_url
from evbench.boards._labgrid_client import (
    LabgridClient,
    Place,
    Resource,
    describe_holder,
    describe_reservation,
    job_identity,
)
from evbench.boards.base import (
    Board,
    BoardOptions,
    CommandResult,
    PipedCommand,
    RemoteBoard,
    StreamedCommand,
)
from evbench.boards.urls import scheme
from evbench_core.errors import ExitCode, PartialRun, UserError
from evbench_core.log_output import notice

if TYPE_CHECKING:
    from evbench.boards._ssh_jump import SshJump

#: How long a run waits for its place when the user gives no --place-timeout.
DEFAULT_PLACE_TIMEOUT = 600.0
#: How often the waiting state is shown (a terminal gets one updating line).
SHOW_EVERY = 15.0
SSH_CLASSES = ("NetworkService",)
SERIAL_CLASSES = ("NetworkSerialPort",)
#: labgrid's own variable: reach the exporter's resources through this host.
PROXY_VARIABLE = "LG_PROXY"
#: The power resources `labgrid-client power` drives (labgrid 26's client).
POWER_CLASSES = (
    "NetworkPowerPort",
    "NetworkUSBPowerPort",
    "NetworkSiSPMPowerPort",
    "PDUDaemonPort",
    "TasmotaPowerPort",
    "NetworkYKUSHPowerPort",
    "NetworkSysfsGPIO",
)
#: After a power cycle: how long the board may take to boot until its transport answers.
BOOT_TIMEOUT = 300.0
BOOT_RETRY_EVERY = 5.0
#: While reconnecting: how often the place is checked for its exporter.
CHECK_PLACE_EVERY = 30.0

log = logging.getLogger(__name__)


@scheme(
    LABGRID_SCHEME,
    "labgrid://PLACE[?coordinator=HOST:PORT&via=VIA&recover_after=S]",
    "labgrid://?tags=KEY=VALUE,...[&prio=N]",
    transport="labgrid",
    board="LabgridBoard",
    example="labgrid://am62x-1",
    power_switch=True,
)
def parse_labgrid_url(url: str) -> LabgridUrl:
    """Split a `labgrid://` URL into the place (or tag filter) and the coordinator
    (read_labgrid_url, in _labgrid_address.py)."""
    return read_labgrid_url(url)


class PlaceUnavailable(UserError):
    """No place could be had within the deadline (exit 2: nothing ran)."""

    exit_code = ExitCode.USAGE


class PlaceLost(PartialRun):
    """The exporter no longer serves the resource the board is reached by (exit 4: the
    run stopped early; it may go on on the board, out of reach)."""


def _show_waiting(what: str, waited: float, timeout: float) -> None:
    minutes, seconds = divmod(int(waited), 60)
    notice(f"waiting for {what}, {minutes} min {seconds:02d} s (gives up at {timeout:.0f} s)")


class LabgridBoard(RemoteBoard):
    """The board of a labgrid place, over the transport its resources name."""

    def __init__(
        self,
        url: str,
        accept_new_host_key: bool = False,
        place_timeout: float | None = None,
        power_cycle: bool = False,
    ) -> None:
        self.url = url
        self.address: LabgridUrl = parse_labgrid_url(url)
        self.place_timeout = DEFAULT_PLACE_TIMEOUT if place_timeout is None else place_timeout
        if not 0 < self.place_timeout < math.inf:  # nan too: a wait that never ends
            raise UserError(
                f"--place-timeout must be a number of seconds above 0, not {self.place_timeout}"
            )
        users = LabgridClient(self.address.coordinator)
        self._client = users
        self._token: str | None = None
        self._taken: str | None = None  # the place this job acquired, to release
        self._in_use: Resource | None = None  # the resource the transport goes through
        self._accept_new_host_key = accept_new_host_key
        self._silent_since: float | None = None  # when reconnecting first failed
        self._checked_at: float | None = None  # when the place was last checked
        self.recovered = False  # power-cycled once mid-run: never twice
        self.held_by_user = False
        self._holder_hint: str | None = None  # how to free a place someone else holds
        try:
            self.place_info = self._take_place(users)
            if power_cycle:
                self.power_cycle()
                self.inner: RemoteBoard = self._open_after_boot(accept_new_host_key)
            else:
                self.inner = self._open_transport(accept_new_host_key)
        except BaseException:  # Ctrl-C while waiting too: give back what was taken
            self._give_back()
            raise
        self.python = self.inner.python
        self.work_dir = self.inner.work_dir

    @classmethod
    def from_url(cls, url: str, options: BoardOptions) -> LabgridBoard:
        return cls(url, options.accept_new_host_key, options.place_timeout, options.power_cycle)

    # -- the place ------------------------------------------------------------
    @property
    def place(self) -> str:
        return self.place_info.name

    def _take_place(self, users: LabgridClient) -> Place:
        if self.address.place is not None:
            place = users.show(self.address.place)  # the place exists, the coordinator answers
            if place.acquired == users.owner:
                notice(
                    f"using place {place.name}, which you hold ({place.acquired}); it stays held"
                )
                self.held_by_user = True
                return place
            filters = [f"name={place.name}"]
            what = f"place {place.name}"
            hints = []
            if place.acquired:
                holder, how_to_free = describe_holder(place.name, place.acquired, users.coordinator)
                what += f" ({holder})"
                hints.append(how_to_free)
                notice(f"place {place.name} is {holder}; {how_to_free}")
            owner = users.reservation_owner(place.reservation) if place.reservation else None
            if place.reservation and owner:
                kept, how_to_end = describe_reservation(place.reservation, owner, users.coordinator)
                what += f" ({kept})"
                hints.append(how_to_end)
                notice(f"place {place.name} is {kept}; {how_to_end}")
            self._holder_hint = "; and ".join(hints) or None
        else:
            filters = [f"{key}={value}" for key, value in self.address.tags]
            wanted = dict(self.address.tags)
            tagged = [p for p in users.places() if wanted.items() <= p.tags.items()]
            if not tagged:
                raise UserError(
                    f"no labgrid place at {users.coordinator} is tagged {','.join(filters)}",
                    hint="see the places' tags with: labgrid-client -v places",
                )
            what = f"a place tagged {','.join(filters)}"
        # This job's own owner: another evbench job of the same user cannot share the place.
        self._client = LabgridClient(self.address.coordinator, job_identity())
        name = self._reserve(filters, what, known=self.address.place)
        self._client.call("acquire", place=f"+{self._token}")
        self._taken = name
        self._cancel_reservation()  # the place is ours now; the reservation has done its work
        notice(f"acquired place {name} as {self._client.owner}")
        return self._client.show(name)

    def _reserve(self, filters: list[str], what: str, known: str | None) -> str:
        """Wait (within the place timeout) until a reservation is allocated; the place's name."""
        client = self._client
        self._token = client.reserve(filters, self.address.prio)
        started = time.monotonic()
        shown = started
        waiter = client.wait_process(self._token)
        try:
            while waiter.poll() is None:
                now = time.monotonic()
                if now - started > self.place_timeout:
                    raise PlaceUnavailable(
                        f"gave up waiting for {what} after {self.place_timeout:.0f} s",
                        hint=self._holder_hint
                        or "try later, raise --place-timeout, or see who holds it: "
                        "labgrid-client who",
                    )
                if now - shown >= SHOW_EVERY:
                    shown = now
                    _show_waiting(what, now - started, self.place_timeout)
                time.sleep(0.2)
            if waiter.returncode != 0:
                stderr = waiter.stderr.read().decode(errors="replace") if waiter.stderr else ""
                client.raise_failure(["wait", self._token], stderr)
        finally:
            if waiter.poll() is None:
                waiter.kill()
            waiter.wait(timeout=10)
            if waiter.stderr:
                waiter.stderr.close()
        name = known or client.allocation(self._token)  # a tag filter: which place it got
        if name is None:
            raise UserError("the labgrid reservation ended without a place")
        return name

    def _cancel_reservation(self) -> None:
        if self._token is not None:
            token, self._token = self._token, None
            try:
                self._client.call("cancel-reservation", token)
            except UserError as error:  # it expires by itself within about a minute
                log.warning("%s", error)

    def _give_back(self) -> None:
        """Release what this job took (never a place the user held)."""
        self._cancel_reservation()
        if self._taken is not None:
            name, self._taken = self._taken, None
            try:
                self._client.call("release", place=name)
                notice(f"released place {name}")
            except UserError as error:
                log.warning("place not released: %s", error)

    # -- power ------------------------------------------------------------------
    def power_cycle(self) -> None:
        """Switch the board off and on through the place's power resource."""
        power = self.resources(POWER_CLASSES)
        if not power:
            found = ", ".join(r.cls for r in self.place_info.resources) or "none"
            raise UserError(
                f"place {self.place} has no power resource: --power-cycle cannot work there",
                hint=f"its resources: {found}; add a NetworkPowerPort to its exporter",
            )
        notice(f"power-cycling place {self.place} ({power[0].cls})")
        self._client.call("power", "cycle", place=self.place)

    def _open_after_boot(self, accept_new_host_key: bool) -> RemoteBoard:
        """The transport once the board answers again after its power cycle."""
        from evbench.boards.base import ConnectionLost

        deadline = time.monotonic() + BOOT_TIMEOUT
        while True:
            try:
                return self._open_transport(accept_new_host_key)
            except ConnectionLost:
                if time.monotonic() > deadline:
                    raise
                time.sleep(BOOT_RETRY_EVERY)

    # -- the transport ----------------------------------------------------------
    def resources(self, classes: Sequence[str]) -> list[Resource]:
        return [r for r in self.place_info.resources if r.cls in classes]

    def _open_transport(self, accept_new_host_key: bool) -> RemoteBoard:
        address = self.address
        options = {"python": address.python, "dir": address.work_dir}
        services = self.resources(SSH_CLASSES)
        consoles = self.resources(SERIAL_CLASSES)
        if services and address.via != "serial":
            self._in_use = services[0]
            params = services[0].params
            jump = self._jump_for(services[0], accept_new_host_key)
            user = f"{quote(str(params['username']))}@" if params.get("username") else ""
            port = f":{params['port']}" if params.get("port") else ""
            host = str(params["address"])
            host = f"[{host}]" if ":" in host else host
            from evbench.boards.ssh import SshBoard

            return SshBoard(
                f"ssh://{user}{host}{port}?{urlencode(options, quote_via=quote)}",
                accept_new_host_key=accept_new_host_key,
                jump=jump,
            )
        if consoles and address.via != "ssh":
            self._in_use = consoles[0]
            params = consoles[0].params
            if self._proxy_of(consoles[0]):
                raise UserError(
                    f"place {self.place}: the serial port {consoles[0].path} is behind an "
                    "isolated exporter; evbench reaches only SSH boards through the exporter",
                    hint="export a NetworkService for the board too, or unset LG_PROXY",
                )
            if not params.get("port"):
                raise UserError(
                    f"place {self.place}: the serial port {consoles[0].path} has no network port",
                    hint="is ser2net installed on the exporter host?",
                )
            from evbench.boards.serial import SerialBoard

            speed = params.get("speed") or 115200
            query = urlencode({**options, "user": address.user, "baud": speed}, quote_via=quote)
            return SerialBoard(f"rfc2217://{params['host']}:{params['port']}?{query}")
        found = ", ".join(f"{r.cls} ({r.path})" for r in self.place_info.resources) or "none"
        raise UserError(
            f"place {self.place} has no NetworkService or NetworkSerialPort"
            + (f" for via={address.via}" if address.via else ""),
            hint=f"its resources: {found}",
        )

    @staticmethod
    def _proxy_of(resource: Resource) -> str | None:
        """The host to jump through: LG_PROXY when set (labgrid forces a proxy with it;
        evbench lets it name the exporter host too, whose own name the lab PC may not
        resolve), else the exporter's proxy when its resources require one."""
        return os.environ.get(PROXY_VARIABLE) or resource.proxy

    def _jump_for(self, resource: Resource, accept_new_host_key: bool) -> SshJump | None:
        from evbench.boards._ssh_jump import SshJump

        proxy = self._proxy_of(resource)
        if proxy is None:
            return None
        jump = SshJump(proxy, accept_new_host_key)
        notice(f"place {self.place}: reaching {resource.path} through the jump host {jump}")
        return jump

    def lab_record(self) -> dict[str, Any]:
        """The manifest's `lab` (evbench_agent.integrations.lab_record): place, exporters,
        resources, tags, and how the board was reached."""
        return {
            "coordinator": self._client.coordinator,
            "place": self.place,
            "tags": self.place_info.tags,
            "exporters": sorted({r.exporter for r in self.place_info.resources}),
            "resources": [r.public() for r in self.place_info.resources],
            "transport": self.inner.url,
            "jump": str(jump) if (jump := getattr(self.inner, "jump", None)) else None,
            "owner": self.place_info.acquired or self._client.owner,
            "held_by_user": self.held_by_user,
        }

    # -- the Board protocol, by the transport's board -----------------------------
    @property
    def transcript_path(self) -> Path | None:
        return self.inner.transcript_path

    def run(self, argv: Sequence[str], timeout: float, stdin: bytes | None = None) -> CommandResult:
        return self.inner.run(argv, timeout, stdin)

    def stream(self, argv: Sequence[str]) -> StreamedCommand:
        return self.inner.stream(argv)

    def put(self, local: Path, remote: str) -> None:
        self.inner.put(local, remote)

    def get(self, remote: str, local: Path) -> None:
        self.inner.get(remote, local)

    def agent_command(self) -> list[str]:
        return self.inner.agent_command()

    def pipe(self, argv: Sequence[str]) -> PipedCommand:
        return self.inner.pipe(argv)

    def network_addresses(self) -> tuple[str, str]:
        return self.inner.network_addresses()

    def reconnect(self) -> None:
        """Open the transport again; a board silent for `recover_after` seconds is
        power-cycled (once) through the place's power resource and waited for."""
        from evbench.boards.base import ConnectionLost

        now = time.monotonic()
        if self._checked_at is None or now - self._checked_at >= CHECK_PLACE_EVERY:
            self._checked_at = now  # each check is a labgrid-client call: seconds
            self._check_place()
        try:
            self.inner.reconnect()
        except ConnectionLost:
            now = time.monotonic()
            self._silent_since = self._silent_since or now
            silent = now - self._silent_since
            after = self.address.recover_after
            if self.recovered or not after or silent < after or not self.resources(POWER_CLASSES):
                raise
            self.recovered = True
            notice(f"place {self.place}: the board has not answered for {silent:.0f} s; recovering")
            self.power_cycle()
            self.inner.close()
            self.inner = self._open_after_boot(self._accept_new_host_key)
        self._silent_since = self._checked_at = None

    def _check_place(self) -> None:
        """Before reconnecting: is the board's resource still served by its exporter?

        A dead exporter (its host down, the service killed) takes its ser2net, its
        proxy, and the coordinator's record of its resources with it: waiting the whole
        reconnect deadline for it would only delay the verdict. Anything less certain
        (the coordinator slow or away) is no verdict: reconnecting goes on."""
        used = self._in_use
        if used is None:
            return
        try:
            place = self._client.show(self.place)
        except UserError as error:
            log.warning("place %s not checked: %s", self.place, error)
            return
        now = next((r for r in place.resources if r.path == used.path), None)
        if now is None or not now.available:
            raise PlaceLost(
                f"place {self.place}: exporter {used.exporter} no longer serves {used.path} "
                f"({'gone' if now is None else 'unavailable'}); the run stopped early",
                hint="check the exporter (labgrid-client -v resources); the run may go on "
                "on the board: collect it with evbench fetch once the exporter is back",
            )

    def save_transcript(self, directory: Path) -> Path | None:
        return self.inner.save_transcript(directory)

    def close(self) -> None:
        try:
            inner: Board | None = getattr(self, "inner", None)
            if inner is not None:
                inner.close()
        finally:
            self._give_back()
