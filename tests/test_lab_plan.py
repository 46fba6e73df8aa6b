"""LAB.yaml (evbench.lab.plan) and labgrid:// URLs (boards/labgrid.py): read or refused;
labgrid-client's output (boards/_labgrid_client.py) read, as labgrid 26.0.1 printed it."""

import argparse
import os
from pathlib import Path

import pytest

from evbench.boards._labgrid_client import parse_place
from evbench.boards.labgrid import parse_labgrid_url
from evbench.boards.urls import transport_of
from evbench.cli import build_parser, evbench
from evbench.lab import plan
from evbench_core.errors import UserError

LAB = """
boards:
  - labgrid://am62x-a
  - board: labgrid://?tags=board=am62x,site=lab1
    name: any
    options: [--cpu, 1]
matrix:
  suites: [codec, link]
  profiles: [seed]
  codecs: ["json,protobuf", "json,cbor"]
options: [--quick]
retries: 2
place_timeout: 90
"""


def test_the_matrix_is_boards_times_suites_times_profiles_times_codecs(tmp_path: Path):
    path = tmp_path / "LAB.yaml"
    path.write_text(LAB)
    lab = plan.load(path)
    # 2 boards x 2 suites x 1 profile x 2 codec lists, worked out by hand.
    assert len(lab.entries) == 8
    assert (lab.retries, lab.place_timeout) == (2, 90.0)
    ids = [entry.id for entry in lab.entries]
    assert ids[:4] == [
        "am62x-a/codec-seed-json+protobuf",
        "am62x-a/codec-seed-json+cbor",
        "am62x-a/link-seed-json+protobuf",
        "am62x-a/link-seed-json+cbor",
    ]
    assert ids[4] == "any/codec-seed-json+protobuf"
    last = lab.entries[-1]
    assert last.options == ("--quick", "--cpu", "1")  # the lab's, then the board's
    argv = last.run_argv(Path("/l/runs/x"), 90.0)
    assert argv[:3] == ["run", "--board", "labgrid://?tags=board=am62x,site=lab1"]
    assert argv[argv.index("--suite") + 1] == "link"
    assert argv[argv.index("--codecs") + 1] == "json,cbor"
    assert argv[-3:] == ["--quick", "--cpu", "1"]


