"""The `labgrid-client` program, driven as a child process with a deadline on every call.

evbench never imports labgrid: labgrid's `pyserial-labgrid` installs the same top-level
`serial` package as pyserial, so labgrid lives in its own environment and evbench calls
its client (from PATH, or EVBENCH_LABGRID_CLIENT). Its Python session is not a stable
API; its printed output is read here and nowhere else.

Who holds a place is labgrid's "HOST/USER" owner, from LG_HOSTNAME and LG_USERNAME.
Each evbench job acquires under an owner of its own (`job_identity`), so two jobs of
the same user never share a place, and a place the user holds is told apart.
"""

from __future__ import annotations

import ast
import getpass
import logging
import os
import re
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from typing import Any

from evbench.boards.base import child_environment
from evbench_core.errors import UserError

log = logging.getLogger(__name__)

CLIENT_VARIABLE = "EVBENCH_LABGRID_CLIENT"
COORDINATOR_VARIABLE = "LG_COORDINATOR"
#: labgrid's own default when neither the URL nor LG_COORDINATOR names one.
DEFAULT_COORDINATOR = "127.0.0.1:20408"
#: One labgrid-client call (it connects to the coordinator each time: seconds on a loaded host).
CALL_TIMEOUT = 90.0
#: Output beyond this from one call is a fault, not a place listing.
MAX_OUTPUT = 4 << 20
#: Never handed to labgrid-client (nor the board password: child_environment): a user's
#: own reservation or place would take the place of the one evbench names.
PRIVATE_VARIABLES = ("LG_TOKEN", "LG_PLACE")
#: Stands for a reservation token of this job in its messages: with it, anyone may cancel
#: the reservation (and, under the job's owner name, acquire the place it is kept for).
TOKEN_SHOWN = "<token>"
#: A resource parameter whose name says it is a credential (NetworkService's `password`,
#: a driver's token or key): left out of what is recorded.
_SECRET_PARAMETER = re.compile(r"(?i)pass|secret|token|key|credential|auth")
_UNREACHABLE = ("Could not connect to coordinator", "coordinator is unavailable")
#: An acquired place lists its resources as "Acquired", a free one as "Matching".
_RESOURCE_HEADER = re.compile(r"^(?:Acquired|Matching) resource '([^']*)' \(([^)]*)\):$")


class CoordinatorUnreachable(UserError):
    """The labgrid coordinator does not answer at its address."""


@dataclass(frozen=True)
class Resource:
    """One resource a place matches, as the coordinator lists it."""

    name: str
    path: str  # exporter/group/class/name
    cls: str
    params: dict[str, Any]
    available: bool
    acquired: str | None

    @property
    def exporter(self) -> str:
        return self.path.split("/", 1)[0]

    @property
    def proxy(self) -> str | None:
        """The exporter host to reach it through, when the exporter says one is needed
        (`labgrid-exporter --isolated`: `extra: {proxy: HOST, proxy_required: true}`)."""
        extra = self.params.get("extra")
        if isinstance(extra, dict) and extra.get("proxy_required") and extra.get("proxy"):
            return str(extra["proxy"])
        return None

    def public(self) -> dict[str, Any]:
        """What the manifest records (and the spec file copied to the board): labgrid's
        proxy bookkeeping and every credential left out."""
        params = {
            key: value
            for key, value in self.params.items()
            if key != "extra" and not _SECRET_PARAMETER.search(key)
        }
        return {"name": self.name, "path": self.path, "class": self.cls, "params": params}


@dataclass(frozen=True)
class Place:
    name: str
    tags: dict[str, str]
    acquired: str | None  # "HOST/USER", or None when free
    resources: list[Resource] = field(default_factory=list)
    #: The token of the reservation the coordinator keeps the place for, if any.
    reservation: str | None = None


def _parse_tags(text: str) -> dict[str, str]:
    tags = {}
    for item in text.split(", "):
        key, equals, value = item.partition("=")
        if equals:
            tags[key.strip()] = value.strip()
    return tags


def parse_place(text: str) -> Place:
    """A place from `labgrid-client -p PLACE show` (its printed form, read leniently)."""
    lines = text.splitlines()
    head = re.match(r"^Place '([^']*)':$", lines[0]) if lines else None
    if head is None:
        raise UserError(f"labgrid-client show printed no place: {text[:200]!r}")
    tags: dict[str, str] = {}
    acquired: str | None = None
    reservation: str | None = None
    resources: list[Resource] = []
    index = 1
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if stripped.startswith("tags:"):
            tags = _parse_tags(stripped.removeprefix("tags:").strip())
        elif stripped.startswith("acquired:") and line.startswith("  ") and not resources:
            owner = stripped.removeprefix("acquired:").strip()
            acquired = None if owner in ("", "None") else owner
        elif stripped.startswith("reservation:") and line.startswith("  ") and not resources:
            reservation = stripped.removeprefix("reservation:").strip() or None
        header = _RESOURCE_HEADER.match(line)
        if header:
            body = []
            index += 1
            while index < len(lines) and lines[index].startswith("  "):
                body.append(lines[index])
                index += 1
            resources.append(_resource(header.group(1), header.group(2), "\n".join(body)))
            continue
        index += 1
    return Place(head.group(1), tags, acquired, resources, reservation)


