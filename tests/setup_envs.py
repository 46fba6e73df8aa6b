"""Create the extra Python environments the tests use (ENVIRONMENTS; the main .venv has
the newest protobuf, Debian's python3-protobuf comes from tests/setup-system.sh), each
rebuilt only when its requirements change.
"""

import hashlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ENVIRONMENTS = {
    # Yocto scarthgap's protobuf, and protoc 25.1 that regenerates the schema (drift test)
    ".venv-pb425": ["protobuf==4.25.8", "psutil", "grpcio-tools==1.62.3"],
    # The release's wheels are built here (tests/test_release_wheels.py, pip wheel
    # --no-build-isolation): hatchling at Yocto scarthgap's version, the oldest the
    # pyproject files must build with.
    ".venv-build": ["hatchling==1.21.1"],
    # labgrid's coordinator, exporter and client for the lab tests: its own venv
    # because labgrid's pyserial-labgrid installs the same `serial` package as pyserial.
    ".venv-labgrid": ["labgrid==26.0.1"],
    # LAVA's own code (Debian 12's lava-common, lava-dispatcher, lava-server 2023.01,
    # unpacked below, never installed) checks the jobs and parses the agent's signals;
    # these are its Python dependencies at Debian 12's versions.
    # (pytz: lava-dispatcher's job module, for the test shell test)
    ".venv-lava": ["voluptuous==0.13.1", "pytz==2022.7.1", "jinja2==3.1.2", "PyYAML==6.0",
                   "pexpect==4.8.0", "requests", "configobj", "python-magic", "netifaces",
                   "pyudev"],
}  # fmt: skip
#: Debian packages unpacked (dpkg -x) into tests/cache/lava/root for the LAVA tests.
LAVA_PACKAGES = ["lava-common", "lava-dispatcher", "lava-dispatcher-host", "lava-server"]
LAVA_VERSION = "2023.01-2"
LAVA_CACHE = ROOT / "tests" / "cache" / "lava"


def ensure(name: str, requirements: list[str]) -> None:
    # A worktree may link its environments to another checkout's: build where the link
    # points (`venv --clear` cannot clear through a link, and leaves nothing behind).
    env = (ROOT / name).resolve()
    stamp = env / ".evbench-requirements"
    wanted = hashlib.sha256("\n".join(requirements).encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted:
        return
    print(f"setup_envs: creating {name} ({', '.join(requirements)})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(env)], check=True)
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, *requirements], check=True)
    stamp.write_text(wanted)


def ensure_lava_packages() -> None:
    """LAVA's Debian packages, downloaded and unpacked once (the system is not altered)."""
    wanted = " ".join(f"{name}={LAVA_VERSION}" for name in LAVA_PACKAGES)
    stamp = LAVA_CACHE / ".evbench-packages"
    if stamp.exists() and stamp.read_text() == wanted:
        return
    print(f"setup_envs: unpacking {wanted} into {LAVA_CACHE}", flush=True)
    debs = LAVA_CACHE / "debs"
    root = LAVA_CACHE / "root"
    for directory in (debs, root):
        subprocess.run(["rm", "-rf", str(directory)], check=True)
        directory.mkdir(parents=True)
    # apt-get download writes as the _apt user where it can; the folder must let it.
    debs.chmod(0o777)
    subprocess.run(["apt-get", "download", *wanted.split()], cwd=debs, check=True)
    for package in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg", "-x", str(package), str(root)], check=True)
    stamp.write_text(wanted)


def main() -> None:
    # Side by side: each install is mostly one busy core (pip unpacking and compiling),
    # 34 s one after another on a 2-core machine. The first failure is raised.
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        jobs = [
            pool.submit(ensure, name, requirements) for name, requirements in ENVIRONMENTS.items()
        ]
        jobs.append(pool.submit(ensure_lava_packages))
        for job in jobs:
            job.result()


if __name__ == "__main__":
    main()
