#
# SPDX-License-Identifier: MIT
#
"""Is every kernel module evbench-can needs in the root filesystem?

evbench-can only recommends the modules' packages, and a recommendation whose
package does not exist (the kernel did not build that module) is dropped
without a word: the link suite would then fail on the board, when it opens its
ISO-TP socket. evbench-image checks the finished root filesystem instead and
stops the build, naming what is missing. A module built into the kernel (=y)
has no file and no package: modules.builtin lists it.
"""

from __future__ import annotations

from pathlib import Path

#: The modules, as their files are named (kernel-module-NAME with '_' as '-' is
#: the package; evbench-can recommends exactly these).
NEEDED = ("can", "can-raw", "can-isotp", "can-dev", "vcan", "m_can", "m_can_platform")
#: evbench-can's file: the image has evbench-can when it has this.
CAN_NETWORK = "80-evbench-can0.network"
NETWORK_DIRS = ("lib/systemd/network", "usr/lib/systemd/network")
MODULE_DIRS = ("lib/modules", "usr/lib/modules")
SUFFIXES = (".ko", ".ko.xz", ".ko.gz", ".ko.zst")


def package_of(module: str) -> str:
    return "kernel-module-" + module.replace("_", "-")


def has_evbench_can(rootfs: str) -> bool:
    return any((Path(rootfs) / d / CAN_NETWORK).exists() for d in NETWORK_DIRS)


def _normal(name: str) -> str:
    # The kernel treats '-' and '_' in module names alike.
    return name.replace("-", "_")


def _module_name(file_name: str) -> str | None:
    for suffix in SUFFIXES:
        if file_name.endswith(suffix):
            return _normal(file_name[: -len(suffix)])
    return None


def _modules_present(rootfs: str) -> dict[str, set[str]]:
    """Module names (normalised) with a file, or listed as built in, per kernel version."""
    present: dict[str, set[str]] = {}
    for modules_dir in MODULE_DIRS:
        top = Path(rootfs) / modules_dir
        if not top.is_dir() or top.is_symlink():  # /lib -> usr/lib: counted once
            continue
        for base in sorted(top.iterdir()):
            names = present.setdefault(base.name, set())
            names.update(filter(None, (_module_name(p.name) for p in base.rglob("*.ko*"))))
            builtin = base / "modules.builtin"
            if builtin.is_file():
                for line in builtin.read_text().splitlines():
                    name = _module_name(Path(line.strip()).name)
                    if name:
                        names.add(name)
    return present


def missing(rootfs: str) -> list[str]:
    """[] when the image lacks evbench-can or has every module; else one line per gap."""
    if not has_evbench_can(rootfs):
        return []
    present = _modules_present(rootfs)
    if not present:
        return ["no kernel modules at all under /lib/modules (is the kernel in the image?)"]
    return [
        f"kernel {version} has no {module} (neither {package_of(module)} nor built in)"
        for version, names in sorted(present.items())
        for module in NEEDED
        if _normal(module) not in names
    ]
