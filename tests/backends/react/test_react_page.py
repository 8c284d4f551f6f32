"""The React front end (`backends/react`), as built by scripts/build-react.sh and served at
/react/ by the server's own `mount_react`, against a real API server (offline models), in a
real Chromium: signing in, a chat with its reply, an approval answered from the page, Stop
during a streaming reply, and the chats list kept live from another client."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect
from starlette.applications import Starlette

from backends.react_front import REACT_DIST, mount_react
from connectors.scripted import call
from gui_agent.wording import ALLOW_FOR_THIS_CHAT, AUTOCHAT_STILL_ON
from schema import Message, MessageStatus, Role
from tests.backends.api.live import Backend, running_backend
from tests.backends.conftest import WarmTabs
from tests.backends.pictures import red_png

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery staple"


@contextmanager
def served_react(folder: Path) -> Iterator[Backend]:
    """An API server on offline models, with the user ada, serving the built front end."""
    assert (REACT_DIST / "index.html").is_file(), "build it first: scripts/build-react.sh"
    front = Starlette()
    assert mount_react(front)
    with running_backend(folder, users=[("ada", PASSWORD)], page=front) as running:
        yield running


@contextmanager
def react_tab(backend: Backend, chromium: Browser, address: str = "/react") -> Iterator[Page]:
    """A tab of its own on the front end; it fails the test on any script error of the page."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(str(error)))
    tab.goto(f"{backend.base_url}{address}")  # (the folder's address without its slash, too)
    yield tab
    context.close()
    assert problems == []  # no script error on the page


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with served_react(tmp_path_factory.mktemp("react")) as running:
        yield running


@contextmanager
def warm_react_tab(backend: Backend, tabs: WarmTabs, address: str = "/react") -> Iterator[Page]:
    """`react_tab`, opened from `tabs`: its cookies and storage cleared when it closes."""
    tab = tabs.open(backend.base_url)
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(str(error)))
    try:
        tab.goto(f"{backend.base_url}{address}")
        yield tab
    finally:
        tabs.reset()
    assert problems == []  # no script error on the page


@pytest.fixture
def page(backend: Backend, tabs: WarmTabs) -> Iterator[Page]:
    with warm_react_tab(backend, tabs) as tab:
        yield tab


def signed_in(page: Page) -> None:
    page.get_by_label("User name").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("Signed in as ada")).to_be_visible()


def new_chat(page: Page) -> None:
    page.get_by_role("button", name="New chat").click()
    expect(page.get_by_role("heading", name="Untitled chat")).to_be_visible()


def send(page: Page, text: str) -> None:
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def chat_titled(backend: Backend, title: str) -> str:
    api = backend.client().login("ada", PASSWORD)
    sessions = api.get("/api/sessions").json()["sessions"]
    [record] = [s for s in sessions if s["title"] == title]
    return str(record["id"])


def test_a_person_signs_in_and_the_reply_streams_in(page: Page, backend: Backend) -> None:
    page.get_by_label("User name").fill("ada")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong user name or password.")
    signed_in(page)
    new_chat(page)
    send(page, "Hello from React")
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("Hello from the scripted model.")
    expect(page.get_by_label("Message")).to_have_value("")  # sent: the box is empty
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "STOP")
    expect(page.get_by_role("status", name="State")).to_have_text("Your turn")  # (not "STOP")
    # the title the first message gave, in the heading and the list (the chats-list stream)
    expect(page.get_by_role("heading", name="Hello from React")).to_be_visible()
    chats = page.get_by_role("navigation", name="Your chats")
    expect(chats.get_by_role("button", name="Hello from React")).to_be_visible()
    api = backend.client().login("ada", PASSWORD)
    messages = api.messages(chat_titled(backend, "Hello from React"))
    assert [m.content for m in messages] == ["Hello from React", "Hello from the scripted model."]
    # what the agent remembers: the window of the model call, then (read again) the next one
    page.get_by_text("Memory", exact=True).click()
    window = page.get_by_role("list", name="Context window")
    expect(page.get_by_text("Context window: 1 message,", exact=False)).to_be_visible()
    expect(window).to_have_text("user: Hello from React")
    page.reload()  # (still signed in: the login is kept for the tab)
    expect(page.get_by_text("Signed in as ada")).to_be_visible()
    page.get_by_role("navigation", name="Your chats").get_by_role(
        "button", name="Hello from React"
    ).click()
    page.get_by_text("Memory", exact=True).click()
    expect(page.get_by_text("Context window: 2 messages,", exact=False)).to_be_visible()
    expect(window.get_by_role("listitem")).to_have_text(
        ["user: Hello from React", "assistant: Hello from the scripted model."]
    )


