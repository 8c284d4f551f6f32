"""Suite-wide guards: no test reaches beyond this machine, no vendor key leaks in."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

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


def pytest_unconfigure(config: pytest.Config) -> None:
    """llama_cpp opens two module-level handles to /dev/null and never closes them; close them
    after the run so interpreter shutdown does not report them as leaked."""
    import sys

    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None and not handle.closed:
            handle.close()


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
        if crash is not None:  # where it failed, and the error's words (its first 4,000)
            terminalreporter.write_line(f"{crash.path}:{crash.lineno}: {crash.message[:4000]}")
        else:
            terminalreporter.write_line(str(report.longrepr or "(no report)")[-4000:])
