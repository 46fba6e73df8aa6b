"""evbench flash --board: write a board's eMMC from a Linux running on the board.

The host streams the mapped ranges over the board's transport into
emmc_receiver.py (run with the board's python3), which writes them, syncs,
and reads every range back with the page cache dropped. The host checks
each range against the bmap as it streams, exactly as for a local card.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shlex
from collections.abc import Callable
from pathlib import Path

from evbench.boards import Board, open_board
from evbench.boards.base import CommandResult, PipedCommand
from evbench.flash.local import check_target
from evbench.flash.plan import FlashPlan
from evbench.flash.progress import FlashProgress
from evbench.flash.target import Target, confirm
from evbench.flash.writer import FlashReport, write_image
from evbench_core.errors import CheckFailed, EvbenchError, UserError

HERE = Path(__file__).resolve().parent
RECEIVER_FILES = ("blockdevs.py", "readback.py", "emmc_receiver.py")
#: One W frame: the receiver refuses larger ones.
FRAME = 1024 * 1024
#: The board syncs and reads everything back after the last byte: allow for a slow eMMC.
FINISH_TIMEOUT_BASE = 120.0
FINISH_SECONDS_PER_MIB = 0.5
#: TI's eMMC boot partition layout for the AM62x (in 512-byte blocks: 0x0, 0x400, 0x1400),
#: the same offsets U-Boot's `mmc write` and the SDK's dfu_alt_info use.
BOOTLOADER_LAYOUT = (
    ("tiboot3.bin", 0x0, 0x400),
    ("tispl.bin", 0x400, 0x1000),
    ("u-boot.img", 0x1400, 0x2000),
)
BOOT_SETTINGS = (
    "in U-Boot: 'mmc partconf 0 1 1 1' and 'mmc bootbus 0 2 0 0' (or on Linux with mmc-utils: "
    "'mmc bootpart enable 1 1 DEVICE' and 'mmc bootbus set single_backward x1 x8 DEVICE')"
)
log = logging.getLogger(__name__)
SWITCHES = "set the boot mode switches to eMMC boot (see the board's user guide)"


class BoardSink:
    """Frames for emmc_receiver.py: W (data), R (a range to read back), E (end)."""

    def __init__(self, board: Board, command: PipedCommand, mapped_bytes: int) -> None:
        self.board = board
        self.command = command
        self.mapped_bytes = mapped_bytes
        self.finished = False

    def _send(self, data: bytes) -> None:
        try:
            self.command.write(data)
        except OSError as error:
            self.finished = True
            result = self.command.finish(30.0)
            raise CheckFailed(
                f"the receiver on {self.board.url} stopped: {_receiver_error(result)}",
                hint="the device on the board may have failed or disappeared; flash again",
            ) from error

    def write(self, offset: int, data: bytes) -> None:
        for start in range(0, len(data), FRAME):
            piece = data[start : start + FRAME]  # a chunk within one frame: itself, no copy
            self._send(b"W %d %d\n" % (offset + start, len(piece)))
            self._send(piece)

    def end_range(
        self, offset: int, length: int, algorithm: str, digest: str, checked: bool
    ) -> None:
        self._send(f"R {offset} {length} {algorithm} {digest}\n".encode("ascii"))

    def abort(self) -> None:
        """Stop the receiver without the end frame: it exits, reporting a broken stream."""
        if not self.finished:
            self.finished = True
            self.command.finish(30.0)

    def finish(self) -> list[str]:
        self._send(b"E\n")
        self.finished = True
        timeout = FINISH_TIMEOUT_BASE + FINISH_SECONDS_PER_MIB * self.mapped_bytes / 2**20
        result = self.command.finish(timeout)
        answer = _answer(result)
        log.debug("the receiver on %s answered: %s", self.board.url, answer)
        if result.returncode != 0 or not answer.get("ok"):
            raise CheckFailed(f"flashing on {self.board.url} failed: {_receiver_error(result)}")
        return [f"{answer['ranges']} range(s) read back on the board after sync, cache dropped"]


def _answer(result: CommandResult) -> dict:
    lines = result.stdout.decode(errors="replace").strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except ValueError:
        answer = {}
    return answer if isinstance(answer, dict) else {}


def _receiver_error(result: CommandResult) -> str:
    answer = _answer(result)
    if "error" in answer:
        return str(answer["error"])
    tail = result.stderr.decode(errors="replace").strip().splitlines()[-1:]
    return f"exit {result.returncode}: {' '.join(tail) or 'no output'}"


class Receiver:
    """emmc_receiver.py copied to a temporary directory on the board."""

    def __init__(self, board: Board) -> None:
        self.board = board
        made = board.run(["mktemp", "-d", "/tmp/evbench-flash.XXXXXX"], timeout=30)
        if not made.ok:
            raise UserError(f"cannot make a temporary directory on {board.url}")
        self.directory = made.stdout.decode().strip()
        for name in RECEIVER_FILES:
            board.put(HERE / name, f"{self.directory}/{name}")
        log.info("the flash receiver is on %s in %s", board.url, self.directory)
        self.argv = [board.python, f"{self.directory}/emmc_receiver.py"]

    def inspect(self, device: str) -> dict:
        result = self.board.run([*self.argv, "inspect", device], timeout=60)
        if not result.ok:
            raise UserError(
                f"cannot inspect {device} on {self.board.url}: {_receiver_error(result)}"
            )
        answer = _answer(result)
        log.debug("%s on %s: %s", device, self.board.url, answer)
        return answer

    def start(self, device: str, image_size: int | None, unlock_boot: bool = False) -> PipedCommand:
        argv = [*self.argv, "write", device]
        argv += ["--size", str(image_size)] if image_size is not None else []
        log.info("streaming the image to %s on %s", device, self.board.url)
        return self.board.pipe([*argv, "--unlock-boot"] if unlock_boot else argv)

    def remove(self) -> None:
        self.board.run(["rm", "-rf", self.directory], timeout=30)


def check_device(info: dict, device: str, url: str) -> Target:
    """Refuse what the receiver would refuse, before any data is sent (its size is
    checked against the image by FlashPlan.check_fits)."""
    if info.get("kind") not in ("block", "file"):
        raise UserError(
            f"{device} on {url} is {info.get('kind', 'unknown')}, not a block device or file",
            hint="the eMMC is usually /dev/mmcblk0 (see 'lsblk' on the board)",
        )
    if info.get("busy"):
        raise UserError(
            f"refusing to write {device} on {url}: it is in use ({info['busy']}); "
            "nothing was written",
            hint="boot the board from its SD card, so the eMMC is not the running system",
        )
    if info.get("read_only"):
        raise UserError(f"{device} on {url} is read-only")
    return Target(Path(device), info["kind"] == "block", info.get("size"), info.get("model", ""))


def load_bootloader(directory: Path) -> list[tuple[str, int, bytes]]:
    """(name, byte offset, data) of tiboot3.bin, tispl.bin, u-boot.img, checked to fit."""
    missing = [name for name, _, _ in BOOTLOADER_LAYOUT if not (directory / name).is_file()]
    if missing:
        raise UserError(f"{directory} lacks {', '.join(missing)}", hint="give the deploy directory")
    blobs = []
    for name, block, blocks in BOOTLOADER_LAYOUT:
        data = (directory / name).read_bytes()
        if len(data) > blocks * 512:
            raise UserError(f"{name} ({len(data)} bytes) does not fit its {blocks * 512}-byte slot")
        blobs.append((name, block * 512, data))
    return blobs


def write_bootloader(
    receiver: Receiver,
    blobs: list[tuple[str, int, bytes]],
    partition: str,
    announce: Callable[[str], None],
) -> None:
    """The blobs at TI's offsets in the eMMC boot partition, read back on the board."""
    info = receiver.inspect(partition)
    check_device(info, partition, receiver.board.url)
    command = receiver.start(partition, None, unlock_boot=True)
    sink = BoardSink(receiver.board, command, sum(len(d) for _, _, d in blobs))
    for _name, offset, data in blobs:
        sink.write(offset, data)
        sink.end_range(offset, len(data), "sha256", hashlib.sha256(data).hexdigest(), False)
    sink.finish()
    announce(
        f"bootloader written to {partition}: "
        + ", ".join(f"{name} at 0x{offset:x}" for name, offset, _ in blobs)
    )


