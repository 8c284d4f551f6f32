"""What the browser tests of the chat page share: the scripted model they steer by what
they type (`play`), the app they serve (`build`), and helpers that read and drive the page.
The `server` and `tab` fixtures are in this folder's conftest.py."""

from __future__ import annotations

import asyncio
import functools
import json
import re
import tempfile
import time
import zlib
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, expect

from backends.gradio import create_app
from backends.gradio.asset_cache import AssetStore, add_asset_cache
from backends.gradio.assets import ASSETS_DIR
from backends.gradio.early_script import add_early_script
from backends.gradio.handlers import Handlers
from backends.gradio.layout import Page as Layout
from backends.gradio.layout import build_page
from backends.gradio.media import MediaShelf, add_media_route
from connectors.function import FunctionInfo, FunctionModel, ModelFunction
from connectors.scripted import ScriptedModel
from gui_agent.llm import LLMProvider, StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import MemoryStore, SessionStore
from schema import AgentName, Message, ModelResponse, Role, ToolCall
from tests.backends.conftest import LiveServer, live_server, started

NOTICE = "Offline test model <b>(not bold)</b>: answers are scripted."
HOSTILE = '<script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2">'
WAIT_MS = 15_000
KEEPER_PATH = "/robots.txt"
"""The small page of the server that keeps the module's tabs' renderer warm (`WarmTabs`)."""


HOLD_LIMIT_S = 120.0
"""The longest a held reply streams when the test never lets it go (it failed midway)."""


@dataclass
class Holds:
    """Replies a test holds open. The message "hold KEY" is answered with words, one every
    50 ms, until the test lets KEY go (`let_go`): for a check that needs a reply still
    streaming, however long the machine takes to get there (a reply of a fixed length may
    be over by then), and that then needs the reply to end."""

    gates: dict[str, asyncio.Event] = field(default_factory=dict)

    def gate(self, key: str) -> asyncio.Event:
        return self.gates.setdefault(key, asyncio.Event())


async def _held(gate: asyncio.Event) -> AsyncIterator[str]:
    deadline = time.monotonic() + HOLD_LIMIT_S
    number = 0
    while not gate.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        yield f"word{number} "
        number += 1
    yield "(let go)"


def let_go(server: LiveServer, key: str) -> None:
    """End the held reply "hold KEY" (as soon as its next word is out)."""
    holds: Holds = server.state.holds

    async def release() -> None:
        holds.gate(key).set()

    server.call(release())


async def play(messages: list[Message], info: FunctionInfo, *, holds: Holds | None = None) -> Any:
    """The scripted model. The last message decides:

    - a tool result: "Result: <its text>";
    - "stream N": N words, one every 20 ms; "slow…": words every 50 ms, for a long time;
    - "hold KEY": words every 50 ms until the test lets KEY go (`Holds`; with `holds`);
    - "python: CODE": a run_python call with CODE ("python: A ;; B": two calls, in one reply);
    - "html": a reply full of markup; "autochat …" and continuations: one short step;
    - anything else: "You said: …".
    """
    last = messages[-1]
    if last.role is Role.SYSTEM and "supervisor" in last.content:  # the supervisor's turn
        said = messages[-2]
        if said.role is Role.USER and said.content.startswith("delegate:"):
            task = json.dumps({"worker": "THOUGHT", "task": said.content.removeprefix("delegate:")})
            call = ToolCall(id=f"d{info.call_number}", name="delegate", arguments=task)
            return ModelResponse(tool_calls=(call,))
        last = said
    if last.role is Role.TOOL:
        return f"Result: {last.content.splitlines()[0]}"
    text = last.content
    if text.startswith("python:"):
        codes = [code.strip() for code in text.removeprefix("python:").split(";;")]
        return ModelResponse(
            tool_calls=tuple(
                ToolCall(
                    id=f"c{info.call_number}" + (f"-{n}" if n else ""),
                    name="run_python",
                    arguments=json.dumps({"code": code}),
                )
                for n, code in enumerate(codes)
            )
        )
    if text == "html":
        return f"Markup stays text: {HOSTILE} and `<b>code</b>`."
    if match := re.fullmatch(r"stream (\d+)", text):
        return _words(int(match.group(1)), 0.02)
    if text.startswith("slow"):
        return _words(2000, 0.05)
    if holds is not None and text.startswith("hold "):
        return _held(holds.gate(text.removeprefix("hold ").strip()))
    if text.startswith("autochat") or last.metadata.get("autochat"):
        return _words(8, 0.05, prefix="step")
    return f"You said: {text}"


async def _words(count: int, delay_s: float, prefix: str = "word") -> AsyncIterator[str]:
    for number in range(count):
        await asyncio.sleep(delay_s)
        yield f"{prefix}{number} "


@dataclass(frozen=True)
class Served:
    """What a test server holds: the sessions, the event that says it is closing, and the
    replies the tests hold open (`Holds`: with `play`)."""

    manager: SessionManager
    closing: asyncio.Event
    holds: Holds = field(default_factory=Holds)
    assets: AssetStore = field(default_factory=AssetStore)