def _resource(name: str, path: str, body: str) -> Resource:
    try:
        data = ast.literal_eval(body.strip())  # pprint of a dict of plain values
    except (ValueError, SyntaxError) as error:
        raise UserError(f"labgrid resource {path}: unreadable description ({error})") from None
    if not isinstance(data, dict):
        raise UserError(f"labgrid resource {path}: its description is not a mapping")
    return Resource(
        name=name,
        path=path,
        cls=str(data.get("cls", "")),
        params=dict(data.get("params") or {}),
        available=bool(data.get("avail")),
        acquired=data.get("acquired"),
    )


def _this_host() -> str:
    """The host part of this machine's labgrid owners (labgrid-client's own rule)."""
    return os.environ.get("LG_HOSTNAME") or socket.gethostname()


def user_identity() -> str:
    """The owner labgrid gives this user's own acquisitions: HOST/USER."""
    user = os.environ.get("LG_USERNAME") or getpass.getuser()
    return f"{_this_host()}/{user}"


def job_identity() -> tuple[str, str]:
    """(LG_HOSTNAME, LG_USERNAME) for one evbench job: the user, tagged with this process."""
    user = os.environ.get("LG_USERNAME") or getpass.getuser()
    return _this_host(), f"{user}+evbench-{os.getpid()}"


#: The owner `job_identity` gives: HOST/USER+evbench-PID.
_JOB_OWNER = re.compile(r"^(?P<host>[^/]+)/(?P<user>.+)\+evbench-(?P<pid>\d+)$")


def describe_holder(place: str, owner: str, coordinator: str) -> tuple[str, str]:
    """Who holds `place` and how to free it: (what, hint), for the waiting line and errors.

    An evbench job's owner names its host and process. When that process is gone from
    this host (killed with SIGKILL, or its machine rebooted) nobody will release the
    place: labgrid keeps it acquired until an administrator releases it.
    """
    free = f"labgrid-client -x {coordinator} -p {place} release --kick"
    match = _JOB_OWNER.match(owner)
    if match is None:
        return (
            f"acquired by {owner}",
            f"ask {owner} to release it, or, if nobody uses it, free it with: {free}",
        )
    host, pid = match.group("host"), int(match.group("pid"))
    job = f"evbench job {pid} of {match.group('user')} on {host}"
    if _gone_from_this_host(host, pid):
        return (
            f"acquired by {owner}, an {job} that no longer runs",
            f"that job was killed before it could release the place; free it with: {free}",
        )
    this_host = host == _this_host()
    return (
        f"acquired by {owner}, a running {job}" if this_host else f"acquired by {owner}, {job}",
        f"wait for it or stop it (kill {pid} on {host}: it releases the place); "
        f"if it is gone, free it with: {free}",
    )


def describe_reservation(token: str, owner: str, coordinator: str) -> tuple[str, str]:
    """The reservation a place is kept for, and how to end it: (what, hint).

    evbench reserves a place, acquires it, then cancels the reservation. A job killed
    between those calls leaves the reservation behind, and the coordinator keeps the
    place for it, released or not, until it expires: about a minute after its last
    renewal (labgrid 26). Any lab user may cancel a reservation by its token.
    """
    cancel = f"labgrid-client -x {coordinator} cancel-reservation {token}"
    what = f"reserved for {owner} (reservation {token})"
    match = _JOB_OWNER.match(owner)
    if match is not None and _gone_from_this_host(match.group("host"), int(match.group("pid"))):
        job = f"evbench job {match.group('pid')} of {match.group('user')} on {match.group('host')}"
        return (
            f"{what}, an {job} that no longer runs",
            "that job was killed before it could cancel its reservation, which keeps the "
            f"place for about a minute; end it now with: {cancel}",
        )
    return (what, f"its job takes the place next; if that job is gone, end it with: {cancel}")


def _gone_from_this_host(host: str, pid: int) -> bool:
    """Whether an evbench job's process is known to be gone: it ran here and has ended."""
    return host == _this_host() and not _process_exists(pid)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def find_client() -> str:
    given = os.environ.get(CLIENT_VARIABLE)
    path = given or shutil.which("labgrid-client")
    if not path or not os.access(path, os.X_OK):
        raise UserError(
            f"labgrid-client not found ({f'{CLIENT_VARIABLE}={given}' if given else 'PATH'})",
            hint=f"install labgrid in its own venv or pipx and put labgrid-client on PATH, "
            f"or set {CLIENT_VARIABLE} to it",
        )
    return path


