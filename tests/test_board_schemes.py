"""The registry of board URL schemes (boards/urls.py) against what depends on it.

Each scheme is declared once, by `@scheme` on its parser, with a URL of it
(`example`): every registered scheme must parse its example and open a Board that
writes every required method of the Board protocol, and its forms must be rows of
docs/boards.md's table, so a new transport needs no line here. The schemes known
when this was written are checked against expectations written by hand (a URL of
each, the transport and class it opens).
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evbench.boards import Board, BoardOptions, RemoteBoard, open_board
from evbench.boards.urls import scheme, scheme_of, schemes, transport_of
from evbench_core.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
BOARDS_DOC = ROOT / "docs/boards.md"

#: Worked out by hand for the schemes known when this was written: a URL of each, the
#: transport, and the Board class that opens it.
EXPECTED = {
    "local": ("local", "local", "LocalBoard"),
    "ssh": ("ssh://root@192.0.2.7:2222", "ssh", "SshBoard"),
    "serial": ("serial:///dev/ttyUSB0?baud=115200", "serial", "SerialBoard"),
    "rfc2217": ("rfc2217://lab:7000", "serial", "SerialBoard"),
    "socket": ("socket://lab:4001", "serial", "SerialBoard"),
    "labgrid": ("labgrid://am62x-1", "labgrid", "LabgridBoard"),
}
NAMES = [entry.name for entry in schemes()]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_url_of_each_known_scheme_names_its_transport_and_board(name):
    url, transport, board = EXPECTED[name]
    entry = scheme_of(url)
    assert (entry.name, entry.transport, transport_of(url)) == (name, transport, transport)
    entry.parse(url)  # a UserError here fails the test
    assert entry.board_class().__name__ == board


@pytest.mark.parametrize("entry", schemes(), ids=NAMES)
def test_each_registered_scheme_parses_its_example_and_opens_a_complete_board(entry):
    assert scheme_of(entry.example) == entry
    entry.parse(entry.example)  # a UserError here fails the test
    cls = entry.board_class()
    assert issubclass(cls, Board)
    assert not inspect.isabstract(cls), f"{cls.__name__} lacks {sorted(cls.__abstractmethods__)}"


def test_a_transport_missing_a_required_method_cannot_be_made():
    class HalfBoard(RemoteBoard):  # put and get are missing
        @classmethod
        def from_url(cls, url: str, options: BoardOptions) -> Board:
            return cls()

        def run(self, argv, timeout, stdin=None):
            raise AssertionError

        def stream(self, argv):
            raise AssertionError

    with pytest.raises(TypeError, match="abstract") as raised:
        HalfBoard.from_url("half://x", BoardOptions())
    assert "get" in str(raised.value) and "put" in str(raised.value)


@pytest.mark.parametrize(
    "url",
    ["telnet://lab:23", "/dev/ttyUSB0", "ttyUSB0", "local://x", "ssh", "", "http://[x"],
)
def test_an_unknown_scheme_is_refused_naming_the_known_ones(url):
    # A bare device path is not a form of the serial console: it is refused too.
    with pytest.raises(UserError, match="unsupported board") as raised:
        open_board(url)
    for known in ("local", "ssh://", "serial:///dev/TTY", "rfc2217://", "socket://", "labgrid://"):
        assert known in raised.value.hint


@pytest.mark.parametrize(
    "url", ["ssh://root:Hunter2-pw@192.0.2.7", "rfc2217://lab:Hunter2-pw@192.0.2.7:4001"]
)
def test_a_password_in_a_board_url_is_refused_without_repeating_it(url):
    with pytest.raises(UserError, match="must not hold a password") as raised:
        open_board(url)
    said = f"{raised.value} {raised.value.hint}"
    assert "Hunter2-pw" not in said and "EVBENCH_PASSWORD" in said
    # As a user meets it: one line, exit 2, the password in no output.
    done = subprocess.run(
        [sys.executable, "-m", "evbench", "diag", "--board", url],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Hunter2-pw" not in done.stdout + done.stderr


def test_power_cycle_is_refused_before_a_transport_without_a_power_switch_is_opened():
    # The URL names no reachable board: the refusal must come before any connection.
    with pytest.raises(UserError, match="--power-cycle needs") as raised:
        open_board("ssh://root@192.0.2.7", power_cycle=True)
    assert "(labgrid://)" in str(raised.value)


def test_a_scheme_registered_twice_is_a_bug():
    with pytest.raises(ValueError, match="'ssh' is registered twice"):
        scheme("ssh", "ssh://HOST", transport="ssh", board="x:Y", example="ssh://HOST")(str)
    assert [entry.name for entry in schemes()] == NAMES


def _table_rows(text: str) -> dict[str, str]:
    """docs/boards.md's scheme table: the URL form of each row and its module cell."""
    section = text.split("| URL | transport | module |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in section.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        rows[cells[0].strip("`")] = cells[2]
    return rows


def test_the_docs_table_lists_every_registered_form_with_its_module():
    rows = _table_rows(BOARDS_DOC.read_text())
    forms = {form: entry for entry in schemes() for form in entry.forms}
    assert set(rows) == set(forms)
    for form, entry in forms.items():
        path = entry.board.split(":")[0].removeprefix("evbench.").replace(".", "/")
        assert f"`{path}.py`" in rows[form] or f"`{path}/`" in rows[form], (form, rows[form])


def _listed(text: str, heading: str) -> set[str]:
    """The methods named at the start of each item of the list after `heading`."""
    block = text.split(heading, 1)[1].split("\n\n", 2)[1]
    names = set()
    for item in block.split("\n- "):
        names.update(re.findall(r"`(\w+)\(", item.split(":", 1)[0]))
    return names


def test_the_protocol_guide_lists_what_the_code_requires_and_provides():
    text = BOARDS_DOC.read_text()
    required = _listed(text, "Required (abstract in `Board`):")
    optional = _listed(text, "Optional (`Board` has a default")
    assert required == set(Board.__abstractmethods__)
    public = {
        name for name in vars(Board) if not name.startswith("_") and callable(getattr(Board, name))
    }
    assert optional == public - required


def test_the_board_help_lists_every_scheme():
    for command in ("run", "console"):
        argv = [sys.executable, "-m", "evbench", command, "--help"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
        text = " ".join(done.stdout.split())
        if command == "run":
            for name in NAMES:
                assert (name if name == "local" else f"{name}://") in text, name
            assert "labgrid://?tags=KEY=VALUE,..." in text
        else:
            assert "serial:///dev/TTY, rfc2217://HOST:PORT, socket://HOST:PORT" in text
            assert "ssh://" not in text.split("--board URL", 1)[1].split("--", 1)[0]