async def build(workspace: Path | None = None) -> tuple[FastAPI, Served]:
    """The test app, played by `play` (its chats' folders under `workspace`, a new one by
    default)."""
    holds = Holds()
    return await build_playing(
        functools.partial(play, holds=holds), holds=holds, workspace=workspace
    )


async def build_playing(
    function: ModelFunction,
    *,
    store: SessionStore | None = None,
    workspace: Path | None = None,
    holds: Holds | None = None,
    early_script: bool = True,
) -> tuple[FastAPI, Served]:
    """The test app, its model played by `function` (its chats kept in `store`, in memory by
    default, and their folders under `workspace`, a new one by default; `holds`: the held
    replies `function` plays; `early_script`: its pages start with the server's early
    script, as the server serves them)."""
    manager = SessionManager(
        models=StaticCatalog(FunctionModel(function, name="scripted-function")),
        store=store if store is not None else MemoryStore(),
        workspace_root=workspace or Path(tempfile.mkdtemp(prefix="gui-agent-page-")),
    )
    closing = asyncio.Event()
    media = MediaShelf()
    blocks = create_app(manager, notice=NOTICE, title="GuiAgent test", closing=closing, media=media)

    app, assets = mount_page(blocks, manager, media=media, early_script=early_script)
    return app, Served(manager, closing, holds if holds is not None else Holds(), assets)


def mount_page(
    blocks: gr.Blocks,
    manager: SessionManager,
    *,
    media: MediaShelf | None = None,
    early_script: bool = True,
) -> tuple[FastAPI, AssetStore]:
    """`blocks` on an app that starts and closes `manager`, mounted as the server mounts the
    page: with its early script (unless `early_script` is False), Gradio's build files read
    once (the store is returned) and, given a `media` shelf, the route of the page's images."""
    app = FastAPI(lifespan=lambda _app: started(manager))
    if media is not None:
        add_media_route(app, media)
    app = gr.mount_gradio_app(app, blocks, path="/", allowed_paths=[str(ASSETS_DIR)])
    if early_script:
        add_early_script(app)
    return app, add_asset_cache(app)


async def closing(server: LiveServer) -> None:
    """Tell the page the server is about to stop (as `gui-agent serve` does)."""
    server.state.closing.set()


@contextmanager
def served(
    build: Callable[[], Coroutine[Any, Any, tuple[FastAPI, Any]]],
) -> Iterator[LiveServer]:
    """The app `build` makes, served until the block ends; then the open tabs' keep-alive
    events are told the server closes (`build`'s state has a `closing` event)."""
    with live_server(build) as running:
        yield running
        running.call(closing(running))


# -- helpers -----------------------------------------------------------------------------------


def badge(page: Page) -> Any:
    return page.locator("#state-badge")


def chat(page: Page) -> Any:
    return page.locator("#chatbot")


_DRAWN = "#chatbot .message-row:not(:has(.ga-gap))"
"""The chat's rows the page draws (not the gaps that part two bubbles: chat_entries.GAP)."""


def bot_messages(page: Page) -> Any:
    return page.locator(f'{_DRAWN} [data-testid="bot"]')


def user_messages(page: Page) -> Any:
    return page.locator(f'{_DRAWN} [data-testid="user"]')


def send(page: Page, text: str) -> None:
    box = page.locator("#chat-input textarea")
    box.fill(text)
    box.press("Enter")


def wait_idle(page: Page) -> None:
    expect(badge(page)).to_have_text("Your turn")


def eventually(page: Page, condition: Callable[[], bool], what: str) -> None:
    """Wait until `condition` holds (something on the server the page does not show), for
    as long as `expect` waits; fail naming `what`. The page goes on meanwhile."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while not condition():
        assert time.monotonic() < deadline, f"waited {WAIT_MS / 1000:.0f} s for {what}"
        page.wait_for_timeout(50)


def session_of(server: LiveServer, page: Page) -> Any:
    """The interpreter behind a tab, found by the (unique) text of its first message."""
    first = user_messages(page).first.inner_text().strip()
    return session_starting(server, first)


def record_texts(page: Page, selector: str) -> None:
    """Record every text the element shows from now on (expect() polls could miss some)."""
    page.evaluate(
        """(selector) => {
            window.__texts = new Set();
            const root = document.querySelector(selector);
            const note = () => window.__texts.add(root.innerText);
            new MutationObserver(note)
                .observe(root, {subtree: true, childList: true, characterData: true});
        }""",
        selector,
    )


def recorded_texts(page: Page) -> list[str]:
    return list(page.evaluate("() => [...window.__texts]"))


SETTLED = """() => new Promise((done) =>
  requestAnimationFrame(() => requestAnimationFrame(() => done(true))))"""
"""Resolves two animation frames later: the page's pending work (effects) has run."""


def settle(page: Page) -> None:
    """Let the page's pending work run (two animation frames) before typing into a box the
    server just set: the framework sets its value again a moment later, over anything typed
    in that moment (a person takes longer), as it does when an accordion opens."""
    page.wait_for_function(SETTLED)