def test_the_models_the_server_left_out_are_named_with_why(
    tmp_path: Path, chromium: Browser
) -> None:
    why = "openai:gpt-4o-mini is left out: OPENAI_BASE_URL '127.0.0.1:1/v1' has no scheme"
    front = Starlette()
    assert mount_react(front)
    with (
        running_backend(tmp_path, users=[("ada", PASSWORD)], page=front, left_out=[why]) as ran,
        react_tab(ran, chromium) as tab,
    ):
        signed_in(tab)
        expect(tab.get_by_role("list", name="Models left out")).to_have_text(why)
    with running_backend(tmp_path / "none", page=front) as ran, react_tab(ran, chromium) as tab:
        expect(tab.get_by_role("button", name="New chat")).to_be_visible()  # (no login here)
        expect(tab.get_by_role("list", name="Models left out")).to_have_count(0)


def test_an_approval_is_put_to_the_person_and_the_result_shown(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    backend.scripted.push(call("run_python", code="print(6*7)"), "The answer is 42.")
    send(page, "compute six times seven")
    approval = page.get_by_role("region", name="Approval")
    expect(approval).to_contain_text("Approval needed: Run Python code.")
    expect(approval).to_contain_text("print(6*7)")
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "WAITING")
    expect(page.get_by_role("status", name="State")).to_have_text("Waiting for your approval")
    approval.get_by_role("button", name="Allow once").click()
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("The answer is 42.")
    expect(approval).to_have_count(0)
    expect(conversation.locator("details.call").filter(has_text="run_python")).to_contain_text(
        "exit code 0"
    )


