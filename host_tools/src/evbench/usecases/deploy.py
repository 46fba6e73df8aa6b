"""Put the agent on a board: one self-contained zipapp, no pip, no network on the board.

The zipapp holds the evbench_agent package and the core it imports,
evbench_core (both pure Python, the agent's one wheel); the board's own
python3 supplies protobuf and psutil. It is built reproducibly (sorted
entries, fixed timestamps), so its SHA-256 says whether the board's copy is
the host's. An agent baked into the image (`evbench-agent` on PATH) is used
when compatible and left alone unless --force.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import shlex
import zipfile
from dataclasses import dataclass
from pathlib import Path

import evbench_agent
import evbench_core
from evbench.boards.base import RemoteBoard
from evbench_agent.native import runtimes
from evbench_core import results
from evbench_core.errors import UserError

log = logging.getLogger(__name__)

IMAGE_AGENT = "evbench-agent"
COMMAND_TIMEOUT = 60.0
MIN_PYTHON = (3, 10)
#: Zip entries get this date, so the same sources give the same bytes.
ZIP_DATE = (2020, 1, 1, 0, 0, 0)

#: The zipapp's entry point. Python compiles what it imports from a zip at every start
#: (zipimport writes no bytecode), and on a board each worker of a run paid that again.
#: So the first start unpacks the archive once, beside it, into `evbench-agent-TAG/`
#: (TAG: the digest of the archive's files), where Python keeps the bytecode it
#: compiles; later starts, and the workers (`python -m evbench_agent`, the package found
#: through PYTHONPATH), import from there. Each file is flushed to disk in a staging
#: directory, which gets the marker file (runtimes.UNPACKED_MARKER) last and is then
#: renamed in place: no start uses half a copy, even after a power cut. That first start
#: removes the copies of other archives (the agents deploy replaced). Where nothing can
#: be written beside the archive, the agent runs from the archive itself.
ZIPAPP_MAIN = """\
import os, sys
UNPACKED = "evbench-agent-@TAG@"
def unpacked(archive):
    home = os.path.dirname(os.path.abspath(archive))
    target = os.path.join(home, UNPACKED)
    if os.path.isfile(os.path.join(target, "@MARKER@")):
        return target
    import shutil, zipfile
    staging = f"{target}.{os.getpid()}.tmp"
    try:
        with zipfile.ZipFile(archive) as source:
            for name in source.namelist():
                parts = name.split("/")
                if not all(parts) or "." in parts or ".." in parts:
                    raise ValueError(name)  # never write outside the copy
                path = os.path.join(staging, *parts)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as out:
                    out.write(source.read(name))
                    out.flush()
                    os.fsync(out.fileno())
        with open(os.path.join(staging, "@MARKER@"), "w") as out:
            out.write(UNPACKED + "\\n")
            out.flush()
            os.fsync(out.fileno())
        os.rename(staging, target)
    except (OSError, ValueError, zipfile.BadZipFile):
        shutil.rmtree(staging, ignore_errors=True)
        # Another start may have renamed its copy in place first.
        return target if os.path.isfile(os.path.join(target, "@MARKER@")) else archive
    for name in os.listdir(home):  # not this copy, nor a start's staging of it
        if name.startswith("evbench-agent-") and not name.startswith(UNPACKED):
            shutil.rmtree(os.path.join(home, name), ignore_errors=True)
    return target
