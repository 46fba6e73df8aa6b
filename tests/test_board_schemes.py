"""The registry of board URL schemes (boards/urls.py) against what depends on it: each
scheme parses its example and opens a complete Board of its own module, and each form is a
row of docs/boards.md's table naming that module. All derived from the registry: a new
transport needs no line here."""

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evbench.boards import Board, BoardOptions, RemoteBoard, open_board
from evbench.boards._ssh_address import read_ssh_url
from evbench.boards.labgrid import parse_labgrid_url
from evbench.boards.serial.address import parse_console_url
from evbench.boards.urls import NOT_TRANSPORTS, collect, scheme, scheme_of, schemes, transport_of
from evbench_core.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
BOARDS_DOC = ROOT / "docs/boards.md"

NAMES = [entry.name for entry in schemes()]


@pytest.mark.parametrize("entry", schemes(), ids=NAMES)
def test_each_registered_scheme_parses_its_example_and_opens_a_complete_board(entry):
    assert scheme_of(entry.example) == entry and transport_of(entry.example) == entry.transport
    entry.parse(entry.example)  # a UserError here fails the test
    cls = entry.board_class()
    assert issubclass(cls, Board)
    assert not inspect.isabstract(cls), f"{cls.__name__} lacks {sorted(cls.__abstractmethods__)}"
    # Declared beside its transport: the Board is its module's (or its package's).
    assert cls.__module__ == entry.module or cls.__module__.startswith(entry.module + ".")
    assert entry.module.startswith("evbench.boards.") and entry.module.count(".") == 2


def test_one_transport_name_per_board_class():
    # transport_of() answers by board kind: the schemes of one Board share one name.
    kinds = {(entry.transport, entry.board_class()) for entry in schemes()}
    assert len({transport for transport, _ in kinds}) == len(kinds)


def test_every_module_of_boards_is_collected_or_a_helper():
    # The folder, listed on disk, against the registry: no transport left out.
    folder = ROOT / "host_tools/src/evbench/boards"
    modules = [path for path in folder.iterdir() if not path.name.startswith("_")]
    found = {p.stem for p in modules if p.suffix == ".py" or (p / "__init__.py").is_file()}
    declared = {entry.module.rpartition(".")[2] for entry in schemes()}
    assert found - declared == set(NOT_TRANSPORTS) and declared <= found


def test_collecting_skips_helpers_and_refuses_no_scheme_or_one_twice(tmp_path, monkeypatch):
    # A throwaway package on disk, collected for real: its `_helper` would fail if imported.
    package = tmp_path / "boards_demo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_helper.py").write_text("raise AssertionError('a helper is not collected')\n")
    (package / "quiet.py").write_text("NAME = 'no @scheme here'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match=r"boards_demo\.quiet declares no board URL scheme"):
        collect([str(package)], "boards_demo")
    with pytest.raises(ValueError, match="'ssh' is registered twice"):
        scheme("ssh", "ssh://HOST", transport="ssh", board="Y", example="ssh://HOST")(str)
    assert [entry.name for entry in schemes()] == NAMES  # the registry is left as it was


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
    for entry in schemes():
        assert (entry.name if entry.bare else f"{entry.name}://") in raised.value.hint


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


@pytest.mark.parametrize("value", ["nan", "inf", "0"])
def test_a_place_timeout_that_is_no_length_of_time_is_refused(value):
    # nan compares false with every deadline, inf never passes: either would wait forever.
    done = subprocess.run(
        [sys.executable, "-m", "evbench", "deploy", "--board", "labgrid://am62x-a",
         "--place-timeout", value],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("evbench: error:")]
    assert error == f"evbench: error: argument --place-timeout: invalid duration value: {value!r}"
    with pytest.raises(UserError, match="--place-timeout must be a number of seconds above 0"):
        open_board("labgrid://am62x-a", place_timeout=float("nan"))  # refused before labgrid


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
        path = entry.module.removeprefix("evbench.").replace(".", "/")
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


@pytest.mark.parametrize(
    ("read", "url"),
    [
        ("ssh", "ssh://root@board?dir=/x/c++%20d"),
        ("console", "serial:///dev/ttyS1?dir=/x/c++%20d"),
        ("console", "rfc2217://lab:7000?dir=/x/c++%20d"),
        ("labgrid", "labgrid://am62x-1?dir=/x/c++%20d"),
    ],
)
def test_every_scheme_reads_its_query_as_a_url_does(read, url):
    # RFC 3986: + is a plus and %20 a space. Read as HTML form data (parse_qsl), the
    # folder /x/c++ d became '/x/c   d' on the board.
    parse = {"ssh": read_ssh_url, "console": parse_console_url, "labgrid": parse_labgrid_url}
    assert parse[read](url).work_dir == "/x/c++ d"