def _plan(**keys) -> dict:
    return {"boards": ["local"], "matrix": {}, **keys}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (_plan(nightly=True), "unknown key 'nightly' in the top"),
        (_plan(matrix={"codec": ["json"]}), "unknown key 'codec' in matrix"),
        (_plan(boards=[{"board": "local", "label": "x"}]), "unknown key 'label'"),
        ({"matrix": {}}, "'boards' is missing"),
        (_plan(boards=["ftp://x"]), "unsupported board"),
        (_plan(boards=["ssh://board?pyhton=3"]), "unknown board option"),
        (_plan(boards=["rfc2217://lab:99999"]), "bad port in 'rfc2217://lab:99999'"),
        (_plan(boards=["local", "local"]), "two boards are named 'local'"),
        # Two entries of one id: lab.json would record one's results under the other.
        (_plan(matrix={"codecs": ["json", "cbor", "json"]}), "matrix.codecs lists 'json' twice"),
        (_plan(matrix={"suites": ["link", "link"]}), "matrix.suites lists 'link' twice"),
        # Two spellings of one id (its codecs' "," is written "+"), named both.
        (
            _plan(matrix={"codecs": ["json,protobuf", "json+protobuf"]}),
            r"matrix codecs 'json,protobuf' and codecs 'json\+protobuf' make the same entry id"
            r" 'local/codec-seed-json\+protobuf'",
        ),
        (
            _plan(matrix={"suites": ["a-b", "a"], "profiles": ["c", "b-c"]}),
            "matrix suite 'a-b' profile 'c' and suite 'a' profile 'b-c' make the same entry id"
            r" 'local/a-b-c-json\+protobuf'",
        ),
        (_plan(options=["--out", "x"]), "may not give --out"),
        # argparse takes an unambiguous prefix for the option, and --opt=value for --opt x:
        # each of these would set what evbench lab sets per entry.
        (_plan(options=["--ou", "x"]), "--ou: it abbreviates --out"),
        (_plan(options=["--out=x"]), "may not give --out=x"),
        (_plan(options=["--ou=x"]), "--ou=x: it abbreviates --out"),
        (_plan(options=["--cod", "json"]), "abbreviates --codecs"),
        (_plan(options=["--su=link"]), "abbreviates --suite"),
        (_plan(options=["--pl", "1"]), "abbreviates --place-timeout"),
        # A board's options too, and a prefix of two reserved options (which argparse would
        # call ambiguous), named with both.
        (
            _plan(boards=[{"board": "local", "options": ["--p", "x"]}]),
            r"boards\[0\].options may not give --p: it abbreviates --profile or --place-timeout",
        ),
        (_plan(retries=9), "retries must be"),
        (_plan(matrix={"suites": []}), "matrix.suites must be"),
    ],
)
def test_a_bad_plan_is_refused_naming_what(document, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        plan.parse(document)


#: A value of each reserved option other than the one the entry below sets itself.
OTHER_VALUE = {"--board": "ssh://elsewhere", "--out": "elsewhere", "--suite": "link"}
OTHER_VALUE |= {"--profile": "other", "--codecs": "cbor", "--place-timeout": "7"}


def _entry_args(options: tuple[str, ...]) -> argparse.Namespace:
    board = plan.Board("local", "local", ())
    argv = plan.Entry(board, "codec", "seed", "json", options).run_argv(Path("lab/run"), 600.0)
    return build_parser(argv).parse_args(argv)


@pytest.mark.parametrize("reserved", plan.RESERVED_OPTIONS)
def test_every_spelling_argparse_takes_for_a_reserved_option_is_refused(reserved):
    """Each prefix of a reserved option, as `--opt value` and `--opt=value`: the real
    `evbench run` parser either lets it override the entry's own setting or refuses it
    as ambiguous (every entry would fail); the plan refuses it either way."""
    own = _entry_args(())
    dest = reserved[2:].replace("-", "_")
    value = OTHER_VALUE[reserved]
    for end in range(3, len(reserved) + 1):
        for spelling in ((reserved[:end], value), (f"{reserved[:end]}={value}",)):
            try:
                overridden = getattr(_entry_args(spelling), dest) != getattr(own, dest)
            except UserError as refused:  # argparse's own refusal: an ambiguous prefix
                overridden = "ambiguous option" in str(refused)
            assert overridden, spelling
            with pytest.raises(UserError, match=f"may not give {spelling[0]}"):
                plan.parse(_plan(options=list(spelling)))


def test_every_other_option_of_evbench_run_is_accepted_in_full():
    parser = build_parser(["run"])
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    flags = {flag for action in commands.choices["run"]._actions for flag in action.option_strings}
    # None of them is a prefix of a reserved one (--board-name is longer than --board).
    others = sorted(flags - set(plan.RESERVED_OPTIONS))
    assert "--board-name" in others and "--profile-name" in others
    for flag in others:
        assert plan.parse(_plan(options=[flag])).entries[0].options == (flag,)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # The flow sequence opened at "[" (9th character) is not closed where "matrix:"
        # puts a mapping value, at its ":" (7th character) on line 2.
        (
            "boards: [local\nmatrix: {}\n",
            "line 2, column 7: expected ',' or ']', but got ':'"
            " (while parsing a flow sequence that began at line 1, column 9)",
        ),
        # A tab cannot start a token in YAML: the first character of line 2.
        ("boards: [local]\n\tmatrix: {}\n", "line 2, column 1: found character '\\t'"),
        # A control character is refused while reading, before any parsing: no mark, only
        # its index in the text, which is line 3, column 3 ("# " before it).
        (
            "boards: [local]\nmatrix: {}\n# \x01\n",
            "line 3, column 3: unacceptable character #x0001: special characters are not allowed",
        ),
    ],
    ids=["parser", "scanner", "reader"],
)
def test_a_plan_that_is_not_yaml_is_one_error_line_saying_where(tmp_path, capsys, text, said):
    path = tmp_path / "LAB.yaml"
    path.write_text(text)
    assert evbench(["lab", "run", str(path), "--out", str(tmp_path / "lab")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"evbench: error: {path} is not valid YAML: {said}")
    assert err.count("\n") == 1, err  # one line: no quoted source, no caret


def test_a_plan_that_is_not_a_regular_file_or_too_long_is_refused_at_once(tmp_path: Path):
    fifo = tmp_path / "LAB.fifo"
    os.mkfifo(fifo)  # no writer: reading it would wait for ever
    for path in (tmp_path, fifo, Path("/dev/zero")):  # /dev/zero: read whole, without end
        with pytest.raises(UserError, match=f"the lab plan {path} is not a regular file"):
            plan.load(path)
    long = tmp_path / "LAB.yaml"
    long.write_text(LAB + "#" * (1 << 20))  # 1 MiB of comment past a valid plan
    with pytest.raises(UserError, match=f"the lab plan {long} is .* bytes, over 1048576"):
        plan.load(long)


def test_labgrid_urls_name_a_place_or_tags():
    place = parse_labgrid_url("labgrid://am62x-a?coordinator=lab:20408&dir=/tmp/w")
    found = (place.place, place.tags, place.coordinator, place.work_dir)
    assert found == ("am62x-a", (), "lab:20408", "/tmp/w")
    tags = parse_labgrid_url("labgrid://?tags=board=am62x,site=lab1&prio=3&via=serial")
    found = (tags.place, tags.tags, tags.prio, tags.via)
    assert found == (None, (("board", "am62x"), ("site", "lab1")), 3, "serial")
    assert transport_of("labgrid://am62x-a") == "labgrid"
    # A silent board is power-cycled after 60 s unless the URL says otherwise (0: never).
    assert place.recover_after == 60
    assert parse_labgrid_url("labgrid://a?recover_after=0").recover_after == 0
    assert parse_labgrid_url("labgrid://a?recover_after=90.5").recover_after == 90.5


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("labgrid://", "must name a place or tags"),
        ("labgrid://a?tags=board=x", "must name a place or tags"),
        ("labgrid://a?coordinator=lab", "coordinator must be HOST:PORT"),
        ("labgrid://a?colour=red", "unknown option"),
        ("labgrid://?tags=board", "bad tag 'board'"),
        ("labgrid://?tags=a=1,a=2", "gives a tag twice"),
        ("labgrid://a?via=usb", "via is ssh or serial"),
        ("labgrid://a?prio=high", "prio must be a whole number"),
        ("labgrid://a b", "bad place name"),
        ("labgrid://a?recover_after=-1", "recover_after must be 0 to 3600 seconds"),
        ("labgrid://a?recover_after=nan", "recover_after must be 0 to 3600 seconds"),
        ("labgrid://a?recover_after=soon", "recover_after must be 0 to 3600 seconds"),
    ],
)
def test_bad_labgrid_urls_are_refused(url, message):
    with pytest.raises(UserError, match=message):
        parse_labgrid_url(url)


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
    assert (service.params["port"], service.params["username"]) == (2222, "root")
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
