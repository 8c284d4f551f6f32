"""Running `gui-agent streamlit` as a real process for the tests, and asking whether it
serves."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, WebSocketRoute

from tests.backends.api.live import free_port

STARTUP_S = 60.0


@contextmanager
def running_front(
    server_url: str, port: int, *, home: Path, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """`gui-agent streamlit` for the GuiAgent server at `server_url`, on `port`, serving (its
    output in `log`; HOME is `home`, where Streamlit writes its settings); ended after."""
    command = [
        sys.executable,
        "-c",
        "import sys; from gui_agent.cli import main; sys.exit(main())",
        "streamlit",
        "--url",
        server_url,
        "--port",
        str(port),
    ]
    env = {**os.environ, "HOME": str(home)}
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + STARTUP_S
    try:
        while not serves(f"http://127.0.0.1:{port}/"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Streamlit did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()


@contextmanager
def front_for(server_url: str, folder: Path) -> Iterator[str]:
    """`running_front` on a free port, its HOME and log in `folder`: its address."""
    port = free_port()
    with running_front(server_url, port, home=folder, log=folder / "streamlit.log"):
        yield f"http://127.0.0.1:{port}/"


@contextmanager
def front_tab(front_url: str, chromium: Browser) -> Iterator[Page]:
    """A tab of its own (a browser context of its own) on the front end."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.goto(front_url)
    yield tab
    context.close()


def serves(front_url: str) -> bool:
    """Streamlit answers its health check at `front_url` (ending in /)."""
    try:
        return httpx.get(f"{front_url}_stcore/health", timeout=2).text == "ok"
    except httpx.HTTPError:
        return False


def losing_a_click(page: Page, form: str) -> list[str]:
    """From now on, the first click on the Save button of the form whose key starts with
    `form` never reaches the server, as when a change made right after it took the place
    of the run it asked for (Streamlit then runs the other change's run alone; it carries
    the form's values, not the click). The page is loaded again to go through this; what
    is returned lists the button the lost click was on, once it was."""
    from streamlit.proto.BackMsg_pb2 import BackMsg  # (Streamlit is optional)

    lost: list[str] = []

    def route(socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()

        def to_server(message: str | bytes) -> None:
            if isinstance(message, bytes) and not lost:
                back = BackMsg()
                back.ParseFromString(message)
                if back.WhichOneof("type") == "rerun_script":
                    for state in back.rerun_script.widget_states.widgets:
                        if f"FormSubmitter:{form}" in state.id and state.trigger_value:
                            lost.append(state.id)
                            return
            server.send(message)

        socket.on_message(to_server)

    page.route_web_socket("**/_stcore/stream", route)
    page.reload()
    return lost


def sent_and_lost(page: Page, lost: list[str], timeout_s: float = 20.0) -> None:
    """Wait until the click `losing_a_click` loses was sent (and so lost): a test's next
    change then comes after it, whatever the machine's load."""
    deadline = time.monotonic() + timeout_s
    while not lost:
        assert time.monotonic() < deadline, "the Save click was never sent"
        page.wait_for_timeout(50)
