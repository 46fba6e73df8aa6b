"""Generate the agent's Python protobuf modules from the .proto files here.

The generated modules are committed so that the agent installs without protoc.
They are made with protoc 25.x (grpcio-tools 1.62 ships it): code from a newer
protoc refuses to load on protobuf 4.25 (Yocto scarthgap) and 4.21 (Debian 12).
A test regenerates them and fails when they drift from the .proto files.

    python protos/generate.py [--out DIR] [--protoc PROTOC]
    python protos/generate.py --native-types [--protoc PROTOC]

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
PROTOS = ("ev_data.proto", "ev_frame.proto", "shapes.proto", "link.proto")


def generate(out_dir: Path, protoc: str | None = None) -> list[Path]:
    """Run protoc over every .proto file and return the modules written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    command = [protoc] if protoc else [sys.executable, "-m", "grpc_tools.protoc"]
    command += [f"-I{PROTO_DIR}", f"--python_out={out_dir}", *PROTOS]
    subprocess.run(command, check=True, cwd=PROTO_DIR)
    return [out_dir / (Path(name).stem + "_pb2.py") for name in PROTOS]


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
    for path in generate(args.out, args.protoc):
        print(path)


if __name__ == "__main__":
    main()
