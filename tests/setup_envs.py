"""Create the extra Python environments the compat tests run the agent in.

- .venv-pb425: protobuf 4.25.8 (Yocto scarthgap's runtime) and grpcio-tools
  1.62 (protoc 25.1), which also regenerates the schema for the drift test;
- .venv-labgrid: labgrid 26 (coordinator, exporter, client) for the lab tests;
- the main .venv has the newest protobuf;
- Debian's own python3 with python3-protobuf comes from tests/setup-system.sh.

Each environment is rebuilt only when its requirements change.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ENVIRONMENTS = {
    ".venv-pb425": ["protobuf==4.25.8", "psutil", "grpcio-tools==1.62.3"],
    # labgrid's coordinator, exporter and client for the lab tests: its own venv
    # because labgrid's pyserial-labgrid installs the same `serial` package as pyserial.
    ".venv-labgrid": ["labgrid==26.0.1"],
}


def ensure(name: str, requirements: list[str]) -> None:
    env = ROOT / name
    stamp = env / ".evbench-requirements"
    wanted = hashlib.sha256("\n".join(requirements).encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted:
        return
    print(f"setup_envs: creating {name} ({', '.join(requirements)})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(env)], check=True)
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, *requirements], check=True)
    stamp.write_text(wanted)


def main() -> None:
    for name, requirements in ENVIRONMENTS.items():
        ensure(name, requirements)


if __name__ == "__main__":
    main()