class LabgridClient:
    """labgrid-client for one coordinator and one owner identity."""

    def __init__(self, coordinator: str | None, identity: tuple[str, str] | None = None) -> None:
        self.executable = find_client()
        self.coordinator = (
            coordinator or os.environ.get(COORDINATOR_VARIABLE) or DEFAULT_COORDINATOR
        )
        self.identity = identity  # None: the user's own
        self._tokens: set[str] = set()  # of the reservations this client made

    @property
    def owner(self) -> str:
        if self.identity is None:
            return user_identity()
        return f"{self.identity[0]}/{self.identity[1]}"

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in child_environment().items() if k not in PRIVATE_VARIABLES}
        env[COORDINATOR_VARIABLE] = self.coordinator
        if self.identity is not None:
            env["LG_HOSTNAME"], env["LG_USERNAME"] = self.identity
        return env

    def argv(self, *arguments: str, place: str | None = None) -> list[str]:
        where = ["-p", place] if place else []
        return [self.executable, "-x", self.coordinator, *where, *arguments]

    def call(self, *arguments: str, place: str | None = None, timeout: float = CALL_TIMEOUT) -> str:
        """Run one command; its standard output, or a UserError with labgrid's own reason."""
        argv = self.argv(*arguments, place=place)
        try:
            done = subprocess.run(
                argv,
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise UserError(
                self.shown(f"labgrid-client {' '.join(arguments)} did not end in {timeout:.0f} s"),
                hint=f"is the coordinator at {self.coordinator} overloaded?",
            ) from None
        stdout = done.stdout[:MAX_OUTPUT].decode(errors="replace")
        log.debug(
            "labgrid-client %s%s -> exit %d, %d bytes out",
            next((a for a in arguments if not a.startswith("-")), "?"),  # never a token
            f" on place {place}" if place and not place.startswith("+") else "",
            done.returncode,
            len(done.stdout),
        )
        if done.returncode != 0:
            self.raise_failure(arguments, done.stderr[-MAX_OUTPUT:].decode(errors="replace"))
        return stdout

    def raise_failure(self, arguments: tuple[str, ...] | list[str], stderr: str) -> None:
        if any(marker in stderr for marker in _UNREACHABLE):
            raise CoordinatorUnreachable(
                f"the labgrid coordinator at {self.coordinator} is not reachable",
                hint=f"start labgrid-coordinator there, or give ?coordinator=HOST:PORT "
                f"or {COORDINATOR_VARIABLE}",
            )
        reason = next(
            (
                line.split("Error:", 1)[1].strip()
                for line in reversed(stderr.splitlines())
                if "Error:" in line
            ),
            (stderr.strip().splitlines() or ["no reason given"])[-1],
        )
        # labgrid names the token in its own reasons too ("Reservation TOKEN does not exist").
        raise UserError(self.shown(f"labgrid-client {' '.join(arguments)}: {reason}"))

    def shown(self, text: str) -> str:
        """`text` with this client's reservation tokens as TOKEN_SHOWN, for a message."""
        for token in self._tokens:
            text = text.replace(token, TOKEN_SHOWN)
        return text

    def show(self, place: str) -> Place:
        return parse_place(self.call("show", place=place))

    def reserve(self, filters: list[str], prio: int) -> str:
        """A new reservation's token (`reserve --shell` prints `export LG_TOKEN=...`)."""
        text = self.call("reserve", "--shell", "--prio", str(prio), *filters)
        match = re.search(r"LG_TOKEN=([A-Za-z0-9]+)", text)
        if match is None:
            raise UserError(f"labgrid-client reserve printed no token: {text[:200]!r}")
        self._tokens.add(match.group(1))
        return match.group(1)

    def allocation(self, token: str) -> str | None:
        """The place a reservation was given, or None while it waits."""
        body = self._reservation(token)
        if body is None:
            raise UserError(
                self.shown(f"the labgrid reservation {token} has gone (expired or cancelled)")
            )
        if "allocations:" not in body:
            return None
        allocations = body.split("allocations:", 1)[1]
        allocated = re.search(r"^\s+main: (\S+)\s*$", allocations, flags=re.MULTILINE)
        return allocated.group(1) if allocated else None

    def reservation_owner(self, token: str) -> str | None:
        """Who made a reservation ("HOST/USER"), or None once it has gone."""
        body = self._reservation(token)
        owner = re.search(r"^\s+owner: (\S+)\s*$", body or "", flags=re.MULTILINE)
        return owner.group(1) if owner else None

    def _reservation(self, token: str) -> str | None:
        """The lines `labgrid-client reservations` prints for one reservation, if it exists."""
        block = re.search(
            rf"^Reservation '{re.escape(token)}':\n((?:  .*\n?)*)",
            self.call("reservations"),
            flags=re.MULTILINE,
        )
        return block.group(1) if block else None

    def places(self) -> list[Place]:
        """Every place with its tags (`labgrid-client -v places`)."""
        text = self.call("-v", "places")
        blocks = re.split(r"^(?=Place ')", text, flags=re.MULTILINE)
        return [parse_place(block) for block in blocks if block.startswith("Place '")]

    def wait_process(self, token: str) -> subprocess.Popen:
        """`labgrid-client wait TOKEN`: keeps the reservation alive until it is allocated."""
        return subprocess.Popen(
            self.argv("wait", token),
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
