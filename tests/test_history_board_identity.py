"""The board identity, read from a real directory tree laid out as /proc and /sys are.

Each case builds the files a board has (device-tree serial, network
interfaces with their device links, machine-id) and checks which one wins.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evbench_agent.platform import board_identity


def _interface(root: Path, name: str, mac: str, physical: bool = True, kind: str = "1") -> None:
    interface = root / "sys/class/net" / name
    interface.mkdir(parents=True)
    (interface / "address").write_text(mac + "\n")
    (interface / "type").write_text(kind + "\n")
    if physical:
        (interface / "device").mkdir()


def _board(root: Path) -> Path:
    (root / "proc/device-tree").mkdir(parents=True)
    (root / "proc/device-tree/serial-number").write_bytes(b"1A2B3C4D\0")
    _interface(root, "eth0", "34:08:e1:80:8e:01")
    (root / "etc").mkdir()
    (root / "etc/machine-id").write_text("0123456789abcdef0123456789abcdef\n")
    return root


def test_a_given_name_wins(tmp_path):
    assert board_identity.identify("bench-3", root=_board(tmp_path)) == {
        "id": "name:bench-3", "source": "--board-name", "place": None,
    }  # fmt: skip


def test_the_lab_place_comes_next(tmp_path):
    identity = board_identity.identify(None, place="rack2/slot4", root=_board(tmp_path))
    assert identity["id"] == "place:rack2/slot4" and identity["source"] == "lab place"


def test_the_device_tree_serial_number_before_the_mac(tmp_path):
    identity = board_identity.identify(root=_board(tmp_path))
    assert identity == {"id": "serial:1A2B3C4D", "source": "device-tree serial-number",
                        "place": None}  # fmt: skip


def test_the_first_physical_ethernet_mac_without_a_serial(tmp_path):
    root = _board(tmp_path)
    (root / "proc/device-tree/serial-number").unlink()
    _interface(root, "br0", "02:00:00:00:00:09", physical=False)  # a bridge: no device
    _interface(root, "can0", "00:00:00:00:00:00", kind="280")  # CAN: not Ethernet
    _interface(root, "eth1", "34:08:e1:80:8e:02")
    identity = board_identity.identify(root=root)
    assert identity["id"] == "mac:34:08:e1:80:8e:01"
    assert identity["source"] == "Ethernet MAC of eth0"


def test_the_machine_id_last(tmp_path):
    root = _board(tmp_path)
    (root / "proc/device-tree/serial-number").unlink()
    (root / "sys/class/net/eth0/device").rmdir()
    identity = board_identity.identify(root=root)
    assert identity["id"] == "machine-id:0123456789abcdef0123456789abcdef"
    assert identity["source"] == "/etc/machine-id"


def test_never_the_hostname(tmp_path):
    identity = board_identity.identify(root=tmp_path)  # nothing at all
    assert identity["id"] is None and "none found" in identity["source"]


@pytest.mark.parametrize("bad", ["bench 3", "", "-x", "a" * 129, "é"])
def test_a_bad_name_is_refused(bad):
    with pytest.raises(ValueError, match="board name"):
        board_identity.check_name(bad)


def test_the_manifest_of_a_run_carries_it(tmp_path):
    from evbench.history.indexing import board_identity as stored

    manifest = {"board_identity": board_identity.identify("bench-3"), "platform": {}}
    assert stored(manifest) == ("name:bench-3", "--board-name")
