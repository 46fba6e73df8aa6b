"""Reading labgrid-client's printed output (boards/labgrid_client.py), from text labgrid
26.0.1 printed on loopback (copied here from a real session)."""

from __future__ import annotations

from evbench.boards.labgrid_client import parse_place

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


def test_an_acquired_place_with_its_resources():
    place = parse_place(SHOW_ACQUIRED)
    assert place.name == "p1"
    assert place.tags == {"board": "am62x", "site": "lab1"}
    assert place.acquired == "vm/alice"
    service, serial = place.resources
    assert (service.cls, service.exporter) == ("NetworkService", "exp1")
    assert service.params["port"] == 2222
    assert service.params["username"] == "root"
    assert (serial.cls, serial.params["host"], serial.params["port"]) == (
        "NetworkSerialPort",
        "127.0.0.1",
        41234,
    )
    # The manifest's record leaves labgrid's proxy bookkeeping out.
    assert service.public()["params"] == {"address": "127.0.0.1", "port": 2222, "username": "root"}


def test_a_free_place_without_tags_or_resources():
    place = parse_place(SHOW_FREE)
    assert (place.name, place.tags, place.acquired, place.resources) == ("p2", {}, None, [])
