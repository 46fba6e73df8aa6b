"""LAVA job definitions that boot a board and run evbench's test definition.

`k3-am625-sk` (TI's AM62x starter kit, a U-Boot device type) deploys the kas
build's kernel, device tree and root filesystem tarball over TFTP/NFS and boots
with U-Boot's `nfs` commands; `qemu` and `qemu-aarch64` deploy a kernel and an
ext4 root to tmpfs and boot QEMU with the kernel command line LAVA's own
aarch64 examples give (console on the virt machine's UART, root on the first
virtio disk), for trying a job without a board. Every job
runs `lava/evbench.yaml` from the evbench repository with the run's options as
its parameters. Timeouts come from the run's plan: what the plan says on this
machine, times the device type's slowdown (a Cortex-A53 is several times slower than a
lab PC; QEMU's software emulation is slower still), plus the boot.

Each device type is declared once, by `@device_type` on the class that writes its
deploy and boot actions; `evbench lava job --device-type` offers what
`device_types()` lists, and tests/test_lava.py checks its job arguments and
docs/lava.md's table against it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from evbench_core.errors import UserError

TEST_DEFINITION = "lava/evbench.yaml"
#: Minutes for deployment and boot (downloads, U-Boot, kernel, login).
DEPLOY_MINUTES = 15
BOOT_MINUTES = 10
#: An NFS root's compression, from the tarball's name, as lava-dispatcher names it;
#: these are the ones its download step can undo (lava_dispatcher.utils.compression),
#: an uncompressed tarball needs none.
NFS_ROOT_COMPRESSION = {
    ".tar.xz": "xz",
    ".tar.gz": "gz",
    ".tgz": "gz",
    ".tar.bz2": "bz2",
    ".tar": None,
}
#: The QEMU guest (-M virt): its PL011 UART is ttyAMA0; the root filesystem is the first
#: virtio disk (the job attaches it with if=virtio), so /dev/vda.
QEMU_CONSOLE = "ttyAMA0,115200"
QEMU_ROOT_DEVICE = "/dev/vda"
QEMU_ROOT_TYPES = {".ext4": "ext4", ".ext3": "ext3", ".ext2": "ext2"}
#: How evbench-image's console login looks on every machine.
LOGIN = {"login_prompt": "login:", "username": "root"}


@dataclass(frozen=True)
class JobOptions:
    """What a job needs: where its artifacts are and what evbench should run."""

    device_type: str
    repository: str  # git URL of the evbench repository holding lava/evbench.yaml
    kernel: str
    rootfs: str
    dtb: str | None = None
    revision: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    planned_seconds: float = 120.0
    job_name: str | None = None
    priority: str = "medium"
    visibility: str = "public"


def _minutes(seconds: float) -> int:
    return max(1, math.ceil(seconds / 60))


class Actions(Protocol):
    """What a device type writes: the job's deploy and boot actions."""

    def deploy(self, options: JobOptions) -> dict[str, Any]: ...

    def boot(self, options: JobOptions) -> dict[str, Any]: ...


@dataclass(frozen=True)
class DeviceType:
    """A LAVA device type evbench writes jobs for, declared by `@device_type`."""

    name: str
    #: How much slower than this machine the plan may run there.
    slowdown: float
    actions: Actions
    #: The job's `context` (what a QEMU device type needs of the guest), if any.
    context: Mapping[str, str] | None = None


_DEVICE_TYPES: dict[str, DeviceType] = {}


def device_type(
    name: str, *, slowdown: float, context: Mapping[str, str] | None = None
) -> Callable[[type], type]:
    """Register the decorated class (its `deploy` and `boot`) as device type `name`."""

    def register(cls: type) -> type:
        if name in _DEVICE_TYPES:
            raise ValueError(f"LAVA device type {name!r} is registered twice")
        _DEVICE_TYPES[name] = DeviceType(name, slowdown, cls(), context)
        return cls

    return register


def device_types() -> tuple[str, ...]:
    """The device types evbench writes jobs for, in the order they are declared."""
    return tuple(_DEVICE_TYPES)


def _device(options: JobOptions) -> DeviceType:
    known = _DEVICE_TYPES.get(options.device_type)
    if known is None:
        raise UserError(
            f"unknown LAVA device type {options.device_type!r}",
            hint=f"evbench writes jobs for {', '.join(device_types())}",
        )
    return known


def test_minutes(options: JobOptions) -> int:
    """The test action's timeout: the plan on this device type, with room for set-up."""
    return _minutes(options.planned_seconds * _device(options).slowdown + 300)


def _name_of(url: str) -> str:
    return url.split("?", 1)[0].rsplit("/", 1)[-1].lower()


