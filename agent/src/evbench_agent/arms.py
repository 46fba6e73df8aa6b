"""Arms: one run's codecs measured under two or more Python environments (`--arm`).

`--arm NAME=INTERPRETER_OR_VENV` names an environment on the board: a virtual
environment's directory (its bin/python), an interpreter's path, or a command on
PATH (python3.11). Every arm runs the same agent code: the arm's interpreter
imports this process's `evbench_agent` package (and its core, `evbench_core`)
through a directory holding only links to them (PYTHONPATH), so the arm's own
protobuf, codec libraries and Python are what differ, never the benchmark. The
arm's own site-packages stay out of the managing process and the managing
process's stay out of the arm.

Before the run writes anything, each arm is probed in its interpreter: its Python,
protobuf version and backend and codec library versions go into the manifest
(`arms`), and a codec the run asks for that an arm cannot import stops the run with
the arm's name. The codec suite (evbench_agent.suites.codec_arms) then measures.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import evbench_agent
import evbench_core
from evbench_agent.processes import private_environment
from evbench_core.errors import UserError

log = logging.getLogger(__name__)

#: An arm's name goes into codec labels ("protobuf@pb425"): short, no separators.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
#: Between a codec and its arm in a record's codec name.
SEPARATOR = "@"
MAX_ARMS = 8
#: Seconds an arm's interpreter may take to start and report its versions.
PROBE_TIMEOUT_S = 60.0
#: Oldest Python the agent supports.
OLDEST_PYTHON = (3, 10)

_PROBE = """
import json, platform, sys
import google.protobuf
import evbench_agent
from evbench_agent import codecs
wanted = json.loads(sys.argv[1])
def _imports(name):
    try:
        codecs.get(name)
        return True
    except Exception:
        return False
