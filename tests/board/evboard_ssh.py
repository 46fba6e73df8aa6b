"""An ~/.ssh for the virtual board: its host key from the build, the test key as identity.

Shared by the e2e fixture (evboard_fixture.py) and benchmarks/board_costs.py, which
boots the same board outside pytest. Not one of the image's inputs (evboard_image.py
INPUTS): changing it does not rebuild the cached board.
"""

from pathlib import Path

from evboard_qemu import VirtualBoard


def write_ssh_home(home: Path, board: VirtualBoard) -> Path:
    """Write home/.ssh (known_hosts pinned to this boot's port, config); return the config."""
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(mode=0o700, parents=True)
    known_hosts = ssh_dir / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{board.ssh_port} {board.image.info['host_key']}\n")
    config = ssh_dir / "config"
    config.write_text(
        "Host 127.0.0.1\n"
        f"    IdentityFile {board.image.ssh_key}\n"
        f"    UserKnownHostsFile {known_hosts}\n"
        "    StrictHostKeyChecking yes\n"
        "    IdentitiesOnly yes\n"
    )
    board.image.ssh_key.chmod(0o600)
    return config