def configure_boot(
    board: Board, device: str, wrote_bootloader: bool, announce: Callable[[str], None]
) -> None:
    """Select boot partition 1 with mmc-utils when the board has it; otherwise say what to do."""
    name = Path(device).name
    has_mmc = board.run(["sh", "-c", "command -v mmc"], timeout=30).ok
    if wrote_bootloader and has_mmc and name.startswith("mmcblk") and device.startswith("/dev/"):
        for argv in (
            ["mmc", "bootpart", "enable", "1", "1", device],
            ["mmc", "bootbus", "set", "single_backward", "x1", "x8", device],
        ):
            result = board.run(argv, timeout=60)
            if not result.ok:
                raise EvbenchError(
                    f"'{shlex.join(argv)}' failed on {board.url}: "
                    f"{result.stderr.decode(errors='replace').strip()}"
                )
        announce(f"boot partition 1 enabled on {device}; still needed: {SWITCHES}")
        return
    needed = (
        []
        if wrote_bootloader
        else [
            "write tiboot3.bin, tispl.bin and u-boot.img to the boot partition (--bootloader DIR)"
        ]
    )
    needed += [BOOT_SETTINGS.replace("DEVICE", device), SWITCHES]
    announce("to boot from eMMC, still needed: " + "; ".join(needed))