print(json.dumps({
    "python": platform.python_version(),
    "python_version_info": list(sys.version_info[:2]),
    "python_implementation": platform.python_implementation(),
    "prefix": sys.prefix,
    "protobuf": google.protobuf.__version__,
    "protobuf_backend": codecs.protobuf_backend(),
    "codecs": {name: codecs.CODECS[name].version() for name in codecs.installed()},
    "missing": [name for name in wanted if not _imports(name)],
    "agent_file": evbench_agent.__file__,
}))
"""


def label(codec: str, arm: str) -> str:
    """The codec's name in an arm's records: protobuf@pb425."""
    return f"{codec}{SEPARATOR}{arm}"


def parse(value: Any) -> dict[str, str]:
    """Arms from a spec: {name: interpreter}, or a list / comma list of NAME=PATH."""
    if isinstance(value, dict):
        pairs = list(value.items())
    else:
        if isinstance(value, str):
            value = [part for part in value.split(",") if part.strip()]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise UserError("spec key 'arms' must be NAME=INTERPRETER_OR_VENV entries")
        pairs = []
        for entry in value:
            name, sep, where = entry.partition("=")
            if not sep:
                raise UserError(
                    f"--arm {entry!r} has no '='", hint="give --arm NAME=INTERPRETER_OR_VENV"
                )
            pairs.append((name.strip(), where.strip()))
    arms: dict[str, str] = {}
    for name, where in pairs:
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise UserError(
                f"the arm name {name!r} is not usable",
                hint="1 to 32 letters, digits, '_', '.' or '-', starting with a letter or digit",
            )
        if not isinstance(where, str) or not where:
            raise UserError(f"the arm {name!r} names no interpreter or virtual environment")
        if name in arms:
            raise UserError(f"the arm name {name!r} is given twice")
        arms[name] = where
    if not 2 <= len(arms) <= MAX_ARMS:
        raise UserError(
            f"--arm compares environments: give 2 to {MAX_ARMS} arms, not {len(arms)}",
            hint="e.g. --arm old=/opt/venv-pb425 --arm new=/opt/venv",
        )
    return arms


#: What to do about an arm whose environment is not there (docs/running.md's example
#: names .venv-pb425, which `make setup` makes and `make run` does not).
MISSING_HINT = (
    "make it first (python3 -m venv DIR, then DIR/bin/pip install protobuf==VERSION psutil); "
    "in an evbench checkout, `make setup` makes the docs' .venv-pb425 (protobuf 4.25.8), "
    "which `make run` does not"
)


def interpreter(where: str) -> str:
    """The interpreter an arm names: a venv's bin/python, a path, or a command on PATH.

    Symbolic links are kept: a venv's python is a link to its base interpreter, and
    only through the link does it find the venv's site-packages.
    """
    path = Path(where).expanduser()
    if path.is_dir():
        for candidate in (path / "bin" / "python3", path / "bin" / "python"):
            if os.access(candidate, os.X_OK):
                return str(candidate.absolute())
        raise UserError(f"{where} is a directory without bin/python: not a virtual environment")
    if "/" not in where:
        found = shutil.which(where)
        if found:
            return found
        raise UserError(
            f"no interpreter or virtual environment {where!r} (here or on PATH)",
            hint=MISSING_HINT,
        )
    if path.is_file() and os.access(path, os.X_OK):
        return str(path.absolute())
    raise UserError(f"no interpreter or virtual environment at {where}", hint=MISSING_HINT)


_agent_path: list[str] = []


def agent_path() -> str:
    """A directory holding only links to this agent's packages (the agent and its core):
    the arms' PYTHONPATH.

    Not the directory the package sits in: that may be site-packages, whose protobuf
    would then shadow the arm's own.
    """
    if not _agent_path:
        directory = tempfile.mkdtemp(prefix="evbench-arm-agent-")
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        for package in (evbench_agent.__file__, evbench_core.__file__):
            source = Path(package).parent
            (Path(directory) / source.name).symlink_to(source)
        _agent_path.append(directory)
    return _agent_path[0]


def environment() -> dict[str, str]:
    """An arm process's environment: this one's, with the agent as its only extra path."""
    left_out = ("PYTHONPATH", "PYTHONHOME", *private_environment.PRIVATE_VARIABLES)
    env = {k: v for k, v in os.environ.items() if k not in left_out}
    env["PYTHONPATH"] = agent_path()
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the shared package is not the arm's to write into
    return env


def probe(name: str, python: str, codec_names: list[str]) -> dict[str, Any]:
    """The arm's versions, checked: a Python the agent supports, every codec the run needs."""
    try:
        done = subprocess.run(
            [python, "-c", _PROBE, json.dumps(codec_names)],
            env=environment(),
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise UserError(
            f"the arm {name!r} ({python}) did not answer in {PROBE_TIMEOUT_S:g} s"
        ) from None
    except OSError as error:
        raise UserError(f"the arm {name!r} cannot start {python}: {error.strerror}") from None
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise UserError(
            f"the arm {name!r} ({python}) cannot run the agent: {tail[0]}",
            hint="an arm needs Python 3.10 or newer with protobuf (and the codecs' libraries)",
        )
    try:
        found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise UserError(f"the arm {name!r} ({python}) answered no versions") from None
    if tuple(found.pop("python_version_info")) < OLDEST_PYTHON:
        raise UserError(f"the arm {name!r} runs Python {found['python']}: the agent needs 3.10+")
    agent_file = Path(found.pop("agent_file"))
    if agent_file.parent.resolve() != Path(evbench_agent.__file__).parent.resolve():
        raise UserError(f"the arm {name!r} imports another evbench_agent ({agent_file})")
    missing = found.pop("missing")
    if missing:
        raise UserError(
            f"the arm {name!r} ({python}) lacks the codec {', '.join(missing)}",
            hint="install it there, or leave it out with --codecs",
        )
    found["interpreter"] = python
    return found


def probe_all(arms: dict[str, str], codec_names: list[str]) -> dict[str, dict[str, Any]]:
    """Every arm's resolved interpreter and versions, by name (the manifest's `arms`)."""
    found = {}
    for name, where in arms.items():
        found[name] = probe(name, interpreter(where), codec_names)
        log.info("arm %s: %s", name, describe(name, found[name]))
    return found


def describe(name: str, arm: dict[str, Any]) -> str:
    """One line naming what an arm ran: Python, protobuf and its backend."""
    return (
        f"{name}: Python {arm.get('python', '?')}, protobuf {arm.get('protobuf', '?')} "
        f"({arm.get('protobuf_backend', '?')} backend)"
    )


__all__ = ["describe", "label"]
