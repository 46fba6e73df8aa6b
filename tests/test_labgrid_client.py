"""Reading labgrid-client's printed output (boards/_labgrid_client.py), from text labgrid
26.0.1 printed on loopback (copied here from a real session)."""

from __future__ import annotations

import pytest

from evbench.boards._labgrid_client import parse_place

SHOW_ACQUIRED = """Place 'p1':
  tags: board=am62x, site=lab1
  matches:
    exp1/board1/*
  acquired: vm/alice
  acquired resources:
    exp1/board1/NetworkSerialPort/RawSerialPort
    exp1/board1/NetworkService/NetworkService
  created: 2026-12-01 03:24:41.300562
  changed: 2026-12-01 03:24:53.683227
Acquired resource 'NetworkService' (exp1/board1/NetworkService/NetworkService):
  {'acquired': 'p1',
   'avail': True,
   'cls': 'NetworkService',
   'params': {'address': '127.0.0.1',
              'extra': {'proxy': 'localhost', 'proxy_required': False},
              'port': 2222,
              'username': 'root'}}
Acquired resource 'RawSerialPort' (exp1/board1/NetworkSerialPort/RawSerialPort):
  {'acquired': 'p1',
   'avail': True,
   'cls': 'NetworkSerialPort',
   'params': {'extra': {'path': '/dev/null',
                        'proxy': 'localhost',
                        'proxy_required': False},
              'host': '127.0.0.1',
              'port': 41234,
              'speed': 115200}}
"""

SHOW_FREE = """Place 'p2':
  tags:
  matches:
    exp1/board2/*
  acquired: None
  acquired resources:
  created: 2026-12-01 03:24:41.300562
  changed: 2026-12-01 03:26:03.114780
"""

#: `labgrid-client -p pb show` after its exporter was killed (SIGKILL) while the place was
#: acquired, from a real labgrid 26.0.1 session on loopback: the resource is orphaned.
SHOW_ORPHANED = """Place 'pb':
  matches:
    exp2/board-b/*
  acquired: vm/x
  acquired resources:
    exp2/board-b/NetworkService/NetworkService
  created: 2026-12-01 06:08:59.390796
  changed: 2026-12-01 06:09:34.126096
Orphaned resource 'NetworkService' (exp2/board-b/NetworkService/NetworkService)
"""


def test_an_acquired_place_with_its_resources():
    place = parse_place(SHOW_ACQUIRED)
    assert (place.name, place.tags) == ("p1", {"board": "am62x", "site": "lab1"})
    assert place.acquired == "vm/alice"
    service, serial = place.resources
    assert (service.cls, service.exporter) == ("NetworkService", "exp1")
    assert service.params["port"] == 2222
    assert service.params["username"] == "root"
    found = (serial.cls, serial.params["host"], serial.params["port"])
    assert found == ("NetworkSerialPort", "127.0.0.1", 41234)
    # The manifest's record leaves labgrid's proxy bookkeeping out.
    assert service.public()["params"] == {"address": "127.0.0.1", "port": 2222, "username": "root"}
    # Only a required proxy is a proxy.
    assert (service.proxy, serial.proxy) == (None, None)  # 'proxy_required': False above
    isolated = SHOW_ACQUIRED.replace("'proxy_required': False", "'proxy_required': True")
    assert [r.proxy for r in parse_place(isolated).resources] == ["localhost", "localhost"]


# An orphaned resource is not one the place still has: what the reconnect check reads
# as "exporter gone".
@pytest.mark.parametrize(
    ("text", "name", "acquired"),
    [(SHOW_FREE, "p2", None), (SHOW_ORPHANED, "pb", "vm/x")],
    ids=["free", "orphaned"],
)
def test_a_place_without_tags_or_resources(text, name, acquired):
    place = parse_place(text)
    assert (place.name, place.tags, place.acquired, place.resources) == (name, {}, acquired, [])
