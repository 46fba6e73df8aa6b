"""Which block devices the running system is using, read from /proc and /sys.

Standard library only: the eMMC receiver runs this same file on the board.
A device is busy when it, or anything stacked on it (partitions, LVM, dm,
md through `holders`/`slaves`), is mounted, is swap, or holds the root
filesystem; a whole disk is busy when any of its partitions is.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import tempfile
from pathlib import Path

SYS_BLOCK = Path("/sys/class/block")


def name_of(devno: int) -> str | None:
    """The kernel name (sda1, mmcblk0, dm-0) of a block device number."""
    link = Path(f"/sys/dev/block/{os.major(devno)}:{os.minor(devno)}")
    try:
        return link.resolve(strict=True).name
    except OSError:
        return None


def parent_disk(name: str) -> str | None:
    """The whole disk a partition belongs to, or None for a whole disk."""
    node = SYS_BLOCK / name
    if not (node / "partition").exists():
        return None
    return node.resolve().parent.name


def partitions(name: str) -> list[str]:
    node = (SYS_BLOCK / name).resolve()
    return sorted(child.name for child in node.iterdir() if (child / "partition").exists())


def _linked(name: str, kind: str) -> list[str]:
    folder = SYS_BLOCK / name / kind
    return sorted(entry.name for entry in folder.iterdir()) if folder.is_dir() else []


def _with_lower_devices(name: str) -> set[str]:
    """`name` and every device below it (dm/LVM/md slaves, a partition's disk)."""
    seen: set[str] = set()
    pending = [name]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        pending += _linked(current, "slaves")
        disk = parent_disk(current)
        if disk:
            pending.append(disk)
    return seen


def family(name: str) -> set[str]:
    """What writing `name` would overwrite: itself, its partitions, and all stacked on them."""
    seen: set[str] = set()
    pending = [name, *partitions(name)]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        pending += _linked(current, "holders")
    return seen


def _mounts() -> list[tuple[int, str, str]]:
    """(device number, mount point, source) of every mount of this process's namespace."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        major, minor = (int(part) for part in fields[2].split(":"))
        source = fields[fields.index("-") + 2]
        found.append((os.makedev(major, minor), fields[4].replace("\\040", " "), source))
    return found


def _block_devno(path: str) -> int | None:
    try:
        status = Path(path).stat()
    except OSError:
        return None
    return status.st_rdev if (status.st_mode & 0o170000) == 0o060000 else None


def busy_devices() -> dict[str, str]:
    """Kernel name -> why it must not be written; the root filesystem comes first."""
    reasons: list[tuple[int, str]] = []
    for devno, mount_point, source in _mounts():
        # btrfs and some others report an anonymous device number: use the source too.
        for number in (devno, _block_devno(source)):
            if number and os.major(number) != 0:
                why = "the running system's root filesystem" if mount_point == "/" else None
                reasons.append((number, why or f"mounted at {mount_point}"))
    swaps = Path("/proc/swaps")
    for line in swaps.read_text().splitlines()[1:] if swaps.exists() else []:
        number = _block_devno(line.split()[0])
        if number:
            reasons.append((number, "in use as swap"))
    reasons.sort(key=lambda item: "root" not in item[1])
    busy: dict[str, str] = {}
    for number, why in reasons:
        name = name_of(number)
        for lower in sorted(_with_lower_devices(name)) if name else ():
            busy.setdefault(lower, f"{why} (on {name})" if lower != name else why)
    return busy


def why_busy(name: str) -> str | None:
    """Why `name` must not be written, or None when nothing uses it."""
    busy = busy_devices()
    for member in sorted(family(name), key=lambda n: n != name):
        if member in busy:
            return busy[member] if member == name else f"{member}: {busy[member]}"
    return None


def is_removable(name: str) -> bool:
    """Removable media, an SD card (even in a built-in reader), or a USB disk."""
    disk = parent_disk(name) or name
    node = SYS_BLOCK / disk
    if (node / "removable").read_text().strip() == "1":
        return True
    card_type = node / "device" / "type"
    if card_type.exists() and card_type.read_text().strip() == "SD":
        return True
    return "/usb" in str(node.resolve())


def describe(name: str) -> str:
    """The device's vendor and model, or what a loop device reads from."""
    node = SYS_BLOCK / (parent_disk(name) or name)
    parts = []
    for field in ("device/vendor", "device/model", "device/name"):
        path = node / field
        if path.exists() and path.read_text().strip():
            parts.append(path.read_text().strip())
    backing = SYS_BLOCK / name / "loop" / "backing_file"
    if backing.exists():
        parts.append(f"loop device over {backing.read_text().strip()}")
    return " ".join(parts) or "unknown model"


def size_bytes(name: str) -> int:
    """Capacity in bytes (sysfs counts 512-byte sectors whatever the block size)."""
    return int((SYS_BLOCK / name / "size").read_text()) * 512


def read_only(name: str) -> bool:
    return (SYS_BLOCK / name / "ro").read_text().strip() == "1"


#: linux/loop.h: LOOP_GET_STATUS64 and struct loop_info64 (lo_device, lo_inode, lo_rdevice,
#: lo_offset, lo_sizelimit, lo_number, lo_encrypt_type, lo_encrypt_key_size, lo_flags,
#: lo_file_name[64], lo_crypt_name[64], lo_encrypt_key[32], lo_init[2]).
LOOP_GET_STATUS64 = 0x4C05
_LOOP_INFO64 = struct.Struct("=5Q4I64s64s32s2Q")


def _open_block(name: str) -> int:
    """A read-only descriptor of block device `name`: /dev/NAME when it is that device,
    else a node made for the call in a private directory."""
    major, minor = (int(part) for part in (SYS_BLOCK / name / "dev").read_text().split(":"))
    devno = os.makedev(major, minor)
    if _block_devno(f"/dev/{name}") == devno:
        return os.open(f"/dev/{name}", os.O_RDONLY | os.O_CLOEXEC)
    with tempfile.TemporaryDirectory() as folder:
        node = Path(folder) / name
        os.mknod(node, 0o600 | 0o060000, devno)
        return os.open(node, os.O_RDONLY | os.O_CLOEXEC)


def loop_backing(name: str) -> tuple[int, int, int] | None:
    """(st_dev, st_ino, st_rdev) of the file loop device `name` reads, as the kernel holds
    it (LOOP_GET_STATUS64); None when `name` is not a loop device or reads nothing.

    Unlike loop/backing_file this stays true when the file's name was removed ("(deleted)")
    or another file took it. OSError when the device cannot be asked."""
    if not (SYS_BLOCK / name / "loop").is_dir():
        return None
    fd = _open_block(name)
    try:
        info = fcntl.ioctl(fd, LOOP_GET_STATUS64, bytes(_LOOP_INFO64.size))
    except OSError as error:
        if error.errno == errno.ENXIO:  # a loop device with no file
            return None
        raise
    finally:
        os.close(fd)
    device, inode, rdevice = _LOOP_INFO64.unpack(info)[:3]
    return device, inode, rdevice


def backing_chain(name: str) -> list[tuple[list[str], int, int]]:
    """Every file that writing `name` writes into, as (the devices it goes through, st_dev,
    st_ino): the files of the loop devices at or below `name` (a partition's disk, the
    slaves of a device-mapper or md device), and below a loop device that reads another
    block device, that device's own, recursively. OSError when a loop cannot be asked."""
    found: list[tuple[list[str], int, int]] = []
    seen: set[str] = set()
    pending = [[name]]
    while pending:
        path = pending.pop()
        for member in sorted(_with_lower_devices(path[-1])):
            if member in seen:
                continue
            seen.add(member)
            backing = loop_backing(member)
            if backing is None:
                continue
            device, inode, rdevice = backing
            through = path if member == path[-1] else [*path, member]
            found.append((through, device, inode))
            if rdevice:  # a loop over a block device: it writes what that device writes
                lower = name_of(rdevice)
                if lower is None:
                    raise OSError(
                        f"{member} reads block device {os.major(rdevice)}:"
                        f"{os.minor(rdevice)}, which this system does not list"
                    )
                pending.append([*through, lower])
    return found
