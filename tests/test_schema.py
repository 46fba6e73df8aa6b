"""The committed protobuf modules are what protos/ generates with protoc 25.1."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import ROOT, require

SCHEMA = ROOT / "agent" / "src" / "evbench_agent" / "schema"
TOOLS_PYTHON = ROOT / ".venv-pb425" / "bin" / "python"
#: The generator's version line changes with protoc's patch level, nothing else.
VERSION_LINE = re.compile(r"^# Protobuf Python Version: .*$", re.MULTILINE)


def _normalized(path: Path) -> str:
    return VERSION_LINE.sub("", path.read_text())


def test_generated_modules_match_the_protos(tmp_path):
    require(TOOLS_PYTHON.exists(), "the .venv-pb425 environment (tests/setup_envs.py)")
    subprocess.run(
        [str(TOOLS_PYTHON), str(ROOT / "protos" / "generate.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    generated = sorted(p.name for p in tmp_path.glob("*_pb2.py"))
    committed = sorted(p.name for p in SCHEMA.glob("*_pb2.py"))
    assert generated == committed
    for name in generated:
        assert _normalized(tmp_path / name) == _normalized(SCHEMA / name), (
            f"{name} drifted from protos/: run `.venv-pb425/bin/python protos/generate.py`"
        )


def test_generated_code_comes_from_protoc_25():
    for path in SCHEMA.glob("*_pb2.py"):
        assert "# Protobuf Python Version: 4.25." in path.read_text(), path.name


def test_every_proto_is_generated():
    protos = sorted(p.stem for p in (ROOT / "protos").glob("*.proto"))
    modules = sorted(p.name.removesuffix("_pb2.py") for p in SCHEMA.glob("*_pb2.py"))
    assert protos == modules
