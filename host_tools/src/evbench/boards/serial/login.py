"""Getting from whatever the console shows to an open shell.

Wake the console with a carriage return, then recognise a login prompt, a
password prompt or an already-open shell. The password comes from
EVBENCH_PASSWORD or an interactive prompt, and is sent only after a
recognised password prompt; it never appears on a command line or in a log.
"""

from __future__ import annotations

import getpass
import logging
import os
import re
import sys
import time
from collections.abc import Callable

from evbench.boards.base import PASSWORD_VARIABLE
from evbench.boards.serial.link import ConsoleLink, Deadline

ANSI = re.compile(rb"\x1b(\[[0-9;?]*[A-Za-z]|[()][A-Z0-9]|[=>])")
#: A kernel message on the console: it can land anywhere, even right after a prompt.
KERNEL_LINE = re.compile(rb"\r*\n?\[\s*\d+\.\d+\] [^\r\n]*\r*\n")
LOGIN_PROMPT = re.compile(rb"(?i)\blogin:\s*$")
PASSWORD_PROMPT = re.compile(rb"(?i)password:\s*$")
PASSWORD_PROMPT_ANYWHERE = re.compile(rb"(?i)password: ")
SHELL_PROMPT = re.compile(rb"[$#%>]\s*$")
REFUSED = re.compile(rb"(?i)login incorrect|authentication fail|permission denied|access denied")
#: How long the console must stay quiet before its last line counts as a prompt.
SETTLE = 0.6
WAKE_TRIES = 5
#: After the password, how long to wait for a prompt before asking for a fresh one.
PROBE_AFTER = 3.0

log = logging.getLogger(__name__)


def _tail(data: bytes) -> bytes:
    """The last line of what came, without colour codes or kernel messages."""
    text = KERNEL_LINE.sub(b"", ANSI.sub(b"", data))
    return text.replace(b"\r", b"").rsplit(b"\n", 1)[-1][-200:]


def shows_login(data: bytes) -> bool:
    """Whether the last line of `data` is a login or password prompt: getty asking again
    (the board rebooted, or its shell died), where a request typed is a user name."""
    tail = _tail(data)
    return bool(LOGIN_PROMPT.search(tail) or PASSWORD_PROMPT.search(tail))


def _unreadable(data: bytes) -> bool:
    """Mostly characters no prompt or banner uses: what a wrong baud rate looks like."""
    printable = sum(1 for byte in data if 32 <= byte < 127 or byte in b"\r\n\t\x1b")
    return len(data) >= 8 and printable < 0.7 * len(data)


def password_from_user(user: str, url: str) -> bytes:
    """The password: EVBENCH_PASSWORD, or asked for on the terminal (never echoed)."""
    value = os.environ.get(PASSWORD_VARIABLE)
    if value is None and sys.stdin.isatty():
        value = getpass.getpass(f"password for {user} on {url}: ")
    if value is None:
        raise ValueError(f"set {PASSWORD_VARIABLE}, or run in a terminal to be asked")
    return value.encode("utf-8")