def test_a_tool_allowed_for_the_session_is_shown_and_made_to_ask_again(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    for code in ("print(1)", "print(2)"):
        backend.scripted.push(call("run_python", code=code), f"Ran {code}.")
    send(page, "run the first")
    approval = page.get_by_role("region", name="Approval")
    approval.get_by_role("button", name=ALLOW_FOR_THIS_CHAT).click()
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("Ran print(1).")
    expect(conversation).to_contain_text("✓ Allowed for this chat · Run Python code")
    allowed = page.get_by_label("Allowed tools")
    expect(allowed).to_have_text("run_python: runs without asking in this chat.")
    page.get_by_text("Tools", exact=True).click()
    tools = page.get_by_role("list", name="Tools")
    expect(tools).to_contain_text("run_python: runs without asking (allowed for this chat)")
    page.get_by_role("button", name="Ask before every tool again").click()
    expect(page.get_by_text("None: a tool that changes things asks you first.")).to_be_visible()
    send(page, "run the second")
    expect(approval).to_contain_text("print(2)")  # it asks again
    approval.get_by_role("button", name="Deny").click()
    expect(approval).to_have_count(0)


def test_a_tool_set_to_never_run_is_refused_without_asking(page: Page, backend: Backend) -> None:
    signed_in(page)
    new_chat(page)
    send(page, "a chat whose tools are set")
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("Hello from the scripted model.")
    page.get_by_text("Tools", exact=True).click()
    tools = page.get_by_role("list", name="Tools")
    expect(tools).to_contain_text("run_python: asks you first")
    page.get_by_label("When the agent calls run_python").select_option("deny")
    expect(tools).to_contain_text("run_python: never runs (set for this chat)")
    backend.scripted.push(call("run_python", code="print(3)"), "Refused, then.")
    send(page, "run it")
    expect(conversation).to_contain_text("Refused, then.")  # no approval was asked
    expect(page.get_by_role("region", name="Approval")).to_have_count(0)
    page.get_by_label("When the agent calls run_python").select_option("")
    expect(tools).to_contain_text("run_python: asks you first")


TICKING = """
import time
for i in range(5):
    print(f"tick {i}")
    time.sleep(0.4)
"""
"""Prints a line every 0.4 s for 2 s (run_python's output is unbuffered)."""


def test_a_running_call_shows_what_it_prints_then_its_result(page: Page, backend: Backend) -> None:
    signed_in(page)
    new_chat(page)
    page.get_by_text("Tools", exact=True).click()
    page.get_by_label("When the agent calls run_python").select_option("allow")
    expect(page.get_by_role("list", name="Tools")).to_contain_text("run_python: runs without")
    backend.scripted.push(call("run_python", code=TICKING), "Counted to four.")
    send(page, "count slowly")
    running = page.locator(".running-call").filter(has_text="run_python")
    live = running.locator("pre.live-output")
    # while it runs: its name, and what it printed so far (not in its arguments: f"tick {i}")
    expect(live).to_contain_text("tick 0")
    expect(running).to_contain_text("run_python (running)")
    expect(live).to_contain_text("tick 1")  # it grows
    # finished: the result, with its call, takes the live view's place
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("Counted to four.")
    expect(page.locator(".running-call")).to_have_count(0)
    result = conversation.locator("details.call").filter(has_text="run_python").locator(".result")
    expect(result).to_contain_text("tick 4")


def test_stop_ends_a_streaming_reply_and_keeps_what_was_written(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    page.get_by_label("Model", exact=True).select_option("slow")
    send(page, "tick slowly")
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("tick20")  # streaming, before the reply is filed
    page.get_by_role("button", name="Stop").click()
    expect(conversation).to_contain_text("Interrupted: the turn was stopped here.")
    expect(page.get_by_role("button", name="Stop")).to_be_disabled()
    api = backend.client().login("ada", PASSWORD)
    reply = api.messages(chat_titled(backend, "tick slowly"))[-1]
    assert reply.role is Role.ASSISTANT and reply.status is MessageStatus.INTERRUPTED
    assert "tick20" in reply.content


def test_a_message_sent_during_a_turn_shows_as_waiting_until_the_agent_takes_it(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    page.get_by_label("Model", exact=True).select_option("slow")
    send(page, "tick for a while")
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("tick5")
    send(page, "and then this")
    waiting = conversation.locator(".entry.queued")
    expect(waiting).to_contain_text("and then this")
    expect(waiting).to_contain_text("Waiting: the agent reads this when its current step ends.")
    # a reload (or another tab) shows it waiting too: it was gone until the agent took it
    page.reload()
    expect(page.get_by_text("Signed in as ada")).to_be_visible()
    page.get_by_role("navigation", name="Your chats").get_by_role(
        "button", name="tick for a while"
    ).click()
    expect(waiting).to_contain_text("and then this")
    # Stop: the waiting message is kept in the chat, unanswered (nothing said is lost)
    page.get_by_role("button", name="Stop").click()
    expect(waiting).to_have_count(0)
    kept = conversation.locator(".entry.user").filter(has_text="and then this")
    expect(kept).to_have_count(1)
    expect(kept).to_contain_text(  # and why nothing answers it, with the way on
        "Not answered: the turn it waited for was stopped before the agent read it. "
        "Send it again to have it answered."
    )
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "STOP")
    api = backend.client().login("ada", PASSWORD)
    said = api.messages(chat_titled(backend, "tick for a while"))
    assert said[0].content == "tick for a while" and said[-1].content == "and then this"
    assert said[-1].metadata.get("unanswered") is True
    # A reload shows it so too (the mark is the message's, kept with it)
    page.reload()
    expect(page.get_by_text("Signed in as ada")).to_be_visible()
    page.get_by_role("navigation", name="Your chats").get_by_role(
        "button", name="tick for a while"
    ).click()
    expect(kept).to_contain_text("Not answered: the turn it waited for was stopped")
    expect(conversation.locator(".entry.user").first).not_to_contain_text("Not answered")


def test_the_chats_list_follows_another_client_is_searched_renamed_and_a_deleted_chat_closes(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    api = backend.client().login("ada", PASSWORD)
    made = api.post("/api/sessions", json={"title": "Made elsewhere"}).json()["session"]
    chats = page.get_by_role("navigation", name="Your chats")
    opened = chats.get_by_role("button", name="Made elsewhere")
    expect(opened).to_be_visible()  # without a reload
    opened.click()
    expect(page.get_by_role("heading", name="Made elsewhere")).to_be_visible()
    search = page.get_by_label("Search chats")  # the list, searched
    search.fill("elsewhere")
    expect(chats.get_by_role("listitem")).to_have_count(1)
    search.fill("no chat is called this")
    expect(chats.get_by_role("listitem")).to_have_count(0)
    search.fill("")
    expect(opened).to_be_visible()
    # renamed here: the heading, the list and the server have the new title
    page.get_by_role("button", name="Rename").click()
    title = page.get_by_label("Chat title")
    expect(title).to_have_value("Made elsewhere")
    title.fill("Renamed here")
    title.press("Enter")
    expect(page.get_by_role("heading", name="Renamed here")).to_be_visible()
    renamed = chats.get_by_role("button", name="Renamed here")
    expect(renamed).to_be_visible()
    assert api.session(made["id"])["session"]["title"] == "Renamed here"
    assert api.request("DELETE", f"/api/sessions/{made['id']}").status_code == 204
    expect(page.get_by_text("Start a new chat, or open one from the list.")).to_be_visible()
    expect(renamed).to_have_count(0)


def test_a_turn_and_a_retry_from_another_client_show_in_the_open_chat(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    api = backend.client().login("ada", PASSWORD)
    session_id = api.create_session(title="Shared")
    page.get_by_role("navigation", name="Your chats").get_by_role("button", name="Shared").click()
    expect(page.get_by_role("heading", name="Shared")).to_be_visible()
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "INIT")
    expect(page.get_by_role("status", name="State")).to_have_text("Ready")  # (not "INIT")
    api.send(session_id, "sent from elsewhere")
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("sent from elsewhere")
    expect(conversation).to_contain_text("Hello from the scripted model.")
    backend.scripted.push("Answered again.")
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "STOP")
    retried = api.post(f"/api/sessions/{session_id}/control", json={"action": "retry"})
    assert retried.status_code == 202, retried.text
    # the history was cut elsewhere: the page reads it again, the old reply gone
    expect(conversation).to_contain_text("Answered again.")
    expect(conversation).not_to_contain_text("Hello from the scripted model.")
    expect(conversation.locator("li")).to_have_count(2)


def test_a_message_the_server_refuses_stays_in_the_box(page: Page, backend: Backend) -> None:
    signed_in(page)
    new_chat(page)
    too_long = "x" * 200_001
    page.get_by_label("Message").fill(too_long)
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("alert")).to_be_visible()
    assert page.get_by_label("Message").input_value() == too_long  # nothing typed is lost
    page.get_by_label("Message").fill("short")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("list", name="Conversation")).to_contain_text(
        "Hello from the scripted model."
    )
    expect(page.get_by_role("alert")).to_have_count(0)  # the refusal is gone once sent


