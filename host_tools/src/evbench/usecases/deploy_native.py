"""Put native codec harnesses on a board: `evbench deploy --native DIR`.

Each `evbench-native-*` executable of DIR (a build for the board's
architecture: docs/native-codecs.md shows the aarch64 cross-build), and the C
link responder `evbench-link-responder` when DIR has it, is copied to
libexec/evbench-native beside the deployed agent's zipapp, where the agent
looks (evbench_agent.native.runtimes), checked there by SHA-256 and moved in
place atomically, as the agent itself is deployed.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from evbench.boards.base import RemoteBoard
from evbench.usecases.deploy import COMMAND_TIMEOUT, INSTALL
from evbench_agent.native import runtimes
from evbench_core.errors import UserError

log = logging.getLogger(__name__)

#: Run by the board's python3: make the directory, then mark an installed file executable.
MAKE_DIRECTORY = "import os, sys; os.makedirs(sys.argv[1], exist_ok=True)"
MAKE_EXECUTABLE = "import os, sys; os.chmod(sys.argv[1], 0o755)"
#: No harness is this large; a bigger file is not one.
MAX_HARNESS_BYTES = 64 << 20


def harnesses(directory: Path) -> list[Path]:
    """The harness executables of a build directory, and its C link responder if it has
    one; a clear error when it has neither."""
    names = {runtime.executable_name for runtime in runtimes.RUNTIMES.values()}
    found = sorted(p for p in directory.glob("evbench-native-*") if p.is_file())
    unknown = [p.name for p in found if p.name not in names]
    responder = directory / runtimes.RESPONDER
    found += [responder] if responder.is_file() else []
    if unknown or not found:
        raise UserError(
            f"{directory} holds no harness" if not found else f"unknown harness {unknown[0]}",
            hint="build native/ for the board first (docs/native-codecs.md)",
        )
    too_big = [p.name for p in found if p.stat().st_size > MAX_HARNESS_BYTES]
    if too_big:
        raise UserError(f"{too_big[0]} is over {MAX_HARNESS_BYTES >> 20} MiB: not a harness")
    return found


def deploy_harnesses(board: RemoteBoard, directory: Path) -> list[str]:
    """Copy every harness of `directory` (and its responder) to the board; the names
    installed."""
    found = harnesses(directory)
    target = f"{board.zipapp_path.rsplit('/', 1)[0]}/{runtimes.LIBEXEC.as_posix()}"
    board.run([board.python, "-c", MAKE_DIRECTORY, target], COMMAND_TIMEOUT)
    for path in found:
        final = f"{target}/{path.name}"
        board.put(path, f"{final}.new")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        result = board.run(
            [board.python, "-c", INSTALL, f"{final}.new", final, digest], COMMAND_TIMEOUT
        )
        if result.returncode != 0:
            raise UserError(
                f"{path.name} copied to {board.url} is damaged "
                f"({result.stderr.decode(errors='replace').strip()})",
                hint="check the board's free space (df), then deploy again",
            )
        board.run([board.python, "-c", MAKE_EXECUTABLE, final], COMMAND_TIMEOUT)
        log.info("deployed %s to %s", path.name, final)
    return [path.name for path in found]
