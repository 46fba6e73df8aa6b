"""The virtual board's kernel, a small initramfs made from its modules, and
the few modules its root filesystem carries.

Debian's arm64 kernel builds virtio-blk, virtio-net and ext4 as modules, so
something must load them before the root disk can be mounted. Running
initramfs-tools inside the emulated root takes half an hour; instead this
packs the few modules needed (with their dependencies, in load order), the
board's own static busybox and evboard_init.sh into a newc cpio archive.

The root gets the CAN stack (BOARD_MODULES) under /lib/modules with its own
modules.dep, not the kernel's whole 300 MB tree: udev loads kvaser_pci for
the two emulated controllers, and the kernel's modprobe (kmod) loads
can-isotp, can-raw and vcan when a socket or `ip link add` first asks.
"""

import gzip
import lzma
import shutil
import subprocess
import tempfile
from pathlib import Path

from evboard_archive import BoardBuildError

INIT_SCRIPT = Path(__file__).with_name("evboard_init.sh")
# Module names as modprobe spells them; crc32c_generic is ext4's soft
# dependency (metadata checksums), which modules.dep does not list.
WANTED_MODULES = (
    "virtio_pci",
    "virtio_mmio",
    "virtio_blk",
    "virtio_net",
    "virtio_console",
    "crc32c_generic",
    "ext4",
    "af_packet",
)


#: The CAN stack in the root: SocketCAN and its raw and ISO-TP protocols, vcan
#: for self-tests, and the SJA1000 driver behind QEMU's kvaser_pci controllers.
#: (The PCI 16550 of -device pci-serial needs nothing: Debian builds 8250_pci in.)
BOARD_MODULES = ("can", "can_raw", "can_isotp", "can_dev", "vcan", "sja1000", "kvaser_pci")
#: depmod's inputs besides the modules themselves (modules.builtin: modprobe
#: then knows built-in drivers are present instead of failing on them).
MODULE_INDEXES = ("modules.builtin", "modules.builtin.modinfo", "modules.order")


def extract_kernel(deb: Path, into: Path) -> tuple[Path, Path]:
    """Unpack a linux-image .deb; return (vmlinuz, /lib/modules/VERSION)."""
    subprocess.run(["dpkg-deb", "-x", str(deb), str(into)], check=True, timeout=600)
    images = sorted((into / "boot").glob("vmlinuz-*"))
    modules = sorted((into / "lib" / "modules").glob("*"))
    if not images or not modules:
        raise BoardBuildError(f"{deb.name} holds no vmlinuz or no modules")
    # The package leaves modules.dep to its postinst: make it here (kmod's
    # depmod reads arm64 modules as well as the host's).
    depmod = shutil.which("depmod") or "/usr/sbin/depmod"
    subprocess.run([depmod, "-b", str(into), modules[0].name], check=True, timeout=300)
    return images[0], modules[0]


def _normal(name: str) -> str:
    return name.replace("-", "_")


def _module_name(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    return _normal(base.split(".ko", 1)[0])


def load_order(module_dir: Path, wanted: tuple[str, ...] = WANTED_MODULES) -> list[str]:
    """Paths (relative to module_dir) of the wanted modules and their dependencies,
    dependencies first; modules built into the kernel are left out."""
    builtin = {
        _module_name(line)
        for line in (module_dir / "modules.builtin").read_text().split()
        if line.strip()
    }
    deps: dict[str, tuple[str, list[str]]] = {}
    for line in (module_dir / "modules.dep").read_text().splitlines():
        path, _, rest = line.partition(":")
        deps[_module_name(path)] = (path, rest.split())
    order: list[str] = []

    def visit(name: str) -> None:
        if name in builtin:
            return
        if name not in deps:
            raise BoardBuildError(f"kernel module {name} is neither built in nor in modules.dep")
        path, requires = deps[name]
        for dep in requires:
            visit(_module_name(dep))
        if path not in order:
            order.append(path)

    for name in wanted:
        visit(_normal(name))
    return order


def install_modules(
    module_dir: Path, root: Path, wanted: tuple[str, ...] = BOARD_MODULES
) -> list[str]:
    """Copy the wanted modules and their dependencies into root's /lib/modules/VERSION
    (decompressed, as the initramfs's) and index them with depmod; return their names."""
    version = module_dir.name
    # /lib is a relative symlink to usr/lib on a merged-/usr root; one to /usr/lib
    # would point at the host's modules, never to be written.
    modules = (root / "lib" / "modules").resolve()
    if not modules.is_relative_to(root.resolve()):
        raise BoardBuildError(f"{root}/lib/modules leads out of the root, to {modules}")
    target = modules / version
    order = load_order(module_dir, wanted)
    for relative in order:
        _copy_module(
            module_dir / relative, target / relative.removesuffix(".xz").removesuffix(".zst")
        )
    for index in MODULE_INDEXES:
        if (module_dir / index).exists():
            shutil.copy2(module_dir / index, target / index)
    depmod = shutil.which("depmod") or "/usr/sbin/depmod"
    subprocess.run([depmod, "-b", str(root), version], check=True, timeout=300)
    return [_module_name(relative) for relative in order]


def _copy_module(source: Path, target: Path) -> None:
    """Copy one module, decompressed: busybox's insmod takes only plain .ko files."""
    data = source.read_bytes()
    if source.suffix == ".xz":
        data = lzma.decompress(data)
    elif source.suffix == ".zst":
        data = subprocess.run(
            ["zstd", "-dc", str(source)], check=True, capture_output=True, timeout=60
        ).stdout
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def build_initramfs(module_dir: Path, busybox: Path, output: Path) -> list[str]:
    """Write a gzip'd newc initramfs to output; return the module names it loads."""
    order = load_order(module_dir)
    with tempfile.TemporaryDirectory(prefix="evboard-initramfs-") as tmp:
        root = Path(tmp)
        for sub in ("bin", "dev", "proc", "sys", "newroot", "modules"):
            (root / sub).mkdir()
        shutil.copy2(busybox, root / "bin" / "busybox")
        shutil.copy2(INIT_SCRIPT, root / "init")
        (root / "init").chmod(0o755)
        names = []
        for index, relative in enumerate(order):
            name = _module_name(relative)
            _copy_module(module_dir / relative, root / "modules" / f"{index:02d}-{name}.ko")
            names.append(name)
        files = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
        archive = subprocess.run(
            ["cpio", "--quiet", "-o", "-H", "newc", "--owner", "0:0"],
            cwd=root,
            input="\n".join(files).encode(),
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout
    with gzip.open(output, "wb", compresslevel=6) as out:
        out.write(archive)
    return names
