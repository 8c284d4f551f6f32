"""What the server says when it cannot listen: the option to change, named by the cause."""

from __future__ import annotations

import socket

import pytest

from backends.server import _bind, _bind_advice
from gui_agent.exceptions import ConfigError


def test_an_address_this_machine_lacks_names_the_host_not_the_port() -> None:
    """A host that does not resolve, or is not this machine's, said "stop whatever uses
    that port", sending people to look for a program that was not there."""
    with pytest.raises(ConfigError, match=r"cannot listen on 192\.0\.2\.1:\d+: .*check --host"):
        _bind("192.0.2.1", 0)  # (TEST-NET-1: never a local address)
    unknown = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert "check --host" in _bind_advice(unknown)


def test_a_port_in_use_names_the_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=r"stop whatever uses that port .*--port"):
            _bind("127.0.0.1", port)
