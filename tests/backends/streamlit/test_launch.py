"""`gui-agent streamlit`: Streamlit run with this project's safe defaults, and refused
where it would open a server without login to the network."""

from __future__ import annotations

import importlib.util
import logging
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends.streamlit.launch import (
    APP_FILE,
    LaunchRefused,
    check_launch,
    streamlit_command,
)
from gui_agent.cli import main
from tests.backends.api.live import Backend, free_port, running_backend
from tests.backends.streamlit.kit import running_front, serves


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    """A GuiAgent API without login."""
    with running_backend(tmp_path_factory.mktemp("open")) as running:
        yield running


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with running_backend(tmp_path_factory.mktemp("team"), users=[("ada", "pw-" * 5)]) as running:
        yield running


def option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_the_command_binds_where_asked_and_phones_nowhere() -> None:
    command = streamlit_command("127.0.0.1", 8611)
    assert command[1:5] == ["-m", "streamlit", "run", str(APP_FILE)]
    assert APP_FILE.is_file()
    assert option(command, "--server.address") == "127.0.0.1"
    assert option(command, "--server.port") == "8611"
    assert option(command, "--browser.gatherUsageStats") == "false"
    assert option(command, "--server.headless") == "true"  # opens no browser
    assert option(command, "--server.fileWatcherType") == "none"
    assert option(command, "--runner.magicEnabled") == "false"
    assert option(command, "--server.maxUploadSize") == "64"  # MiB: what an import takes


def test_a_loopback_bind_starts_against_any_server(open_server: Backend) -> None:
    check_launch(open_server.base_url, "127.0.0.1")
    check_launch(open_server.base_url, "localhost")


def test_a_network_bind_needs_a_server_with_login(
    open_server: Backend, team_server: Backend
) -> None:
    with pytest.raises(LaunchRefused, match=r"refusing to serve on 0\.0\.0\.0.*no login"):
        check_launch(open_server.base_url, "0.0.0.0")
    check_launch(open_server.base_url, "0.0.0.0", insecure_no_auth=True)  # meant
    check_launch(team_server.base_url, "0.0.0.0")  # each visitor signs in


def test_no_server_or_no_streamlit_is_a_clear_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(LaunchRefused, match=r"no GuiAgent server answers at .*gui-agent serve"):
        check_launch(f"http://127.0.0.1:{port}", "127.0.0.1")
    with pytest.raises(LaunchRefused, match="no GuiAgent server answers"):
        check_launch("not a url", "127.0.0.1")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "streamlit" else real(name, *rest),
    )
    with pytest.raises(LaunchRefused, match=r"pip install 'gui-agent\[streamlit\]'"):
        check_launch(f"http://127.0.0.1:{port}", "127.0.0.1")


def test_the_cli_refuses_with_exit_code_2_and_says_why(
    open_server: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        code = main(["streamlit", "--url", open_server.base_url, "--host", "0.0.0.0"])
    assert code == 2
    assert "refusing to serve on 0.0.0.0" in caplog.text
    assert "--insecure-no-auth" in caplog.text


def test_a_sigterm_to_gui_agent_streamlit_stops_streamlit_itself(
    open_server: Backend, tmp_path: Path
) -> None:
    """Stopped by a service manager (SIGTERM to the process it started), the front end must
    not stay behind serving: it did, orphaned, while it ran Streamlit as a child."""
    pytest.importorskip("streamlit")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "streamlit.log"
    with running_front(open_server.base_url, port, home=tmp_path, log=log) as process:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        deadline = time.monotonic() + 15
        while serves(url):
            assert time.monotonic() < deadline, "Streamlit still serves after the SIGTERM"
            time.sleep(0.2)
