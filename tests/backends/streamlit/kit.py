"""Running `gui-agent streamlit` as a real process for the tests, and asking whether it
serves."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, WebSocketRoute, expect

from tests.backends.api.live import free_port
from tests.backends.conftest import WarmTabs

STARTUP_S = 60.0

log = logging.getLogger(__name__)

# Counts the runs of the script the page asks the server for: the messages its socket sends
# whose first byte is BackMsg's `rerun_script` field (number 11, length-delimited: 0x5A).
_COUNT_RUNS_ASKED = """(() => {
  window.__guiAgentRunsAsked = 0;
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data)
      : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      : null;
    if (bytes !== null && bytes.length > 0 && bytes[0] === 0x5a) {
      window.__guiAgentRunsAsked += 1;
    }
    return send.call(this, data);
  };
})();"""


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
    context.add_init_script(_COUNT_RUNS_ASKED)
    tab = context.new_page()
    tab.goto(front_url)
    yield tab
    context.close()


def warm_front_tabs(chromium: Browser) -> WarmTabs:
    """Fresh tabs on the front end that open warm (`WarmTabs`; its health check keeps the
    renderer), each counting the runs it asks for, as `front_tab`'s do."""
    return WarmTabs(
        chromium,
        "/_stcore/health",
        init_script=_COUNT_RUNS_ASKED,
        viewport={"width": 1280, "height": 900},
    )


@contextmanager
def warm_front_tab(front_url: str, tabs: WarmTabs) -> Iterator[Page]:
    """`front_tab`, opened from `tabs`: its cookies and storage cleared when it closes."""
    tab = tabs.open(front_url)
    try:
        tab.goto(front_url)
        yield tab
    finally:
        tabs.reset()


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


def sent_and_lost(
    page: Page, lost: list[str], click: Callable[[], None], timeout_s: float = 20.0
) -> None:
    """`click` (the click `losing_a_click` loses), and wait until it was sent (and so
    lost): a test's next change then comes after it, whatever the machine's load."""
    clicked(page, click, sent=lambda: bool(lost))
    deadline = time.monotonic() + timeout_s
    while not lost:
        if time.monotonic() > deadline:
            state = page.get_by_test_id("stApp").get_attribute("data-test-script-state")
            raise AssertionError(f"the Save click was never sent (the script: {state})")
        page.wait_for_timeout(50)


# How many runs of the script the page has seen end, counted by an observer of the app's
# `data-test-script-state` (installed at the first call; a reloaded page starts again at 0).
# Polling the state could miss a short run; the observer is told of every change.
_RUNS_ENDED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (app === null) return -1;
  if (window.__guiAgentApp !== app) {
    window.__guiAgentApp = app;
    window.__guiAgentRunsEnded = 0;
    new MutationObserver((records) => {
      for (const record of records) {
        if (record.oldValue === "running") window.__guiAgentRunsEnded += 1;
      }
    }).observe(app, {
      attributes: true, attributeOldValue: true, attributeFilter: ["data-test-script-state"],
    });
  }
  return window.__guiAgentRunsEnded;
}"""


def runs_asked(page: Page) -> int:
    """How many runs the page has asked the server for since it loaded (`front_tab`)."""
    asked = page.evaluate("() => window.__guiAgentRunsAsked")
    assert isinstance(asked, int), "runs asked are counted only in a tab of `front_tab`"
    return asked


def clicked(
    page: Page,
    click: Callable[[], None],
    sent: Callable[[], bool] | None = None,
    within_ms: float = 5_000,
) -> None:
    """`click` (on a widget that runs the script), done again once if the page asked for
    no run within `within_ms` (or, given `sent`, if that does not say the click was sent
    by then: a click a test's socket route drops never reaches the socket `front_tab`
    counts at). Rarely, with the machine busy, the browser sends nothing for a click (why
    is not known; see the session notes): a person would click again, and so does this,
    with a warning. A click that asked for its run is never repeated."""
    if sent is None:
        before = runs_asked(page)

        def asked_for_a_run() -> bool:
            return runs_asked(page) > before

        sent = asked_for_a_run
    click()
    deadline = time.monotonic() + within_ms / 1000
    while not sent():
        if time.monotonic() > deadline:
            log.warning("a click asked for no run within %.0f ms: clicked again", within_ms)
            click()
            return
        page.wait_for_timeout(50)


def opened(page: Page, title: str, tries: int = 3) -> None:
    """Open the section (an expander) titled `title` and wait until it shows what it
    holds; a click that did not open it (see `clicked`) is made again, with a warning."""
    header = page.get_by_text(title, exact=True)
    section = page.get_by_test_id("stExpander").filter(has=header)
    shown = section.locator('[data-testid="stExpanderDetails"]:not([inert])')
    if shown.count():
        return  # (open already)
    for attempt in range(tries):
        if attempt:
            log.warning("the section %r did not open: clicked again", title)
        header.click()
        try:
            expect(shown).to_have_count(1, timeout=3_000)
        except AssertionError:
            continue
        return
    raise AssertionError(f"the section {title!r} did not open")


def run_by(page: Page, click: Callable[[], None], timeout_ms: float = 20_000) -> None:
    """`click` (a click or a key that runs the script, as `clicked` does it) and wait
    until the run it asked for has ended. Waiting for the script not to be running is not
    enough just after the click: the page says so until the server starts the run, and a
    click made then lands on what the run draws again."""
    before = page.evaluate(_RUNS_ENDED)
    assert before >= 0, "no Streamlit app on the page"
    clicked(page, click)
    state = """document.querySelector('[data-testid="stApp"]')
      .getAttribute("data-test-script-state")"""
    page.wait_for_function(
        f"() => ({_RUNS_ENDED})() > {before} && {state} === 'notRunning'", timeout=timeout_ms
    )
