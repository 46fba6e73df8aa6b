"""The board identity, read from a real directory tree laid out as /proc and /sys are.

The tree holds what a board has (device-tree serial, network interfaces with their
device links, machine-id); each source is taken away in turn to show which one wins.
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


def test_each_source_wins_until_it_is_taken_away_and_never_the_hostname(tmp_path):
    root = tmp_path / "board"
    (root / "proc/device-tree").mkdir(parents=True)
    (root / "proc/device-tree/serial-number").write_bytes(b"1A2B3C4D\0")
    _interface(root, "eth0", "34:08:e1:80:8e:01")
    (root / "etc").mkdir()
    (root / "etc/machine-id").write_text("0123456789abcdef0123456789abcdef\n")
    assert board_identity.identify("bench-3", root=root) == {
        "id": "name:bench-3", "source": "--board-name", "place": None,
    }  # fmt: skip
    identity = board_identity.identify(None, place="rack2/slot4", root=root)
    assert identity["id"] == "place:rack2/slot4" and identity["source"] == "lab place"
    assert board_identity.identify(root=root) == {
        "id": "serial:1A2B3C4D", "source": "device-tree serial-number", "place": None,
    }  # fmt: skip
    (root / "proc/device-tree/serial-number").unlink()
    _interface(root, "br0", "02:00:00:00:00:09", physical=False)  # a bridge: no device
    _interface(root, "can0", "00:00:00:00:00:00", kind="280")  # CAN: not Ethernet
    _interface(root, "eth1", "34:08:e1:80:8e:02")
    identity = board_identity.identify(root=root)
    assert identity["id"] == "mac:34:08:e1:80:8e:01"
    assert identity["source"] == "Ethernet MAC of eth0"
    (root / "sys/class/net/eth0/device").rmdir()  # the next physical one by name
    assert board_identity.identify(root=root)["id"] == "mac:34:08:e1:80:8e:02"
    (root / "sys/class/net/eth1/device").rmdir()
    identity = board_identity.identify(root=root)
    assert identity["id"] == "machine-id:0123456789abcdef0123456789abcdef"
    assert identity["source"] == "/etc/machine-id"
    identity = board_identity.identify(root=tmp_path / "nothing")  # nothing at all
    assert identity["id"] is None and "none found" in identity["source"]


@pytest.mark.parametrize("bad", ["bench 3", "", "-x", "a" * 129, "é"])
def test_a_bad_name_is_refused(bad):
    with pytest.raises(ValueError, match="board name"):
        board_identity.check_name(bad)


def test_the_manifest_of_a_run_carries_it(tmp_path):
    from evbench.history.indexing import board_identity as stored

    manifest = {"board_identity": board_identity.identify("bench-3"), "platform": {}}
    assert stored(manifest) == ("name:bench-3", "--board-name")