def test_a_picture_is_sent_the_message_edited_and_the_chat_exported_imported_and_cleared(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    expect(page.get_by_text("No model calls yet.")).to_be_visible()
    image = red_png()
    page.get_by_label("Attach pictures").set_input_files(
        {"name": "red.png", "mimeType": "image/png", "buffer": image}
    )
    expect(page.get_by_role("list", name="Attached pictures")).to_contain_text("red.png")
    send(page, "what colour is this")
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("Hello from the scripted model.")
    expect(conversation.locator(".entry.user img")).to_have_count(1)
    expect(page.get_by_text("Tokens so far:", exact=False)).to_contain_text("1 model call")
    session_id = chat_titled(backend, "what colour is this")
    api = backend.client().login("ada", PASSWORD)
    [asked, _] = api.messages(session_id)
    assert [base64.b64decode(i.data or "") for i in asked.images] == [image]
    # Edit: the message and its picture back in the box; sent, it replaces the old turn
    backend.scripted.push("A red square.")
    page.get_by_role("button", name="Edit last message").click()
    box = page.get_by_label("Message")
    expect(box).to_have_value("what colour is this")
    expect(page.get_by_role("list", name="Attached pictures")).to_contain_text("picture 1")
    box.fill("what colour is this square")
    page.get_by_role("button", name="Send edited").click()
    expect(conversation).to_contain_text("A red square.")
    expect(conversation).not_to_contain_text("Hello from the scripted model.")
    expected = ["what colour is this square", "A red square."]
    messages = api.messages(session_id)
    assert [m.content for m in messages] == expected and len(messages[0].images) == 1
    # Export: saved as a file holding the chat
    with page.expect_download() as saving:
        page.get_by_role("button", name="Export chat").click()
    download = saving.value
    assert download.suggested_filename.startswith("gui-agent-what-colour-is-this-")
    data = Path(download.path()).read_bytes()
    assert [m["content"] for m in json.loads(data)["messages"]] == expected
    # Import: a new chat, opened, saying what the import did
    page.get_by_label("Import a chat (an export file)").set_input_files(
        {"name": "chat.json", "mimeType": "application/json", "buffer": data}
    )
    expect(page.get_by_text("Imported 2 messages as a new chat.")).to_be_visible()
    sessions = api.get("/api/sessions").json()["sessions"]
    [imported] = [s["id"] for s in sessions if s["title"] == "what colour is this (imported)"]
    assert [m.content for m in api.messages(imported)] == expected
    # Clear, after saying yes: the open (imported) chat empties, the first keeps its own
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Clear chat").click()
    expect(conversation).not_to_contain_text("A red square.")
    assert api.messages(imported) == []
    assert [m.content for m in api.messages(session_id)] == expected


def test_an_export_is_replayed_step_by_step_and_nothing_is_saved(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    backend.scripted.push(call("list_files"), "The folder is empty.")
    send(page, "what is in the folder, to replay")
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("The folder is empty.")
    api = backend.client().login("ada", PASSWORD)
    session_id = chat_titled(backend, "what is in the folder, to replay")
    exported = api.get(f"/api/sessions/{session_id}/export").content
    chats = len(api.get("/api/sessions").json()["sessions"])
    box = page.get_by_label("Replay a chat (an export file; nothing is saved)")
    box.set_input_files({"name": "chat.json", "mimeType": "application/json", "buffer": exported})
    expect(
        page.get_by_role("heading", name="Replay: what is in the folder, to replay")
    ).to_be_visible()
    expect(page.get_by_role("status")).to_have_text(
        "End of the replay. Open a chat, or start a new one."
    )
    replayed = page.get_by_role("region", name="Replay").get_by_role("list", name="Conversation")
    expect(replayed.locator(".entry")).to_have_count(3)  # the call is shown with its reply
    expect(replayed).to_contain_text("what is in the folder, to replay")
    expect(replayed.locator(".call summary")).to_have_text("list_files")
    expect(replayed).to_contain_text("The folder is empty.")
    assert len(api.get("/api/sessions").json()["sessions"]) == chats  # nothing was saved
    # A file that is not an export is refused with the reason; the replay stays.
    box.set_input_files({"name": "notes.json", "mimeType": "application/json", "buffer": b"{"})
    expect(page.get_by_role("alert")).to_contain_text(
        "Could not replay: the replay file is not valid JSON: "
    )
    # Another export picked: it replays from the start, alone.
    other = api.create_session(title="another chat")
    api.send(other, "hello again")
    deadline = time.monotonic() + 20
    while len(api.messages(other)) < 2:
        assert time.monotonic() < deadline, "the other chat got no reply"
        time.sleep(0.05)
    second = api.get(f"/api/sessions/{other}/export").content
    box.set_input_files({"name": "other.json", "mimeType": "application/json", "buffer": second})
    expect(page.get_by_role("heading", name="Replay: another chat")).to_be_visible()
    expect(page.get_by_role("status")).to_have_text(
        "End of the replay. Open a chat, or start a new one."
    )
    expect(replayed.locator(".entry")).to_have_count(2)
    expect(replayed).not_to_contain_text("list_files")
    page.get_by_role("button", name="Close the replay").click()
    expect(page.get_by_text("Start a new chat, or open one from the list.")).to_be_visible()


def test_the_chats_settings_are_saved_and_a_refused_value_is_named(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    page.get_by_text("Settings", exact=True).click()
    prompt = page.get_by_label("System prompt")
    expect(prompt).to_have_value("You are a helpful assistant. Use tools when they help.")
    prompt.fill("Answer like a pirate.")
    page.get_by_label("Max steps per turn").fill("500")  # over the limit of 200
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_role("alert")).to_contain_text("max_iterations")
    page.get_by_label("Max steps per turn").fill("3")
    page.get_by_label("Temperature (empty: the model's)").fill("0.5")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_role("alert")).to_have_count(0)
    page.get_by_text("AutoChat", exact=True).click()
    page.get_by_label("Max automatic turns").fill("2")
    page.get_by_role("button", name="Save limits").click()
    page.get_by_label("AutoChat: keep working on its own").check()
    expect(page.get_by_text("AutoChat is on: up to 2 automatic turns.")).to_be_visible()
    send(page, "ahoy")
    expect(
        page.get_by_text("AutoChat stopped after 2 automatic turns", exact=False)
    ).to_contain_text(AUTOCHAT_STILL_ON)  # (its switch stays on)
    record = backend.client().login("ada", PASSWORD).session(chat_titled(backend, "ahoy"))
    settings = record["session"]["settings"]
    assert settings["system_prompt"] == "Answer like a pirate."
    assert settings["max_iterations"] == 3 and settings["temperature"] == 0.5
    assert settings["max_tokens"] is None and settings["approval_timeout_s"] == 300.0
    assert record["session"]["autochat"]["max_turns"] == 2
    assert [m.role for m in record_messages(record)] == [Role.USER, Role.ASSISTANT] * 3


def test_a_save_in_one_tab_keeps_and_shows_what_another_tab_saved(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    api = backend.client().login("ada", PASSWORD)
    title = f"Open in two tabs {uuid.uuid4().hex[:8]}"  # (a rerun makes another)
    session_id = api.create_session(title=title)
    other = page.context.new_page()
    other.goto(f"{backend.base_url}/react")
    signed_in(other)
    for tab in (page, other):
        tab.get_by_role("navigation", name="Your chats").get_by_role("button", name=title).click()
        tab.get_by_text("Settings", exact=True).click()
        tab.get_by_text("AutoChat", exact=True).click()
    other.get_by_label("Max tokens (empty: the model's)").fill("64")  # typed, not saved yet
    page.get_by_label("Temperature (empty: the model's)").fill("0.5")
    page.get_by_role("button", name="Save settings").click()
    page.get_by_label("Max automatic turns").fill("7")
    page.get_by_role("button", name="Save limits").click()
    # the other tab shows what was saved here, and keeps what is being typed in it
    expect(other.get_by_label("Temperature (empty: the model's)")).to_have_value("0.5")
    expect(other.get_by_label("Max automatic turns")).to_have_value("7")
    expect(other.get_by_label("Max tokens (empty: the model's)")).to_have_value("64")
    # saved there, a change to other boxes leaves what was saved here as it is
    other.get_by_label("System prompt").fill("Be brief.")
    other.get_by_role("button", name="Save settings").click()
    other.get_by_label("Delay between turns (s)").fill("1")
    other.get_by_role("button", name="Save limits").click()
    expect(page.get_by_label("System prompt")).to_have_value("Be brief.")
    expect(page.get_by_label("Max tokens (empty: the model's)")).to_have_value("64")
    expect(page.get_by_label("Delay between turns (s)")).to_have_value("1")
    expect(page.get_by_label("Temperature (empty: the model's)")).to_have_value("0.5")
    record = api.session(session_id)["session"]
    assert record["settings"]["temperature"] == 0.5 and record["settings"]["max_tokens"] == 64
    assert record["settings"]["system_prompt"] == "Be brief."
    assert record["autochat"]["max_turns"] == 7 and record["autochat"]["delay_s"] == 1


def record_messages(record: dict[str, Any]) -> list[Message]:
    return [Message.model_validate(m) for m in record["messages"]]


def test_the_build_is_what_the_server_serves() -> None:
    index = (REACT_DIST / "index.html").read_text()
    assert "./assets/" in index  # relative: served under /react/ behind any path prefix
    built = next(Path(REACT_DIST / "assets").glob("*.js")).read_text()
    assert "api/client.js" in built  # the API's client is the server's own, not bundled
