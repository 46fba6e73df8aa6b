"""LAVA job definitions that boot a board and run evbench's test definition.

`k3-am625-sk` (TI's AM62x starter kit, a U-Boot device type) deploys the kas
build's kernel, device tree and root filesystem tarball over TFTP/NFS and boots
with U-Boot's `nfs` commands; `qemu` and `qemu-aarch64` deploy a kernel and an
ext4 root to tmpfs and boot QEMU, for trying a job without a board. Every job
runs `lava/evbench.yaml` from the evbench repository with the run's options as
its parameters. Timeouts come from the run's plan: what the plan says on this
machine, times `BOARD_SLOWDOWN` (a Cortex-A53 is several times slower than a
lab PC; QEMU's software emulation is slower still), plus the boot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evbench_agent.errors import UserError

DEVICE_TYPES = ("k3-am625-sk", "qemu", "qemu-aarch64")
TEST_DEFINITION = "lava/evbench.yaml"
#: How much slower than this machine the plan may run on the device type.
BOARD_SLOWDOWN = {"k3-am625-sk": 6.0, "qemu": 40.0, "qemu-aarch64": 40.0}
#: Minutes for deployment and boot (downloads, U-Boot, kernel, login).
DEPLOY_MINUTES = 15
BOOT_MINUTES = 10
#: The shell prompt of evbench-image (Yocto's default root prompt) on each machine.
PROMPTS = {"k3-am625-sk": ["root@am62xx-evm:~#"], "qemu": ["root@qemuarm64:~#"]}


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


def test_minutes(options: JobOptions) -> int:
    """The test action's timeout: the plan on this device type, with room for set-up."""
    slowdown = BOARD_SLOWDOWN[options.device_type]
    return _minutes(options.planned_seconds * slowdown + 300)


def _deploy(options: JobOptions) -> dict[str, Any]:
    if options.device_type == "k3-am625-sk":
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
            "nfsrootfs": {"url": options.rootfs, "compression": "xz"},
        }
    return {
        "timeout": {"minutes": DEPLOY_MINUTES},
        "to": "tmpfs",
        "images": {
            "kernel": {"url": options.kernel, "image_arg": "-kernel {kernel}"},
            "rootfs": {
                "url": options.rootfs,
                "image_arg": "-drive format=raw,file={rootfs},if=virtio",
            },
        },
    }


def _boot(options: JobOptions) -> dict[str, Any]:
    login = {"login_prompt": "login:", "username": "root"}
    if options.device_type == "k3-am625-sk":
        return {
            "timeout": {"minutes": BOOT_MINUTES},
            "method": "u-boot",
            "commands": "nfs",
            "prompts": PROMPTS["k3-am625-sk"],
            "auto_login": login,
        }
    return {
        "timeout": {"minutes": BOOT_MINUTES},
        "method": "qemu",
        "media": "tmpfs",
        "prompts": PROMPTS["qemu"],
        "auto_login": login,
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
    if options.device_type not in DEVICE_TYPES:
        raise UserError(
            f"unknown LAVA device type {options.device_type!r}",
            hint=f"evbench writes jobs for {', '.join(DEVICE_TYPES)}",
        )
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
    if options.device_type != "k3-am625-sk":
        # The QEMU device types need the guest's architecture from the job.
        job["context"] = {"arch": "arm64", "cpu": "cortex-a53", "machine": "virt"}
    job["actions"] = [
        {"deploy": _deploy(options)},
        {"boot": _boot(options)},
        {"test": {"timeout": {"minutes": minutes}, "definitions": [_definition(options)]}},
    ]
    return job