def nfs_root_compression(url: str) -> str | None:
    """The NFS root tarball's compression, from its name; refused when LAVA cannot use it."""
    name = _name_of(url)
    for suffix, compression in NFS_ROOT_COMPRESSION.items():
        if name.endswith(suffix):
            return compression
    raise UserError(
        f"k3-am625-sk boots from an NFS root and cannot use {name!r}",
        hint="give the kas build's root filesystem tarball "
        f"({', '.join(NFS_ROOT_COMPRESSION)}), e.g. evbench-image-am62xx-evm.rootfs.tar.xz",
    )


def qemu_kernel_command_line(url: str) -> str:
    """The guest kernel's command line: its console, and the image as its root."""
    name = _name_of(url)
    for suffix, fs_type in QEMU_ROOT_TYPES.items():
        if name.endswith(suffix):
            return f"console={QEMU_CONSOLE} root={QEMU_ROOT_DEVICE} rootfstype={fs_type} rw"
    raise UserError(
        f"the QEMU job boots a raw filesystem image as its root disk and cannot use {name!r}",
        hint="give the kas build's qemuarm64 image, e.g. evbench-image-qemuarm64.rootfs.ext4",
    )


def _nfs_root(url: str) -> dict[str, str]:
    root = {"url": url}
    compression = nfs_root_compression(url)
    if compression:
        root["compression"] = compression
    return root


@device_type("k3-am625-sk", slowdown=6.0)
class UBootNfs:
    """TI's SK-AM62: kernel and device tree over TFTP, an NFS root, U-Boot's `nfs` boot."""

    def deploy(self, options: JobOptions) -> dict[str, Any]:
        if not options.dtb:
            raise UserError(
                "a k3-am625-sk job needs the device tree",
                hint="give --dtb URL (k3-am625-sk.dtb from the kas build's deploy directory)",
            )
        return {
            "timeout": {"minutes": DEPLOY_MINUTES},
            "to": "tftp",
            "kernel": {"url": options.kernel, "type": "image"},
            "dtb": {"url": options.dtb},
            "nfsrootfs": _nfs_root(options.rootfs),
        }

    def boot(self, options: JobOptions) -> dict[str, Any]:
        return {
            "timeout": {"minutes": BOOT_MINUTES},
            "method": "u-boot",
            "commands": "nfs",
            "prompts": ["root@am62xx-evm:~#"],  # Yocto's root prompt on am62xx-evm
            "auto_login": dict(LOGIN),
        }


#: The QEMU device types need the guest's architecture from the job.
QEMU_CONTEXT = {"arch": "arm64", "cpu": "cortex-a53", "machine": "virt"}


# Registered bottom up: qemu, then qemu-aarch64.
@device_type("qemu-aarch64", slowdown=40.0, context=QEMU_CONTEXT)
@device_type("qemu", slowdown=40.0, context=QEMU_CONTEXT)
class QemuVirt:
    """QEMU `virt`: a kernel and an ext4 root to tmpfs, the root as the first virtio disk."""

    def deploy(self, options: JobOptions) -> dict[str, Any]:
        command_line = qemu_kernel_command_line(options.rootfs)
        return {
            "timeout": {"minutes": DEPLOY_MINUTES},
            "to": "tmpfs",
            "images": {
                "kernel": {
                    "url": options.kernel,
                    "image_arg": f'-kernel {{kernel}} -append "{command_line}"',
                },
                "rootfs": {
                    "url": options.rootfs,
                    "image_arg": "-drive format=raw,file={rootfs},if=virtio",
                },
            },
        }

    def boot(self, options: JobOptions) -> dict[str, Any]:
        return {
            "timeout": {"minutes": BOOT_MINUTES},
            "method": "qemu",
            "media": "tmpfs",
            "prompts": ["root@qemuarm64:~#"],  # Yocto's root prompt on qemuarm64
            "auto_login": dict(LOGIN),
        }


def _definition(options: JobOptions) -> dict[str, Any]:
    definition: dict[str, Any] = {
        "repository": options.repository,
        "from": "git",
        "path": TEST_DEFINITION,
        "name": "evbench",
    }
    if options.revision:
        definition["revision"] = options.revision
    if options.parameters:
        definition["parameters"] = dict(options.parameters)
    return definition


def build(options: JobOptions) -> dict[str, Any]:
    """The job definition, as LAVA's schema wants it."""
    device = _device(options)
    minutes = test_minutes(options)
    job: dict[str, Any] = {
        "device_type": options.device_type,
        "job_name": options.job_name or f"evbench on {options.device_type}",
        "timeouts": {
            "job": {"minutes": DEPLOY_MINUTES + BOOT_MINUTES + minutes + 5},
            "action": {"minutes": max(DEPLOY_MINUTES, BOOT_MINUTES, minutes)},
            "connection": {"minutes": 2},
        },
        "priority": options.priority,
        "visibility": options.visibility,
    }
    if device.context is not None:
        job["context"] = dict(device.context)
    job["actions"] = [
        {"deploy": device.actions.deploy(options)},
        {"boot": device.actions.boot(options)},
        {"test": {"timeout": {"minutes": minutes}, "definitions": [_definition(options)]}},
    ]
    return job
