"""The virtual board's Debian arm64 root filesystem and its ext4 disk image.

debootstrap runs the arm64 maintainer scripts through qemu-user-static,
which needs binfmt_misc with qemu-aarch64 registered (done here when root).
The result is a small systemd system: a getty on the console, sshd with a
throwaway root password (console only) and an authorized test key, DHCP on
the user-mode network, and the agent's runtime from Debian (python3,
python3-protobuf, python3-psutil, python3-serial).
"""

import os
import shutil
import signal
import subprocess
from pathlib import Path

from evboard_archive import SUITE, BoardBuildError

PACKAGES = (
    "python3",
    "python3-protobuf",
    "python3-psutil",
    "python3-serial",
    "openssh-server",
    "systemd",
    "systemd-sysv",
    "udev",
    "iproute2",
    "kmod",  # modprobe: udev and the kernel load the CAN and serial drivers on demand
    "procps",
    "busybox-static",
)
DEBOOTSTRAP_OPTIONS = ("--arch=arm64", "--variant=minbase")
HOSTNAME = "evboard"
ROOT_PASSWORD = "throwaway-7261"  # console only; the board is reachable only from loopback
DISK_LABEL = "evboard"
DISK_SIZE = "2G"
BINFMT = Path("/proc/sys/fs/binfmt_misc")
BINFMT_RULE = Path("/usr/lib/binfmt.d/qemu-aarch64.conf")
# Services that only slow an emulated boot (or wait for a network that is up).
MASKED_UNITS = (
    "systemd-networkd-wait-online.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "systemd-timesyncd.service",
)

FILES = {
    "etc/hostname": f"{HOSTNAME}\n",
    "etc/hosts": f"127.0.0.1 localhost\n127.0.1.1 {HOSTNAME}\n",
    "etc/fstab": f"LABEL={DISK_LABEL} / ext4 rw,noatime 0 0\n",
    "etc/resolv.conf": "nameserver 10.0.2.3\n",
    "etc/systemd/network/10-eth0.network": "[Match]\nName=eth0\n\n[Network]\nDHCP=ipv4\n",
    "etc/ssh/sshd_config.d/evboard.conf": "UseDNS no\nPasswordAuthentication no\n",
}


def enable_binfmt() -> None:
    """Make arm64 binaries run here through qemu-aarch64-static."""
    if (BINFMT / "qemu-aarch64").exists():
        return
    if os.geteuid() != 0:
        raise BoardBuildError("qemu-aarch64 is not registered with binfmt_misc: build as root")
    if not (BINFMT / "register").exists():
        subprocess.run(
            ["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], check=True, timeout=30
        )
    if not BINFMT_RULE.exists():
        raise BoardBuildError(f"{BINFMT_RULE} is missing: apt-get install qemu-user-static")
    (BINFMT / "register").write_text(BINFMT_RULE.read_text().strip())


def _run(argv: list[str], what: str, log: Path, timeout: float, script: str = "") -> None:
    """Run argv (feeding it script, kept out of the log) with its output appended to log."""
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        # A session of its own, so a timeout or Ctrl-C ends debootstrap's children too.
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            process.communicate(script.encode(), timeout=timeout)
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
    if process.returncode != 0:
        raise BoardBuildError(f"{what} failed (exit {process.returncode}); see {log}")


def unmount_below(path: Path) -> None:
    """Unmount what a failed debootstrap left mounted inside path (deepest first),
    so that removing the directory never reaches into /proc, /sys or /dev."""
    prefix = str(path.resolve()) + "/"
    mounts = [
        line.split()[1]
        for line in Path("/proc/self/mounts").read_text().splitlines()
        if line.split()[1].startswith(prefix)
    ]
    for mount_point in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount_point], check=False, timeout=60)


def _chroot(root: Path, script: str, log: Path) -> None:
    _run(["chroot", str(root), "/bin/sh", "-e"], "configuring the root", log, 600, script)


def debootstrap(root: Path, mirror: str, log: Path) -> None:
    """Install the base system and PACKAGES for arm64 into root."""
    enable_binfmt()
    argv = ["nice", "-n", "10", "debootstrap", *DEBOOTSTRAP_OPTIONS]
    argv += [f"--include={','.join(PACKAGES)}", SUITE, str(root), mirror]
    try:
        _run(argv, "debootstrap", log, 3600)
    finally:
        unmount_below(root)  # debootstrap can leave /proc mounted inside the root


def configure(root: Path, authorized_key: str, log: Path) -> None:
    """Write the board's configuration into root."""
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()
        path.write_text(text)
    ssh_dir = root / "root" / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    (ssh_dir / "authorized_keys").write_text(authorized_key)
    (ssh_dir / "authorized_keys").chmod(0o600)
    masks = " ".join(MASKED_UNITS)
    _chroot(
        root,
        f"echo 'root:{ROOT_PASSWORD}' | chpasswd\n"
        "systemctl enable systemd-networkd.service ssh.service\n"
        f"systemctl mask {masks}\n"
        "apt-get clean\n"
        "rm -rf /var/lib/apt/lists/* /var/log/*.log\n",
        log,
    )


def make_disk(root: Path, image: Path, log: Path) -> None:
    """An ext4 image of root, populated by mkfs itself (no loop device needed)."""
    mkfs = shutil.which("mkfs.ext4") or "/usr/sbin/mkfs.ext4"
    argv = [mkfs, "-q", "-F", "-L", DISK_LABEL, "-d", str(root), str(image), DISK_SIZE]
    _run(argv, "mkfs.ext4", log, 600)
