#!/usr/bin/env python3
"""Record the CAN Kconfig symbols of a Debian linux-source package, for tests/test_layer.py.

    python3 tests/data/kernel/refresh.py PACKAGE=VERSION
    e.g. python3 tests/data/kernel/refresh.py linux-source-6.12=6.12.117-1~deb12u1

No kernel tree is in CI, so the symbols meta-evbench's can-isotp.cfg sets are checked
against this record: every `config`/`menuconfig` of net/can/Kconfig,
drivers/net/can/Kconfig and drivers/net/can/m_can/Kconfig, with its type and the
`if` blocks and `depends on` lines around it, from the kernel source Debian ships
(apt-get download, then tar; nothing is installed). Writes can-kconfig-MAJOR.MINOR.txt.
"""

import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = ("net/can/Kconfig", "drivers/net/can/Kconfig", "drivers/net/can/m_can/Kconfig")
ENTRY = re.compile(r"^(?:menu)?config\s+(\w+)\s*$")
TYPE = re.compile(r"^\s+(bool|tristate|int|hex|string)\b")
DEPENDS = re.compile(r"^\s+depends on\s+(.+?)\s*$")
IF = re.compile(r"^if\s+(.+?)\s*$")


def symbols(text: str) -> list[tuple[str, str, str]]:
    """(symbol, type, condition) for each entry: its `if` blocks and `depends on`."""
    found: list[list[str]] = []
    blocks: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if match := IF.match(line):
            blocks.append(match.group(1))
            current = None
        elif line.startswith("endif"):
            blocks.pop()
            current = None
        elif match := ENTRY.match(line):
            current = [match.group(1), "", " && ".join(f"({b})" for b in blocks)]
            found.append(current)
        elif current is not None and (match := TYPE.match(line)) and not current[1]:
            current[1] = match.group(1)
        elif current is not None and (match := DEPENDS.match(line)):
            current[2] = " && ".join(filter(None, [current[2], f"({match.group(1)})"]))
        elif line and not line[0].isspace():
            current = None
    return [(name, kind, condition or "-") for name, kind, condition in found]


def main() -> None:
    (package,) = sys.argv[1:]
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        work.chmod(0o777)  # apt-get download writes as _apt where it can
        subprocess.run(["apt-get", "download", package], cwd=work, check=True)
        (deb,) = work.glob("*.deb")
        subprocess.run(["dpkg", "-x", str(deb), str(work / "x")], check=True)
        (archive,) = (work / "x" / "usr" / "src").glob("linux-source-*.tar.*")
        with tarfile.open(archive) as tar:
            top = archive.name.split(".tar")[0]
            texts = {name: tar.extractfile(f"{top}/{name}").read().decode() for name in FILES}
            makefile = tar.extractfile(f"{top}/Makefile").read().decode()
    version = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL) = (\d+)", makefile, re.M))
    release = f"{version['VERSION']}.{version['PATCHLEVEL']}"
    lines = [
        f"# CAN Kconfig symbols of Linux {release}.{version['SUBLEVEL']}, from Debian's {deb.name}",
        "# (recorded by tests/data/kernel/refresh.py; columns: symbol type condition file)",
    ]
    for name in FILES:
        lines += [f"{s} {t} {c.replace(' ', '')} {name}" for s, t, c in symbols(texts[name])]
    out = HERE / f"can-kconfig-{release}.txt"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out} ({len(lines) - 2} symbols)")


if __name__ == "__main__":
    main()
