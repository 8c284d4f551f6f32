"""`gui-agent streamlit`: run the Streamlit front end (`app`) against a GuiAgent server.

Streamlit's own defaults are not this project's: it binds every interface and sends usage
statistics. The command it runs binds 127.0.0.1 unless told otherwise, turns the statistics
off, watches no files and opens no browser. A non-loopback bind is refused when the
GuiAgent server has no login (every visitor would be its one local user), unless
`insecure_no_auth` says that is meant.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

from backends.api.client import ClientError, GuiAgentClient
from gui_agent.auth.users import is_loopback
from gui_agent.export_format import MAX_IMPORT_BYTES

logger = logging.getLogger(__name__)

APP_FILE: Final = Path(__file__).resolve().with_name("app.py")
URL_ENV: Final = "GUI_AGENT_URL"  # (the app reads the server's address from it)
DEFAULT_URL: Final = "http://127.0.0.1:7860"  # (the CLI's default names it too)


class LaunchRefused(Exception):
    """The front end was not started; the message says why and what to do."""


def streamlit_command(host: str, port: int) -> list[str]:
    """The `streamlit run` command line, with the safe options."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP_FILE),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--global.developmentMode",
        "false",
        "--client.toolbarMode",
        "minimal",
        "--runner.magicEnabled",  # only what the app draws is drawn
        "false",
        "--server.maxUploadSize",  # in MiB: an import file, the largest upload the API takes
        str(MAX_IMPORT_BYTES // 2**20),
    ]


def check_launch(url: str, host: str, *, insecure_no_auth: bool = False) -> None:
    """Raise LaunchRefused when Streamlit is missing, the server does not answer, or a
    non-loopback bind would open a server without login to the network."""
    if importlib.util.find_spec("streamlit") is None:
        raise LaunchRefused(
            "Streamlit is not installed: pip install 'gui-agent[streamlit]' (or streamlit)"
        )
    try:
        with GuiAgentClient(url) as client:
            mode = client.health().auth
    except (ClientError, ValueError) as error:
        raise LaunchRefused(
            f"no GuiAgent server answers at {url} ({error}); start one with `gui-agent serve`"
        ) from error
    if mode == "none" and not is_loopback(host) and not insecure_no_auth:
        raise LaunchRefused(
            f"refusing to serve on {host}: the GuiAgent server at {url} has no login, so "
            "anyone reaching this port would use its chats. Give it users (`gui-agent "
            "users add`), bind 127.0.0.1, or pass --insecure-no-auth."
        )


def run_streamlit(url: str, host: str, port: int, *, insecure_no_auth: bool = False) -> int:
    """Run the front end until it ends (Ctrl-C ends it); its exit code.

    On POSIX this process becomes Streamlit (exec), so a signal sent to it (a service
    manager's SIGTERM, `kill`) reaches Streamlit itself: run as a child, Streamlit was left
    serving, orphaned, when only this process was told to stop."""
    check_launch(url, host, insecure_no_auth=insecure_no_auth)
    env = {**os.environ, URL_ENV: url, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    logger.info("Streamlit front end for %s on http://%s:%s/", url, host, port)
    command = streamlit_command(host, port)
    if os.name == "posix":
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(command[0], command, env)
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:  # Streamlit got the same Ctrl-C and ends by itself
        return 130