def open_manage(page: Page) -> None:
    """Open "Manage this chat" and wait until its Title box can be typed into. The box is
    made as the accordion opens, and the framework gives it its value again a moment later
    (an effect), over anything typed in that moment (a person takes longer): a title
    filled at once was replaced by the old one about 1 run in 10 under load, and Rename
    then saved the old title."""
    page.get_by_role("button", name="Manage this chat").click()
    expect(page.locator("#rename-input textarea")).to_be_visible()
    settle(page)


def upload(page: Page, button: str, path: Path) -> None:
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name=button).click()
    chooser.value.set_files(path)


def pick(page: Page, elem_id: str, option: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def open_tab(browser: Browser, server: LiveServer, **context: Any) -> Page:
    """A new tab in a browser context of its own (its own storage: a new chat)."""
    page = browser.new_context(**context).new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(server.url, wait_until="load")
    ready(page)
    return page


COUNT_FRAMES = """
window.__framesAsked = 0;
const ask = window.requestAnimationFrame.bind(window);
window.requestAnimationFrame = (callback) => { window.__framesAsked += 1; return ask(callback); };
"""
"""An init script (`BrowserContext.add_init_script`) that counts the animation frames the
page asks the browser for in `window.__framesAsked`: it runs before any of the page's
scripts, so the page's early script and Gradio ask through it."""


def ready(page: Page) -> None:
    """Until the page is up: its first state shown, and its own script (page.js: the
    shortcuts, the input guard, the image policy) installed by its first load event."""
    expect(badge(page)).to_have_text("Ready")
    page.wait_for_function("() => window.__guiAgentPage === true")


def record_sequence(page: Page, selector: str) -> None:
    """Record, in order, every text the element shows from now on."""
    page.evaluate(
        """(selector) => {
            window.__sequence = [];
            const root = document.querySelector(selector);
            const note = () => window.__sequence.push(root.innerText.trim());
            new MutationObserver(note)
                .observe(root, {subtree: true, childList: true, characterData: true});
        }""",
        selector,
    )


def recorded_sequence(page: Page) -> list[str]:
    return list(page.evaluate("() => window.__sequence"))


def tiny_png() -> bytes:
    """A real 2×2 red PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body).to_bytes(4, "big")
        return len(body).to_bytes(4, "big") + kind + body + crc

    header = (2).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def session_starting(server: LiveServer, text: str) -> Any:
    """The interpreter whose conversation starts with `text` (as the server sees it): the
    newest one, should there be more (a failed first attempt of a rerun test leaves its
    chat on the module's server)."""

    async def find() -> Any:
        manager: SessionManager = server.state.manager
        found = [
            interpreter
            for interpreter in manager._live.values()
            if interpreter.session.history
            and interpreter.session.history[0].content.strip() == text
        ]
        if not found:
            raise AssertionError(f"no session starts with {text!r}")
        return max(found, key=lambda interpreter: interpreter.session.created_at)

    return server.call(find())


def stop_session(server: LiveServer, interpreter: Any) -> None:
    """Stop a session's run from the server's side (clean-up after a test)."""
    server.call(interpreter.stop())


def stop_running(server: LiveServer) -> int:
    """Stop every run still going on the server (after each test: a test that failed midway
    leaves its long replies streaming, which would slow the next tests down and could be
    mistaken for theirs). Returns how many it stopped."""
    manager: SessionManager | None = getattr(server.state, "manager", None)
    if manager is None or server.loop is None or not server.loop.is_running():
        return 0  # (a server built otherwise, or stopped already: nothing to stop)

    async def stop_all() -> int:
        running = [i for i in manager._live.values() if i.busy or i.autochat_active]
        for interpreter in running:
            await interpreter.stop()
        return len(running)

    return server.call(stop_all())


def toast(page: Page, text: str) -> Any:
    """Gradio's notification (gr.Info, gr.Warning) that says `text`."""
    return page.get_by_test_id("toast-text").filter(has_text=text)


def make_page() -> Layout:
    """The page's components without a server (two agent roles, one model), for tests of
    handlers and page logic that need no browser. Call it with an event loop running: Gradio
    makes (and never closes) a loop of its own when a Blocks is built without one."""
    with gr.Blocks():
        return build_page(
            title="t",
            notice=None,
            agents=list(AgentName)[:2],
            models=["scripted"],
            default_model="scripted",
            model_note="",
        )


async def page_handlers(
    workspace: Path,
    model: LLMProvider | None = None,
    *,
    store: SessionStore | None = None,
    start: bool = True,
) -> tuple[Layout, SessionManager, Handlers]:
    """A page's handlers without a server or a browser, on a manager whose model is `model`
    (by default one that answers "the reply"), its chats kept in `store` (in memory by
    default) and their folders under `workspace`; the manager is started unless `start` is
    False. The caller closes the manager."""
    page = make_page()
    manager = SessionManager(
        models=StaticCatalog(model or ScriptedModel(default="the reply")),
        store=store if store is not None else MemoryStore(),
        workspace_root=workspace,
    )
    if start:
        await manager.start()
    return page, manager, Handlers(manager, page, icons={}, languages=(), models=())
