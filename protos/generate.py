"""Generate the agent's Python protobuf modules from the .proto files here.

The generated modules are committed so that the agent installs without protoc.
They are made with protoc 25.x (grpcio-tools 1.62 ships it): code from a newer
protoc refuses to load on protobuf 4.25 (Yocto scarthgap) and 4.21 (Debian 12),
so the generator refuses any other protoc. tests/setup_envs.py installs
grpcio-tools 1.62.3 in .venv-pb425 (the development .venv has a newer one):

    .venv-pb425/bin/python protos/generate.py [--out DIR] [--protoc PROTOC]
    .venv-pb425/bin/python protos/generate.py --native-types [--protoc PROTOC]

Every protos/*.proto is generated (a new one needs no list), each module with its
type stub (_pb2.pyi, protoc's --pyi_out), which mypy reads for the messages' fields.
A test regenerates them and fails when the committed files drift from the .proto files.

--native-types writes the native harnesses' type table instead
(native/generated/evbench_types.h, see protos/native_types.py).

Without --protoc, grpc_tools.protoc of the running Python is used.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = PROTO_DIR.parent / "agent" / "src" / "evbench_agent" / "schema"
#: The protoc major version whose Python code loads on protobuf 4.21 and 4.25.
PROTOC_MAJOR = "25"
TOOLS_VENV = ".venv-pb425"
#: What protoc writes for each .proto: the module and its type stub.
GENERATED = ("_pb2.py", "_pb2.pyi")


class GenerateError(Exception):
    """What stops the generator, in one line."""


def protos() -> list[str]:
    """Every .proto file of protos/, by name: each is generated, none skipped."""
    return sorted(path.name for path in PROTO_DIR.glob("*.proto"))


def protoc_command(protoc: str | None = None) -> list[str]:
    """The protoc to run, checked to be 25.x: a newer one writes code the board cannot load."""
    command = [protoc] if protoc else [sys.executable, "-m", "grpc_tools.protoc"]
    try:
        done = subprocess.run(
            [*command, "--version"], capture_output=True, text=True, check=False, timeout=60
        )
    except OSError as error:
        raise GenerateError(f"cannot run {command[0]}: {error}") from error
    version = done.stdout.strip().removeprefix("libprotoc ")
    if done.returncode != 0 or version.split(".")[0] != PROTOC_MAJOR:
        found = version or done.stderr.strip().splitlines()[-1:] or "no version"
        raise GenerateError(
            f"{' '.join(command)} is protoc {found}, not {PROTOC_MAJOR}.x: its code does not "
            f"import on protobuf 4.21 and 4.25; run {TOOLS_VENV}/bin/python protos/generate.py "
            "(grpcio-tools 1.62.3, from tests/setup_envs.py)"
        )
    return command


def generate(out_dir: Path, protoc: str | None = None) -> list[Path]:
    """Run protoc over every .proto file and return the modules and stubs written."""
    names = protos()
    outputs = [f"--python_out={out_dir}", f"--pyi_out={out_dir}"]
    command = [*protoc_command(protoc), f"-I{PROTO_DIR}", *outputs, *names]
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(command, check=True, cwd=PROTO_DIR)
    return [out_dir / (Path(name).stem + suffix) for name in names for suffix in GENERATED]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--protoc", help="a protoc executable (default: grpc_tools)")
    parser.add_argument(
        "--native-types", action="store_true", help="write the native harnesses' type table"
    )
    args = parser.parse_args()
    if args.native_types:
        import native_types  # beside this script

        out = args.out / "evbench_types.h" if args.out != DEFAULT_OUT else native_types.DEFAULT_OUT
        print(native_types.generate(out, protoc=args.protoc))
        return
    try:
        written = generate(args.out, args.protoc)
    except GenerateError as error:
        sys.exit(f"generate.py: error: {error}")
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
