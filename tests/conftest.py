"""Shared fixtures. The components tests need are real; when one is missing
the test fails (never skips): `make test` installs them all."""

import logging
import os
import resource
import shutil
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
AGENT_SRC = ROOT / "agent" / "src"

# A CI runner, nohup or a script's background job may start the suite with SIGINT or
# SIGHUP ignored, and every process a test starts would inherit that (a rehearsal run
# from `nohup ... &` failed every signal test so). The tests signal evbench as a
# terminal and a service manager would, from the defaults; tests/test_run_local.py
# starts evbench with them ignored on purpose.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

#: The test files that take longest, longest first: tests/run-tiers.sh hands whole files to
#: its pytest-xdist workers in collection order (--dist loadfile --no-loadscope-reorder), so
#: these start first and short files fill in behind them; a long file handed out last
#: would run on alone. Kept from the "longest files" summary below (a fresh-clone run at
#: 4eeb4fe, idle 2-core machine); the others took 11 s or less.
LONGEST_FILES = (
    "test_docs.py",
    "test_labgrid_board.py",
    "test_ssh_run.py",
    "test_link_soak.py",
    "test_labgrid_places.py",
    "test_console_commands.py",
    "test_release_wheels.py",
    "test_log_secrets.py",
    "test_console_shell.py",
    "test_lava.py",
    "test_schema_acceptance.py",
    "test_link_crowd.py",
    "test_history_cli.py",
    "test_one_screen.py",
    "test_agent_secrets.py",
    "test_native_responder.py",
    "test_compat.py",
    "test_peer_host_bus.py",
    "test_native_runtimes.py",
    "test_readers_untrusted.py",
    "test_user_schema_run.py",
    "test_native_deploy.py",
)

#: The integration tier's files that mostly wait on real time (paced serial lines, dropped
#: connections' timeouts, consoles' prompts, labgrid places, the main job's 20 Hz link
#: phases) at a third of a core or less: marked `waits`, tests/run-tiers.sh runs them in a
#: lane of their own beside the workers instead of letting them hold a worker for minutes.
#: test_docs.py (the README's `make run` among its commands) took 381 s at 132 CPU s on a
#: worker (fresh-clone run, 2026-12-08), a quarter of the workers' time. A file whose checks
#: need a quiet core (test_native_responder.py's idle slot) stays out.
WAITING_FILES = (
    "test_docs.py",
    "test_ssh_run.py",
    "test_labgrid_places.py",
    "test_console_commands.py",
    "test_console_shell.py",
    "test_log_secrets.py",
    "test_peer_host_bus.py",
)


def pytest_itemcollected(item: pytest.Item) -> None:
    if item.path.name in WAITING_FILES:
        item.add_marker(pytest.mark.waits)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of LONGEST_FILES first, in its order; then the others, those with more
    tests first (what pytest-xdist's own --loadscope-reorder does)."""
    for table, names in (("LONGEST_FILES", LONGEST_FILES), ("WAITING_FILES", WAITING_FILES)):
        gone = [name for name in names if not (ROOT / "tests" / name).is_file()]
        if gone:
            raise pytest.UsageError(f"tests/conftest.py: {table} names no such file: {gone}")
    rank = {name: index for index, name in enumerate(LONGEST_FILES)}
    tests_in = Counter(item.path for item in items)
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), -tests_in[item.path]))


_FILE_SECONDS: Counter[str] = Counter()
_FILE_CPU_SECONDS: Counter[str] = Counter()
_CPU_AT_START = pytest.StashKey[float]()


def _cpu_seconds() -> float:
    """This process's CPU time and its reaped children's: a server or emulator a fixture
    started counts once it is waited for, charged to the test whose teardown reaps it."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    item.stash[_CPU_AT_START] = _cpu_seconds()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    try:
        return (yield)
    finally:
        # The teardown report carries it (pytest-xdist sends user_properties on).
        item.user_properties.append(("cpu_seconds", _cpu_seconds() - item.stash[_CPU_AT_START]))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each file's time, setup and teardown included (with pytest-xdist the controller
    sees every worker's reports), for the summary below."""
    path = report.nodeid.split("::", 1)[0]
    _FILE_SECONDS[path] += report.duration
    if report.when == "teardown":
        _FILE_CPU_SECONDS[path] += dict(report.user_properties).get("cpu_seconds", 0.0)


def pytest_terminal_summary(terminalreporter) -> None:
    """The 30 longest files, seconds and CPU seconds each: what LONGEST_FILES above is
    kept from, and where the tiers' CPU goes (both cores are busy for most of a run)."""
    if not _FILE_SECONDS:
        return
    terminalreporter.write_sep(
        "=", "longest files (seconds and CPU seconds, setup and teardown included)"
    )
    for path, seconds in _FILE_SECONDS.most_common(30):
        terminalreporter.write_line(f"{seconds:8.1f} {_FILE_CPU_SECONDS[path]:8.1f}  {path}")
    terminalreporter.write_line(f"CPU seconds, every file: {sum(_FILE_CPU_SECONDS.values()):.0f}")


