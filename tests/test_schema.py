"""The committed protobuf modules and stubs are what protos/ generates with protoc 25.1."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, require

SCHEMA = ROOT / "agent" / "src" / "evbench_agent" / "schema"
TOOLS_PYTHON = ROOT / ".venv-pb425" / "bin" / "python"
#: The generator's version line changes with protoc's patch level, nothing else.
VERSION_LINE = re.compile(r"^# Protobuf Python Version: .*$", re.MULTILINE)


def _normalized(path: Path) -> str:
    return VERSION_LINE.sub("", path.read_text())


def _generate(python: Path, script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [str(python), str(script), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def test_every_proto_is_generated_by_protoc_25():
    protos = sorted(p.stem for p in (ROOT / "protos").glob("*.proto"))
    modules = sorted(p.name.removesuffix("_pb2.py") for p in SCHEMA.glob("*_pb2.py"))
    assert protos == modules
    for path in SCHEMA.glob("*_pb2.py"):
        assert "# Protobuf Python Version: 4.25." in path.read_text(), path.name


def test_generated_modules_match_the_protos_and_a_new_proto_needs_no_listing(tmp_path):
    # A copy of protos/ with one more .proto: generate.py takes every file there, and
    # writes the others as they are committed.
    require(TOOLS_PYTHON.exists(), "the .venv-pb425 environment (tests/setup_envs.py)")
    protos = tmp_path / "protos"
    shutil.copytree(ROOT / "protos", protos, ignore=shutil.ignore_patterns("__pycache__"))
    (protos / "zz_new.proto").write_text(
        'syntax = "proto3";\npackage scratch;\nmessage Reading { double value = 1; }\n'
    )
    out = tmp_path / "out"
    done = _generate(TOOLS_PYTHON, protos / "generate.py", "--out", str(out))
    assert done.returncode == 0, done.stderr
    generated = sorted(p.name for p in out.glob("*_pb2.py*"))
    committed = sorted(p.name for p in SCHEMA.glob("*_pb2.py*"))
    assert generated == sorted([*committed, "zz_new_pb2.py", "zz_new_pb2.pyi"])
    assert sum(name.endswith(".pyi") for name in generated) == len(list(protos.glob("*.proto")))
    for name in committed:
        assert _normalized(out / name) == _normalized(SCHEMA / name), (
            f"{name} drifted from protos/: run `.venv-pb425/bin/python protos/generate.py`"
        )


def test_a_protoc_other_than_25_is_refused_naming_the_right_interpreter(tmp_path):
    # A protoc that says it is 29.3, as grpcio-tools 1.70 would: its code needs protobuf 5.
    protoc = tmp_path / "protoc"
    protoc.write_text("#!/bin/sh\necho libprotoc 29.3\n")
    protoc.chmod(0o755)
    out = tmp_path / "out"
    script = ROOT / "protos" / "generate.py"
    done = _generate(Path(sys.executable), script, "--out", str(out), "--protoc", str(protoc))
    assert done.returncode == 1
    assert done.stderr.startswith("generate.py: error: ")
    assert "protoc 29.3, not 25.x" in done.stderr and ".venv-pb425/bin/python" in done.stderr
    assert not out.exists() or not list(out.iterdir())  # nothing written
