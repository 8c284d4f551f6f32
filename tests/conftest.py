"""Suite-wide guards: no test reaches beyond this machine, no vendor key leaks in."""

from __future__ import annotations

import asyncio
import faulthandler
import io
import ipaddress
import os
import re
import socket
import tempfile
from collections.abc import Generator, Iterator
from typing import IO, Any

import pytest

for _name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "GUI_AGENT_MODEL"):
    os.environ.pop(_name, None)
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"


class NetworkBlocked(ConnectionRefusedError):
    """A test tried to open a connection to a host that is not this machine.

    An OSError, so client libraries close their sockets and report it as a failed
    connection, carrying this message."""


def _is_local(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode()
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_outside_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any connection to a non-loopback address fails loudly, naming the address."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if not _is_local(address):
            raise NetworkBlocked(f"test tried to reach {address!r}; only loopback is allowed")
        real_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_local(address):
            raise NetworkBlocked(f"test tried to reach {address!r}; only loopback is allowed")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    yield


@pytest.fixture(autouse=True, scope="session")
def _temporary_files_in_pytests_folder(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """What tests and the code they drive make with `tempfile` (the chats' folders the page
    tests' servers make, among others) goes under this run's own folder, which pytest
    removes a few runs later, not straight into /tmp, where each run left hundreds behind.
    (Only this process's `tempfile`: browsers and other programs keep their TMPDIR.)"""
    before = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("tempfile"))
    try:
        yield
    finally:
        tempfile.tempdir = before


def pytest_unconfigure(config: pytest.Config) -> None:
    """llama_cpp opens two module-level handles to /dev/null and never closes them; close them
    after the run so interpreter shutdown does not report them as leaked."""
    import sys

    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None and not handle.closed:
            handle.close()
    stderr = config.stash.get(_STDERR, None)
    if stderr is not None:
        stderr.close()


HUNG = r"Timeout \(>"
"""How pytest-timeout words a test that ran past the suite's `timeout` (pyproject.toml)."""

WATCHDOG_S = 400.0
"""A test still running this long after it started (its rerun included) is stuck where
pytest-timeout cannot end it, as in an event loop's teardown: the worker prints every
thread's stack and exits, and the run goes on without it (xdist reports the crash)."""

_STDERR = pytest.StashKey[IO[str]]()


def pytest_configure(config: pytest.Config) -> None:
    # The watchdog writes to the real stderr: pytest captures fd 2 while a test runs.
    config.stash[_STDERR] = os.fdopen(os.dup(2), "w")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that hung (ran past the timeout) is run once more before it counts as failed;
    its first attempt, with where it hung, is in the summary (`pytest_terminal_summary`).
    A test that fails otherwise fails at once (browser tests have their own rerun)."""
    for item in items:
        if item.get_closest_marker("flaky") is None:
            item.add_marker(pytest.mark.flaky(reruns=1, only_rerun=[HUNG]))


def _watch(config: pytest.Config) -> None:
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True, file=config.stash[_STDERR])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    _watch(item.config)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def pytest_exception_interact(
    node: pytest.Item | pytest.Collector,
    call: pytest.CallInfo[Any],
    report: pytest.TestReport | pytest.CollectReport,
) -> None:
    """A test that hung in an event loop fails where the loop waits (its selector): the
    report also gets where each of the loop's unfinished tasks is waiting. (The watchdog,
    which pytest's faulthandler plugin stops at each failure, is set again for a test, as
    its teardown can hang too; not for a collection error, whose watchdog nothing ends.)"""
    if not isinstance(node, pytest.Item):
        return
    _watch(node.config)
    if call.excinfo is None or not re.search(HUNG, str(call.excinfo.value)):
        return
    loops = {
        frame.frame.f_locals.get("self")
        for frame in call.excinfo.traceback
        if frame.name == "run_until_complete"
    }
    stacks = io.StringIO()
    for loop in loops:
        if isinstance(loop, asyncio.AbstractEventLoop) and not loop.is_closed():
            for task in asyncio.all_tasks(loop):
                task.print_stack(limit=12, file=stacks)
    addsection = getattr(report.longrepr, "addsection", None)
    if stacks.getvalue() and addsection is not None:
        addsection("where the event loop's unfinished tasks wait", stacks.getvalue())


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Why each rerun test failed its first attempt (the rerun's own report replaces it in
    the usual summary, so a flaky test's cause would otherwise be lost with the run)."""
    reruns = terminalreporter.stats.get("rerun", [])
    if not reruns:
        return
    terminalreporter.section("first attempts of the rerun tests")
    for report in reruns:
        terminalreporter.write_line(f"--- {report.nodeid}")
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None and re.search(HUNG, crash.message):  # the stacks where it hung
            terminalreporter.write_line(str(report.longrepr)[-6000:])
        elif crash is not None:  # where it failed, and the error's words (its first 4,000)
            terminalreporter.write_line(f"{crash.path}:{crash.lineno}: {crash.message[:4000]}")
        else:
            terminalreporter.write_line(str(report.longrepr or "(no report)")[-4000:])