def require(condition: bool, what: str) -> None:
    """Fail, naming it, when a real component the test needs is missing."""
    if not condition:
        pytest.fail(f"{what} is missing (run `make test`, or tests/setup-system.sh, to install it)")


def require_command(name: str) -> str:
    path = shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/sbin/{name}") if os.access(p, os.X_OK)), None
    )
    require(path is not None, f"the command {name!r}")
    return path


@pytest.fixture(scope="session", autouse=True)
def _session_history_store(tmp_path_factory: pytest.TempPathFactory):
    """Runs made by session and module fixtures (before any test's own store is set)
    go to a throwaway history store too, never the user's real one."""
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("history") / "history.sqlite"
        patch.setenv("EVBENCH_HISTORY", str(path))
        yield path


@pytest.fixture(autouse=True)
def _signal_dispositions():
    """Every test leaves the worker's signal handlers as it found them. A responder's
    serve loop run in this process ignores SIGTERM once stopped (it is on its way out:
    link/stop_signal.py); left so, every process this worker starts later inherits
    SIGTERM ignored, and a test that stops a run with SIGTERM saw the run go on to
    the end (the fast tier, once, after test_can_peer's in-process serve loops)."""
    handled = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    before = {number: signal.getsignal(number) for number in handled}
    yield
    for number, handler in before.items():
        if signal.getsignal(number) is not handler:
            signal.signal(number, handler)


@pytest.fixture(autouse=True)
def history_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's runs go to a history store of its own, never the user's real one."""
    path = tmp_path / "history.sqlite"
    monkeypatch.setenv("EVBENCH_HISTORY", str(path))
    return path


@pytest.fixture(autouse=True)
def _no_user_schema_left(monkeypatch: pytest.MonkeyPatch):
    """A test that activates a user's schema in this process (`evbench run --schema` run
    in-process, spec.from_dict) registers its profile and sets EVBENCH_AGENT_SCHEMA for the
    agents started after it: both undone after the test. Left, every later test of this
    worker saw them (test_run_help after test_ssh_run's user schema listed a profile that the
    `--help` it ran did not have, and failed)."""
    monkeypatch.setenv("EVBENCH_AGENT_SCHEMA", "")
    monkeypatch.delenv("EVBENCH_AGENT_SCHEMA")  # absent, and absent again after the test
    loaded = sys.modules.get("evbench_agent.payloads")
    saved = dict(loaded.PROFILES) if loaded else None
    yield
    payloads = sys.modules.get("evbench_agent.payloads")
    if payloads is not None and saved is not None:
        payloads.PROFILES.clear()
        payloads.PROFILES.update(saved)
    elif payloads is not None:  # imported during the test: drop the users' profiles only
        users = [n for n, p in payloads.PROFILES.items() if type(p).__name__ == "SchemaProfile"]
        for name in users:
            del payloads.PROFILES[name]


@pytest.fixture(autouse=True)
def _own_log_levels():
    """A command run in this process sets the levels of evbench's loggers to its -v or
    --quiet (log_output.setup_logging); the next test starts from none, so caplog sees
    what the module logs."""
    yield
    from evbench_core.log_output import OWN

    for name in OWN:
        logging.getLogger(name).setLevel(logging.NOTSET)


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server on a free loopback port (tests/postgres.py)."""
    from postgres import Postgres, find_bin

    bin_dir = find_bin()
    require(bin_dir is not None, "PostgreSQL (Debian package postgresql: initdb, pg_ctl)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        require(False, "psycopg 3 (requirements-dev.txt, evbench[postgres])")
    server = Postgres(bin_dir)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def agent_python() -> str:
    """The interpreter that runs the agent in these tests (the venv's)."""
    return sys.executable


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory):
    """A real OpenSSH sshd on a free loopback port (tests/sshd.py)."""
    from sshd import Sshd

    server = Sshd(
        require_command("sshd"), require_command("ssh-keygen"), tmp_path_factory.mktemp("sshd")
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture
def ssh_home(sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME whose ~/.ssh holds the test client key and trusts the test sshd's host key."""
    home = sshd.client_home(tmp_path / "home")
    monkeypatch.setenv("HOME", str(home))
    for name in ("SSH_AUTH_SOCK", "EVBENCH_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(scope="session")
def console_user():
    """A throwaway user for the console tests' logins (tests/console_rig.py)."""
    from console_rig import ThrowawayUser

    require(os.geteuid() == 0, "root (the console tests create a throwaway user)")
    user = ThrowawayUser(
        require_command("useradd"), require_command("userdel"), require_command("chpasswd")
    )
    yield user
    user.remove()


@pytest.fixture
def console_line(console_user, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A fresh console: agetty and login behind a throttled, noisy pty line (console_rig.py)."""
    from console_rig import ConsoleRig

    rig = ConsoleRig(tmp_path / "line", require_command("socat"), require_command("agetty"))
    monkeypatch.setenv("EVBENCH_PASSWORD", console_user.password)
    monkeypatch.chdir(tmp_path)  # transcripts without --out go to results/console here
    yield rig
    rig.stop()