sys.path[0] = unpacked(sys.path[0])
os.environ["PYTHONPATH"] = os.pathsep.join(
    [sys.path[0]] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
from evbench_agent.cli import main
main()
"""

#: Run by the board's python3: what it has, and the SHA-256 of a file if it exists.
PROBE = """\
import hashlib, json, os, sys
def version(name):
    try:
        module = __import__(name, fromlist=["__version__"])
    except ImportError:
        return None
    return getattr(module, "__version__", "unknown")
digest = None
if os.path.isfile(sys.argv[1]):
    with open(sys.argv[1], "rb") as stream:
        digest = hashlib.sha256(stream.read()).hexdigest()
print(json.dumps({"python": list(sys.version_info[:3]), "protobuf": version("google.protobuf"),
                  "psutil": version("psutil"), "zipapp_sha256": digest}))
"""

#: Run by the board's python3: check an upload by hash, then move it in place atomically.
INSTALL = """\
import hashlib, os, sys
new, final, expected = sys.argv[1:4]
with open(new, "rb") as stream:
    digest = hashlib.sha256(stream.read()).hexdigest()
if digest != expected:
    os.unlink(new)
    sys.exit("checksum mismatch: " + digest)
os.replace(new, final)
"""

#: Run by the board's python3: make the agent's directory, or say in one line why not.
MAKE_DIRECTORY = """\
import os, sys
try:
    os.makedirs(sys.argv[1], exist_ok=True)
except OSError as error:
    sys.exit(error.strerror or str(error))
"""


@dataclass(frozen=True)
class AgentInstall:
    """The agent a board runs: how to start it, its versions, and where it came from."""

    command: tuple[str, ...]
    version: str
    results_format: str  # MAJOR.MINOR (an older agent's integer N as N)
    source: str  # "image" or "deployed"
    action: str  # what ensure_agent did: "installed", "up to date" or "left alone"


def _entry(name: str) -> zipfile.ZipInfo:
    """A zipapp entry with a fixed date, deflated (a ZipInfo's own default is stored: the
    archive's compression does not apply to it). A third of the bytes over a console."""
    info = zipfile.ZipInfo(name, ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def build_zipapp() -> bytes:
    """The agent's packages (the agent and its core) as one executable zip archive
    (reproducible bytes)."""
    packages = [
        Path(evbench_agent.__file__).resolve().parent,
        Path(evbench_core.__file__).resolve().parent,
    ]
    # Data files too (the agent's schemas).
    files = sorted(
        (path.relative_to(package.parent).as_posix(), path)
        for package in packages
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )
    entries = [(name, path.read_bytes()) for name, path in files]
    digest = hashlib.sha256()
    for name, data in entries:
        digest.update(b"%s\0%d\0" % (name.encode(), len(data)) + data)
    buffer = io.BytesIO()
    buffer.write(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as archive:
        main = ZIPAPP_MAIN.replace("@TAG@", digest.hexdigest()[:16])
        main = main.replace("@MARKER@", runtimes.UNPACKED_MARKER)
        archive.writestr(_entry("__main__.py"), main)
        for name, data in entries:
            archive.writestr(_entry(name), data)
    return buffer.getvalue()


def probe(board: RemoteBoard) -> dict:
    """The board's Python, protobuf and psutil; refuse a board that cannot run the agent."""
    result = board.run([board.python, "-c", PROBE, board.zipapp_path], COMMAND_TIMEOUT)
    if result.returncode == 127:
        raise UserError(
            f"{board.url} has no {board.python}",
            hint="install python3 (3.10 or newer) on the board, or name it with ?python=PATH",
        )
    try:
        found = json.loads(result.stdout)
    except ValueError:
        message = result.stderr.decode(errors="replace").strip().splitlines()[-1:]
        raise UserError(f"{board.python} on {board.url} failed: {' '.join(message)}") from None
    if tuple(found["python"][:2]) < MIN_PYTHON:
        raise UserError(
            f"{board.url} has Python {'.'.join(map(str, found['python']))}; the agent needs 3.10+",
            hint="install a newer python3 on the board, or name it with ?python=PATH",
        )
    for module, package in (("protobuf", "python3-protobuf"), ("psutil", "python3-psutil")):
        if found[module] is None:
            raise UserError(
                f"{board.python} on {board.url} has no {module}",
                hint=f"install {package} on the board (or add it to the image)",
            )
    return found


def _agent_info(board: RemoteBoard, command: list[str]) -> dict | None:
    result = board.run([*command, "info", "--json"], COMMAND_TIMEOUT)
    if result.returncode != 0:
        return None
    try:
        return json.loads(result.stdout)
    except ValueError:
        return None


def compatible(info: dict) -> bool:
    """Same results format the host reads, and the same agent release (major.minor)."""
    release = evbench_agent.__version__.split(".")[:2]
    return (
        results.readable(info.get("results_format"))
        and str(info.get("agent", "")).split(".")[:2] == release
    )


def _install(info: dict, command: list[str], source: str, action: str) -> AgentInstall:
    version, results_format = str(info["agent"]), str(info["results_format"])
    return AgentInstall(tuple(command), version, results_format, source, action)


def make_directory(board: RemoteBoard, directory: str) -> None:
    """Create `directory` on the board. Its failure (permission denied) is the cause to
    report: the copy into it that follows would only say "no such file"."""
    made = board.run([board.python, "-c", MAKE_DIRECTORY, directory], COMMAND_TIMEOUT)
    if made.returncode != 0:
        said = made.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise UserError(
            f"cannot create {directory} on {board.url}: {said[0]}",
            hint="check that the login user may write there and the board's free space "
            "(df), or give another directory with dir=PATH",
        )


def upload_zipapp(board: RemoteBoard, archive: bytes, staging: Path) -> None:
    """Copy the zipapp over, check it by SHA-256 on the board, move it in place."""
    final = board.zipapp_path
    new = f"{final}.new"
    make_directory(board, final.rsplit("/", 1)[0])
    local = staging / "evbench-agent.pyz"
    local.write_bytes(archive)
    log.info("deploying the agent (%d bytes) to %s on %s", len(archive), final, board.url)
    board.put(local, new)
    digest = hashlib.sha256(archive).hexdigest()
    result = board.run([board.python, "-c", INSTALL, new, final, digest], COMMAND_TIMEOUT)
    if result.returncode != 0:
        raise UserError(
            f"the agent copied to {board.url} is damaged "
            f"({result.stderr.decode(errors='replace').strip()})",
            hint="check the board's free space (df), then deploy again",
        )


def ensure_agent(board: RemoteBoard, staging: Path, force: bool = False) -> AgentInstall:
    """The agent to use on `board`, deploying the zipapp when it is missing or stale."""
    found = probe(board)
    log.debug("the board has: %s", found)
    archive = build_zipapp()
    digest = hashlib.sha256(archive).hexdigest()
    log.info("checking the agent on %s (this host's is %s)", board.url, digest[:12])
    zipapp_command = board.agent_command()
    if found["zipapp_sha256"] == digest and not force:
        # The board's archive is this host's, byte for byte: its agent and results format
        # are this host's. Asking it would start the agent for nothing (seconds on a board).
        own = {"agent": evbench_agent.__version__, "results_format": results.VERSION}
        return _install(own, zipapp_command, "deployed", "up to date")
    image = _agent_info(board, [IMAGE_AGENT])
    if image is not None and not force:
        if compatible(image):
            return _install(image, [IMAGE_AGENT], "image", "left alone")
        raise UserError(
            f"the agent in {board.url}'s image is {image.get('agent')} (results format "
            f"{image.get('results_format')}); this host needs {evbench_agent.__version__} "
            f"(format {results.VERSION})",
            hint=f"run `evbench deploy --board {shlex.quote(board.url)} --force` to install "
            "a matching agent",
        )
    upload_zipapp(board, archive, staging)
    info = _agent_info(board, zipapp_command)
    if info is None or not compatible(info):
        raise UserError(f"the agent deployed to {board.url} does not start with {board.python}")
    log.info("deployed agent %s to %s, checked by SHA-256", info["agent"], board.url)
    return _install(info, zipapp_command, "deployed", "installed")