def flash_board(
    board_url: str,
    plan: FlashPlan,
    device: str,
    *,
    bootloader: Path | None = None,
    boot_partition: str | None = None,
    assume_yes: bool = False,
    allow_fixed: bool = False,
    reboot_after: bool = False,
    accept_new_host_key: bool = False,
    announce: Callable[[str], None],
) -> FlashReport:
    """Write `plan` to `device` on the board at `board_url`, verified on the board."""
    # Everything that can be refused is checked before the first byte is written.
    blobs = load_bootloader(bootloader) if bootloader else None
    partition = boot_partition or f"{device}boot0"
    with open_board(board_url, accept_new_host_key=accept_new_host_key) as board:
        if board.is_local:
            # The board is this machine: its device is one of the host's, so the host's own
            # checks apply too (the receiver cannot know the image is the target, nor
            # that a fixed disk needs --allow-fixed).
            check_target(Path(device), plan, allow_fixed)
        receiver = Receiver(board)
        try:
            target = check_device(receiver.inspect(device), device, board.url)
            # the size the board reported (sysfs), against the bmap's, the plain file's,
            # or the xz index's or zstd frames' size of the image
            image_size = plan.check_fits(target, announce, f" on {board.url}")
            if blobs is not None:
                check_device(receiver.inspect(partition), partition, board.url)
            confirm(target, f"{plan.describe()} (on {board.url})", assume_yes)
            announce(f"flashing {plan.describe()} to {device} on {board.url}")
            command = receiver.start(device, image_size)
            sink = BoardSink(board, command, plan.bytes_to_write or 0)
            try:
                with plan.source, FlashProgress(plan.bytes_to_write, "flash") as progress:
                    report = write_image(plan.source, sink, plan.bmap, progress)
            except BaseException:
                sink.abort()
                raise
            announce(report.summary())
            if blobs is not None:
                write_bootloader(receiver, blobs, partition, announce)
            configure_boot(board, device, blobs is not None, announce)
        finally:
            receiver.remove()
        if reboot_after:
            reboot(board)
            announce(f"{board.url} is rebooting")
    return report


def reboot(board: Board) -> None:
    try:
        board.run(["reboot"], timeout=30)
    except EvbenchError as error:  # the connection may drop as the board goes down
        log.info("reboot requested (%s)", error)
