"""Shared fixtures. The components tests need are real; when one is missing
the test fails (never skips): `make test` installs them all."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
AGENT_SRC = ROOT / "agent" / "src"


def require(condition: bool, what: str) -> None:
    """Fail, naming it, when a real component the test needs is missing."""
    if not condition:
        pytest.fail(f"{what} is missing (run `make test`, or tests/setup-system.sh, to install it)")


def require_command(name: str) -> str:
    path = shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/sbin/{name}") if os.access(p, os.X_OK)), None
    )
    require(path is not None, f"the command {name!r}")
    return path


@pytest.fixture
def agent_python() -> str:
    """The interpreter that runs the agent in these tests (the venv's)."""
    return sys.executable