class LoginStrategy:
    """Moves the console from unknown to an open shell (labgrid's ShellStrategy, in short)."""

    def __init__(
        self,
        link: ConsoleLink,
        user: str,
        password: Callable[[], bytes],
        timeout: float = 30.0,
    ) -> None:
        self.link = link
        self.user = user
        self.password = password
        self.timeout = timeout
        #: True when evbench logged in itself (so it logs out again on close).
        self.logged_in = False

    def _settle(self, deadline: Deadline) -> bytes:
        """Everything that came until the console went quiet, as one block."""
        self.link.quiet_for(SETTLE, Deadline(min(deadline.remaining, 4.0)))
        seen = bytes(self.link.buffer)
        self.link.buffer.clear()
        return seen

    def _wake(self, deadline: Deadline) -> bytes:
        everything = b""
        started = time.monotonic()
        for _ in range(WAKE_TRIES):
            self.link.write(b"\r")
            seen = self._settle(deadline)
            everything += seen
            tail = _tail(seen)
            if LOGIN_PROMPT.search(tail) or PASSWORD_PROMPT.search(tail):
                return tail
            if SHELL_PROMPT.search(tail):
                return tail
            if deadline.expired:
                break
        if not everything:
            # A board rebooting or a line cut for a while: reconnecting may get it back.
            lost = self.link.lost(
                f"no prompt on {self.link.address.url}: nothing came back"
                f" in {time.monotonic() - started:.0f} s"
            )
            lost.hint = f"is the board powered and the cable on its console port?; {lost.hint}"
            raise lost
        if _unreadable(everything):
            raise self.link.error(
                f"only unreadable characters came back from {self.link.address.url}"
                f" at {self.link.address.baud} baud: most likely the wrong baud rate",
                hint="set the board's rate in the URL, e.g. ?baud=115200",
            )
        last = _tail(everything).decode("ascii", "replace").strip() or "(blank)"
        raise self.link.error(
            f"no login or shell prompt recognised on {self.link.address.url}; last line: {last!r}",
            hint="is a program holding the console? try `evbench console` to look",
        )

    def _send_password(self, deadline: Deadline) -> str:
        try:
            secret = self.password()
        except ValueError as error:
            self.link.write(b"\x03")  # leave the board's login prompt clean
            raise self.link.error(
                f"the console asks for {self.user}'s password: {error}"
            ) from error
        self.link.transcript.add_secret(secret)
        log.debug("password prompt seen; sending the password (never shown)")
        self.link.write(secret + b"\r", secret=True)
        return self._after_credentials(deadline, probe=True)

    def _after_credentials(self, deadline: Deadline, probe: bool) -> str:
        """ "password" or "shell", whichever prompt follows; an error if the login is refused.

        A password prompt counts wherever it shows in what came (a kernel
        message may follow it). A shell prompt can hide inside a kernel line,
        so with `probe`, an empty line asks for a fresh one every few seconds:
        harmless to a shell, and to a login that failed it is only an empty name.
        """
        seen = b""
        asked = Deadline(PROBE_AFTER)
        while not deadline.expired:
            seen += self._settle(deadline)
            tail = _tail(seen)
            if REFUSED.search(seen) or LOGIN_PROMPT.search(tail):
                raise self.link.error(
                    f"login as {self.user!r} on {self.link.address.url} was refused",
                    hint="check the user (?user=NAME) and EVBENCH_PASSWORD",
                )
            if PASSWORD_PROMPT_ANYWHERE.search(ANSI.sub(b"", seen)):
                return "password"
            if SHELL_PROMPT.search(tail):
                return "shell"
            if probe and asked.expired:
                self.link.write(b"\r")
                asked = Deadline(PROBE_AFTER)
        raise self.link.error(f"no shell prompt within {deadline.seconds:.0f} s of logging in")

    def open_shell(self) -> None:
        deadline = Deadline(self.timeout)
        tail = self._wake(deadline)
        if PASSWORD_PROMPT.search(tail):
            log.debug("a half-finished login on the console: starting over")
            # Someone else's half-finished login: give it up and start over.
            self.link.write(b"\x03\r")
            tail = self._wake(deadline)
        if LOGIN_PROMPT.search(tail):
            self.link.transcript.note(f"login prompt seen; logging in as {self.user}")
            log.debug("login prompt seen; logging in as %s", self.user)
            self.link.write(self.user.encode() + b"\r")
            asked = self._after_credentials(deadline, probe=False)
            if asked == "password" and self._send_password(deadline) == "password":
                raise self.link.error(
                    f"login as {self.user!r} was refused (asked for the password again)",
                    hint=f"check {PASSWORD_VARIABLE}",
                )
            self.logged_in = True
        self.link.transcript.note("shell prompt seen")
        log.debug("shell prompt seen (%s)", "logged in" if self.logged_in else "already open")
