"""Shared fixtures. Components tests need are real; when one is missing the
test fails under CI=true (CI must install it) and is skipped, with the reason,
on a developer's machine."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
AGENT_SRC = ROOT / "agent" / "src"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(condition: bool, what: str) -> None:
    """Fail under CI, skip elsewhere, when a real component the test needs is missing."""
    if condition:
        return
    message = f"{what} is missing (tests/setup-system.sh installs it)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


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
