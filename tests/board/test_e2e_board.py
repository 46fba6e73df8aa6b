"""End-to-end: evbench's own commands against the virtual ARM64 board (QEMU).

The board is a real aarch64 Debian 12 with its own kernel, console, sshd,
python3 and Debian's protobuf 4.21.12; nothing here is faked. Every check
goes through `evbench` as a user would type it, except the read-backs,
which use OpenSSH and the eMMC file itself so they do not trust evbench.
"""

import hashlib
import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_command
from evboard_fixture import (  # noqa: F401 (fixture `evboard`)
    ONE_WORKER,
    BoardSession,
    evboard_session,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(2400)]

QUICK_RUN = (
    "--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf", "--quick",
    *ONE_WORKER,
)  # fmt: skip


def _guest_protobuf(session: BoardSession) -> str:
    return session.ssh("python3 -c 'import google.protobuf as p; print(p.__version__)'").strip()


def _check_run_directory(out: Path, session: BoardSession) -> dict:
    """A complete, verified run that says it ran on the board's aarch64 and protobuf."""
    assert (out / "complete").is_file(), f"the run in {out} is partial: {sorted(out.iterdir())}"
    sums = subprocess.run(
        ["sha256sum", "--check", "--strict", "SHA256SUMS"],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert sums.returncode == 0, sums.stdout + sums.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    platform = manifest["platform"]
    assert platform["machine"] == "aarch64"
    assert platform["kernel"] == session.board.image.info["kernel_package"][len("linux-image-") :]
    assert platform["protobuf"] == _guest_protobuf(session) == "4.21.12"
    summary = json.loads((out / "summary.json").read_text())
    codec_records = [record for record in summary["records"] if record["suite"] == "codec"]
    # The machine's state around each worker (contention_* records) belongs to no codec.
    machine = [r for r in codec_records if r["metric"].startswith("contention_")]
    assert machine and all(r["codec"] is None for r in machine)
    codecs = {r["codec"] for r in codec_records if not r["metric"].startswith("contention_")}
    assert codecs == {"json", "protobuf"}, codecs
    return manifest


def test_console_carries_kernel_boot_messages(evboard: BoardSession) -> None:
    """The console evbench talks to is a real one: the kernel booted on it."""
    transcript = evboard.board.console_log.read_text(errors="replace")
    assert "Booting Linux on physical CPU" in transcript
    assert "login:" in transcript


def test_a_second_build_reuses_the_cached_board(evboard: BoardSession) -> None:
    image = evboard.board.image
    disk_before = image.disk.stat().st_mtime_ns
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("evboard_image.py"))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == image.directory
    assert "reusing the cached board" in done.stderr
    assert image.disk.stat().st_mtime_ns == disk_before


def test_diag_over_the_serial_console(evboard: BoardSession, tmp_path: Path) -> None:
    done = evboard.evbench("diag", "--board", evboard.serial_url, "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    reports = list(tmp_path.rglob("*.json"))
    assert reports, f"diag wrote no JSON into {tmp_path}"
    report = reports[0].read_text()
    kernel = evboard.board.image.info["kernel_package"][len("linux-image-") :]
    assert kernel in report and kernel in done.stdout
    assert "aarch64" in report


def test_deploy_then_a_user_schema_run_over_ssh(evboard: BoardSession, tmp_path: Path) -> None:
    """Deployed over SSH, the agent measures a team's own .proto and samples, compiled
    here, on a board without protoc. (The seed profile runs on the board over the serial
    console below and with the native harness: one more SSH run of it would cost the
    emulator about 20 CPU seconds and check nothing new.)"""
    deployed = evboard.evbench("deploy", "--board", evboard.ssh_url)
    assert deployed.returncode == 0, deployed.stderr
    data = Path(__file__).resolve().parent.parent / "data" / "bms"
    message = "evbench.example.BmsStatus"
    assert evboard.ssh("command -v protoc || echo absent").strip() == "absent"
    out = tmp_path / "run"
    done = evboard.evbench(
        "run", "--board", evboard.ssh_url, "--suite", "codec", "--codecs", "json,protobuf",
        "--quick", *ONE_WORKER, "--schema", str(data / "bms.proto"), "--message", message,
        "--samples", str(data / "bms_samples.jsonl"), "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = _check_run_directory(out, evboard)  # verified, aarch64, protobuf 4.21.12
    assert manifest["status"] == "complete"
    assert manifest["spec"]["schema"]["message"] == message
    assert manifest["spec"]["profiles"] == [f"schema:{message}"]
    assert f"schema:{message}" in done.stdout  # the comparison table names the message


def _flash_image(directory: Path) -> tuple[Path, Path, bytes]:
    """A 16 MiB sparse image with two data ranges, its bmap (by bmaptool), xz-compressed."""
    image = directory / "board-test.img"
    data = hashlib.shake_256(b"evboard flash test").digest(2 * 1024 * 1024)
    with image.open("wb") as out:
        out.truncate(16 * 1024 * 1024)
        out.seek(0)
        out.write(data[: 1024 * 1024])
        out.seek(9 * 1024 * 1024)
        out.write(data[1024 * 1024 :])
    bmap = directory / "board-test.img.bmap"
    subprocess.run(
        [require_command("bmaptool"), "create", "-o", str(bmap), str(image)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    plain = image.read_bytes()
    compressed = directory / "board-test.img.xz"
    compressed.write_bytes(lzma.compress(plain))
    image.unlink()
    return compressed, bmap, plain


def test_flash_the_emmc_over_ssh_and_read_it_back(evboard: BoardSession, tmp_path: Path) -> None:
    image, bmap, plain = _flash_image(tmp_path)
    done = evboard.evbench(
        "flash", str(image), "--bmap", str(bmap), "--board", evboard.ssh_url,
        "--device", "/dev/vdb", "--allow-fixed", "--yes",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    want = hashlib.sha256(plain).hexdigest()
    on_board = evboard.ssh(f"head -c {len(plain)} /dev/vdb | sha256sum").split()[0]
    assert on_board == want, "the board reads back other bytes than the image"
    with evboard.board.emmc.open("rb") as emmc:
        assert hashlib.sha256(emmc.read(len(plain))).hexdigest() == want


def test_quick_run_over_the_serial_console(evboard: BoardSession, tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = evboard.evbench("run", "--board", evboard.serial_url, *QUICK_RUN, "--out", str(out))
    assert done.returncode == 0, done.stderr
    _check_run_directory(out, evboard)
