"""The Streamlit front end, end to end: `gui-agent streamlit` run as a real process against
a real GuiAgent API server (offline models), driven in a real Chromium. Signing in, a chat
with its reply, an approval answered from the page, and Stop during a streaming reply."""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import FilePayload, Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from backends.api import routes_sessions
from backends.api.responses import SessionDetail
from connectors.scripted import call
from gui_agent.wording import ALLOW_FOR_THIS_CHAT, AUTOCHAT_STILL_ON
from schema import MessageStatus, Role
from tests.backends.api.live import Backend, running_backend
from tests.backends.conftest import WarmTabs
from tests.backends.pictures import red_png
from tests.backends.streamlit.kit import (
    clicked,
    front_for,
    losing_a_click,
    opened,
    run_by,
    sent_and_lost,
    warm_front_tab,
)

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with running_backend(tmp_path_factory.mktemp("st"), users=[("ada", PASSWORD)]) as running:
        yield running


@pytest.fixture(scope="module")
def front(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`gui-agent streamlit` for the backend; its address."""
    pytest.importorskip("streamlit")
    with front_for(backend.base_url, tmp_path_factory.mktemp("st-front")) as address:
        yield address


@pytest.fixture
def page(front: str, tabs: WarmTabs) -> Iterator[Page]:
    with warm_front_tab(front, tabs) as tab:
        yield tab


def sign_in(page: Page, password: str = PASSWORD) -> None:
    page.get_by_label("User name").fill("ada")
    page.get_by_label("Password", exact=True).fill(password)
    clicked(page, page.get_by_role("button", name="Sign in").click)


def new_chat(page: Page) -> None:
    clicked(page, page.get_by_role("button", name="New chat", exact=True).click)
    expect(page.get_by_role("heading", name="Untitled chat")).to_be_visible()
    settled(page)


def settled(page: Page) -> None:
    """Wait for the script to finish its run (a click or a change runs it again)."""
    app = page.get_by_test_id("stApp")
    expect(app).to_have_attribute("data-test-script-state", "notRunning")


def send(page: Page, text: str) -> None:
    settled(page)  # typed during a run, the text could land in the box being replaced
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(text)
    box.press("Enter")


def pick(page: Page, label: str, option: str) -> None:
    """Pick `option` in the select box `label`. After a turn the script runs again once
    or twice; a menu opened as it does is closed with the box it belonged to, so the
    box is opened again until its menu stays. (The click too: a menu closed between the
    option showing and the click left the click waiting for an option gone with it.)"""
    for _ in range(5):
        settled(page)
        page.get_by_label(label).click()
        choice = page.get_by_role("option", name=option)
        try:
            choice.click(timeout=3000)
        except PlaywrightTimeoutError:
            continue
        return
    raise AssertionError(f"the menu of {label!r} did not stay open")


def signed_in(page: Page) -> None:
    sign_in(page)
    expect(page.get_by_text("Signed in as ada")).to_be_visible()


def uploader_of(page: Page, label: str) -> Locator:
    """The sidebar's file box whose label starts with `label`."""
    return page.get_by_test_id("stFileUploader").filter(has_text=label)


def test_a_person_signs_in_chats_and_sees_the_reply(page: Page, backend: Backend) -> None:
    sign_in(page, "not the password")
    expect(page.get_by_text("Wrong user name or password.")).to_be_visible()
    signed_in(page)
    send(page, "Hello from Streamlit")
    expect(page.get_by_text("Hello from the scripted model.")).to_be_visible()
    expect(page.get_by_role("heading", name="Hello from Streamlit")).to_be_visible()  # title
    # the chat is the person's, on the server, with both messages
    api = backend.client().login("ada", PASSWORD)
    [record] = [
        s
        for s in api.get("/api/sessions").json()["sessions"]
        if s["title"] == "Hello from Streamlit"
    ]
    contents = [m.content for m in api.messages(record["id"])]
    assert contents == ["Hello from Streamlit", "Hello from the scripted model."]
    settled(page)
    memory = page.get_by_text("Memory: what the agent remembers")
    clicked(page, memory.click)  # what the model is sent
    expect(page.get_by_text("Context window: 2 messages,", exact=False)).to_be_visible()
    expect(page.get_by_text("2. assistant: Hello from the scripted model.")).to_be_visible()
    # A reload keeps the person signed in to nothing: Streamlit's state is per tab, so the
    # form comes back and nothing of the chat shows before signing in.
    page.reload()
    expect(page.get_by_label("User name")).to_be_visible()
    expect(page.get_by_text("Hello from the scripted model.")).to_have_count(0)


def test_an_approval_is_put_to_the_person_and_the_result_shown(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    backend.scripted.push(call("run_python", code="print(6*7)"), "The answer is 42.")
    send(page, "compute six times seven")
    expect(page.get_by_text("Approval needed: Run Python code.")).to_be_visible()
    expect(page.get_by_test_id("stCode").filter(has_text="print(6*7)").first).to_be_visible()
    clicked(page, page.get_by_role("button", name="Allow once").click)
    expect(page.get_by_text("The answer is 42.")).to_be_visible()
    expect(page.get_by_text("Approval needed")).to_have_count(0)
    step = page.get_by_test_id("stExpander").filter(has_text="run_python").first
    expect(step).to_contain_text("exit code 0")  # the result, in the call's step


TICKING = """
import time
for i in range(6):
    print(f"\\x1b[32mtick {i}\\x1b[0m")  # in colour: the page shows the words only
    time.sleep(0.4 if i < 5 else 8.0)
"""
"""Prints a green line every 0.4 s, the last one for eight seconds before it ends (run_python's
output is unbuffered): a slow machine's page still finds the call running after its last line,
where a second was missed."""


def test_a_running_call_shows_what_it_prints_then_its_result(page: Page, backend: Backend) -> None:
    title = f"Counting {uuid.uuid4().hex[:8]}"  # (the backend outlives a rerun of this test)
    api = backend.client().login("ada", PASSWORD)
    api.create_session(title=title, settings={"permissions": {"run_python": "allow"}})
    signed_in(page)  # (the chats list then has it)
    clicked(page, page.get_by_role("button", name=title, exact=True).click)
    expect(page.get_by_role("heading", name=title)).to_be_visible()
    backend.scripted.push(call("run_python", code=TICKING), "Counted to five.")
    send(page, "count slowly")
    running = page.get_by_test_id("stExpander").filter(has_text="run_python (running)")
    # while it runs: what it printed so far (not in its arguments: f"tick {i}"), growing
    expect(running.get_by_test_id("stCode").filter(has_text="tick 0")).to_have_count(1)
    expect(running.get_by_test_id("stCode").filter(has_text="tick 1")).to_have_count(1)
    # a click runs the script again mid-call: the call's start is past, its output still shows
    clicked(page, page.get_by_text("Memory: what the agent remembers").click)
    expect(page.get_by_text("Context window:", exact=False)).to_be_visible()
    printed = running.get_by_test_id("stCode").filter(has_text="tick 5")
    expect(printed).to_have_count(1)
    expect(printed).not_to_contain_text("[32m")  # (its arguments hold the codes)
    expect(running).to_have_count(1)  # once: the history leaves it to the live view
    # finished: the chat drawn from the history, the result in the call's step
    expect(page.get_by_text("Counted to five.")).to_be_visible(timeout=30_000)
    expect(running).to_have_count(0)
    step = page.get_by_test_id("stExpander").filter(has_text="run_python")
    expect(step.get_by_test_id("stCode").filter(has_text="tick 5")).to_have_count(1)


def test_a_tool_allowed_for_the_session_is_shown_and_made_to_ask_again(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    for code in ("print(11)", "print(22)"):
        backend.scripted.push(call("run_python", code=code), f"Ran {code}.")
    send(page, "run the first")
    clicked(page, page.get_by_role("button", name=ALLOW_FOR_THIS_CHAT).click)
    expect(page.get_by_text("Ran print(11).")).to_be_visible()
    expect(page.get_by_text("✓ Allowed for this chat · Run Python code")).to_be_visible()
    allowed = page.get_by_text("run_python: runs without asking in this chat.")
    expect(allowed).to_be_visible()
    settled(page)
    clicked(page, page.get_by_role("button", name="Ask before every tool again").click)
    expect(allowed).to_have_count(0)
    send(page, "run the second")
    expect(page.get_by_text("Approval needed: Run Python code.")).to_be_visible()  # asks again
    clicked(page, page.get_by_role("button", name="Deny").click)
    expect(page.get_by_text("Approval needed")).to_have_count(0)


def test_a_tool_set_to_never_run_is_refused_without_asking(page: Page, backend: Backend) -> None:
    signed_in(page)
    new_chat(page)
    send(page, "a chat whose tools are set")
    expect(page.get_by_text("Hello from the scripted model.")).to_be_visible()
    settled(page)
    clicked(page, page.get_by_text("Tools: what each may do").click)
    pick(page, "run_python: asks you first", "Never run")
    expect(page.get_by_text("run_python: never runs (set for this chat)")).to_be_visible()
    backend.scripted.push(call("run_python", code="print(3)"), "Refused, then.")
    send(page, "run it")
    expect(page.get_by_text("Refused, then.")).to_be_visible()  # no approval was asked
    expect(page.get_by_text("Approval needed")).to_have_count(0)


def test_a_message_sent_while_a_turn_waits_shows_as_waiting_until_the_agent_takes_it(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    marker = uuid.uuid4().hex[:8]  # (the backend outlives a rerun of this test)
    backend.scripted.push(call("run_python", code="print(1)"), f"Done {marker}.")
    send(page, f"run something {marker}")
    expect(page.get_by_text("Approval needed: Run Python code.")).to_be_visible()
    send(page, f"and then this {marker}")  # the turn waits for the approval: queued
    waiting = page.get_by_text("Waiting: the agent reads this when its current step ends.")
    expect(waiting).to_be_visible()
    settled(page)
    clicked(page, page.get_by_role("button", name="Deny").click)  # the turn goes on, and takes it
    expect(page.get_by_text(f"Done {marker}.")).to_be_visible()
    expect(waiting).to_have_count(0)
    mine = page.get_by_test_id("stChatMessage").filter(has_text=f"and then this {marker}")
    expect(mine).to_have_count(1)
    api = backend.client().login("ada", PASSWORD)
    [record] = [
        s
        for s in api.get("/api/sessions").json()["sessions"]
        if s["title"] == f"run something {marker}"
    ]
    contents = [m.content for m in api.messages(record["id"])]
    assert f"and then this {marker}" in contents and contents[-1] == f"Done {marker}."


def slow_reply_streaming(page: Page) -> None:
    """Signed in, a new chat on the slow model, its reply to "tick slowly" streaming."""
    signed_in(page)
    new_chat(page)
    page.get_by_label("Model", exact=True).click()
    page.get_by_role("option", name="slow").click()
    send(page, "tick slowly")
    expect(page.get_by_text("tick20", exact=False).first).to_be_visible()


def test_stop_ends_a_streaming_reply_and_keeps_what_was_written(
    page: Page, backend: Backend
) -> None:
    slow_reply_streaming(page)
    box = page.get_by_test_id("stChatInputTextArea")  # typed as the reply streams
    box.fill("and after that")
    box.press("Enter")  # queued behind the turn
    waiting = page.get_by_text("Waiting: the agent reads this when its current step ends.")
    expect(waiting).to_be_visible()
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_enabled()
    stop.click()
    expect(page.get_by_text("Interrupted: the turn was stopped here.")).to_be_visible()
    # The queued message stays in the chat, saying why nothing answers it
    expect(waiting).to_have_count(0)
    mine = page.get_by_test_id("stChatMessage").filter(has_text="and after that")
    expect(mine).to_have_count(1)
    expect(mine).to_contain_text(
        "Not answered: the turn it waited for was stopped before the agent read it. "
        "Send it again to have it answered."
    )
    api = backend.client().login("ada", PASSWORD)
    sessions = api.get("/api/sessions").json()["sessions"]
    [record] = [s for s in sessions if s["title"] == "tick slowly"]
    *_, reply, queued = api.messages(record["id"])
    assert reply.role is Role.ASSISTANT and reply.status is MessageStatus.INTERRUPTED
    assert "tick20" in reply.content and len(reply.content.split()) < 3000
    assert queued.content == "and after that" and queued.metadata.get("unanswered") is True


def test_autochat_runs_its_turns_within_the_limit_and_says_why_it_stopped(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    opened(page, "AutoChat")
    page.get_by_label("Max automatic turns").fill("2")
    run_by(page, page.get_by_role("button", name="Save limits").click)
    clicked(page, page.get_by_text("AutoChat: keep working on its own").click)
    expect(page.get_by_text("AutoChat is on: up to 2 automatic turns.")).to_be_visible()
    send(page, "keep going on your own")
    expect(
        page.get_by_text(
            "AutoChat stopped after 2 automatic turns: it reached its limit of automatic turns. "
            + AUTOCHAT_STILL_ON  # (its switch stays on)
        )
    ).to_be_visible()
    api = backend.client().login("ada", PASSWORD)
    sessions = api.get("/api/sessions").json()["sessions"]
    [record] = [s for s in sessions if s["title"] == "keep going on your own"]
    assert record["autochat"]["max_turns"] == 2 and record["autochat"]["enabled"] is True
    messages = api.messages(record["id"])
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT] * 3
    assert [bool(m.metadata.get("autochat")) for m in messages if m.role is Role.USER] == [
        False,
        True,
        True,
    ]


def test_a_saved_change_draws_the_page_once_more(
    page: Page, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saving the AutoChat limits runs the script once: the button's callback saves them
    before the run, which shows what was saved. Reading the change's event back changes
    nothing shown, so no second run follows (each run closes a menu the person may have
    just opened, and one starting after a pause took a click made in that pause)."""
    signed_in(page)
    new_chat(page)
    opened(page, "AutoChat")
    page.get_by_label("Max automatic turns").fill("4")  # (in a form: nothing runs yet)
    settled(page)
    asked: list[str] = []  # the chats the page asked the server for, one per run
    detail = SessionDetail

    def counted(**fields: Any) -> SessionDetail:
        asked.append(fields["session"].id)
        return detail(**fields)

    monkeypatch.setattr(routes_sessions, "SessionDetail", counted)
    run_by(page, page.get_by_role("button", name="Save limits").click)
    time.sleep(2)  # (a run that follows another starts at once: none came)
    settled(page)
    api = backend.client().login("ada", PASSWORD)
    untitled = [s for s in api.get("/api/sessions").json()["sessions"] if not s["title"]]
    session_id = untitled[0]["id"]  # (the newest chat without a title: this one)
    assert untitled[0]["autochat"]["max_turns"] == 4
    assert asked.count(session_id) == 1, asked
    expect(page.get_by_label("Max automatic turns")).to_have_value("4")


def test_a_picture_is_sent_a_turn_retried_and_the_chat_deleted(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    image = red_png()
    attached: FilePayload = {"name": "red.png", "mimeType": "image/png", "buffer": image}
    page.get_by_test_id("stChatInput").locator("input[type=file]").set_input_files(attached)
    expect(page.get_by_text("red.png")).to_be_visible()  # attached, waiting to be sent
    settled(page)
    page.get_by_test_id("stChatInputTextArea").fill("what colour is this")
    submit = page.get_by_test_id("stChatInputSubmitButton")
    expect(submit).to_be_enabled()  # once the picture is uploaded (Enter before is ignored)
    submit.click()
    expect(page.get_by_text("Hello from the scripted model.")).to_be_visible()
    user = page.get_by_test_id("stChatMessage").filter(has_text="what colour is this")
    expect(user.locator("img")).to_have_count(1)
    api = backend.client().login("ada", PASSWORD)
    sessions = api.get("/api/sessions").json()["sessions"]
    [record] = [s for s in sessions if s["title"] == "what colour is this"]
    first, reply = api.messages(record["id"])
    assert [base64.b64decode(i.data or "") for i in first.images] == [image]
    # Retry: the last message answered again, in place of the reply it had
    backend.scripted.push("A red square.")
    settled(page)
    clicked(page, page.get_by_role("button", name="Retry last turn").click)
    expect(page.get_by_text("A red square.")).to_be_visible()
    expect(page.get_by_text("Hello from the scripted model.")).to_have_count(0)
    again = api.messages(record["id"])
    assert [m.content for m in again] == ["what colour is this", "A red square."]
    assert again[1].id != reply.id
    # Delete, after saying yes
    settled(page)
    page.get_by_role("button", name="Delete chat").click()
    clicked(page, page.get_by_role("button", name="Delete", exact=True).click)
    expect(page.get_by_text("Start a new chat, or open one from the list.")).to_be_visible()
    expect(page.get_by_role("button", name="what colour is this")).to_have_count(0)
    assert api.get(f"/api/sessions/{record['id']}").status_code == 404


def test_the_chats_settings_are_shown_and_saved(page: Page, backend: Backend) -> None:
    signed_in(page)
    new_chat(page)
    opened(page, "Settings")
    prompt = page.get_by_label("System prompt")
    expect(prompt).to_have_value("You are a helpful assistant. Use tools when they help.")
    for label, value in (
        ("System prompt", "Answer like a pirate."),
        ("Max steps per turn", "3"),
        ("Temperature (empty: the model's)", "0.50"),
    ):
        box = page.get_by_label(label)
        box.fill(value)
        box.press("Tab")  # as a person leaves the box
        expect(box).to_have_value(value)
    clicked(page, page.get_by_role("button", name="Save settings").click)
    api = backend.client().login("ada", PASSWORD)
    # (the newest chat without a title is this one)
    untitled = [s for s in api.get("/api/sessions").json()["sessions"] if not s["title"]]
    session_id = untitled[0]["id"]
    deadline = time.monotonic() + 20
    while api.session(session_id)["session"]["settings"]["max_iterations"] != 3:
        assert time.monotonic() < deadline, "the settings were not saved"
        time.sleep(0.1)
    settled(page)
    send(page, "ahoy")
    expect(page.get_by_text("Hello from the scripted model.")).to_be_visible()
    settings = api.session(session_id)["session"]["settings"]
    assert settings["system_prompt"] == "Answer like a pirate."
    assert settings["max_iterations"] == 3 and settings["temperature"] == 0.5
    assert settings["max_tokens"] is None  # left empty: the model's
    assert settings["approval_timeout_s"] == 300.0  # unchanged
    sent = backend.scripted.requests[-1]
    assert sent.messages[0].content == "Answer like a pirate."  # the model was told
    assert sent.settings is not None and sent.settings.temperature == 0.5
    # renamed: the heading and the list say so, and so does the server. (Its first title
    # comes with a run of the script after the turn; opened before it, Rename's box would be
    # drawn again with that title beside the one open.)
    expect(page.get_by_role("heading", name="ahoy")).to_be_visible()
    settled(page)
    page.get_by_role("button", name="Rename").click()
    title = page.get_by_label("Chat title")
    expect(title).to_have_value("ahoy")
    title.fill("Pirate talk")
    title.press("Enter")  # submits the form, as its hint says
    expect(page.get_by_role("heading", name="Pirate talk")).to_be_visible()
    expect(page.get_by_role("button", name="▸ Pirate talk")).to_be_visible()
    assert api.session(session_id)["session"]["title"] == "Pirate talk"


def test_settings_whose_save_click_was_lost_are_saved_by_the_next_run(
    page: Page, backend: Backend
) -> None:
    """Save settings' click lost (another change came as the run it asked for started, and
    Streamlit ran that one's run alone): the run that took its place saves what the form
    holds."""
    lost = losing_a_click(page, "settings-")
    signed_in(page)
    new_chat(page)
    opened(page, "Settings")
    box = page.get_by_label("Max steps per turn")
    box.fill("7")
    box.press("Tab")
    settled(page)
    sent_and_lost(page, lost, page.get_by_role("button", name="Save settings").click)
    settled(page)
    memory = page.get_by_text("Memory: what the agent remembers")
    clicked(page, memory.click)  # the next change: a run
    expect(page.get_by_text("Goal: none pinned.")).to_be_visible()  # (that run, drawn)
    api = backend.client().login("ada", PASSWORD)
    untitled = [s for s in api.get("/api/sessions").json()["sessions"] if not s["title"]]
    session_id = untitled[0]["id"]  # (the newest chat without a title: this one)
    deadline = time.monotonic() + 20
    while api.session(session_id)["session"]["settings"]["max_iterations"] != 7:
        assert time.monotonic() < deadline, "the settings were not saved"
        time.sleep(0.1)
    settled(page)
    expect(page.get_by_label("Max steps per turn")).to_have_value("7")


def test_a_title_whose_save_click_was_lost_is_saved_by_the_next_run(
    page: Page, backend: Backend
) -> None:
    """Rename's Save click lost as Save settings' can be: the next run saves the title."""
    lost = losing_a_click(page, "rename-")
    signed_in(page)
    new_chat(page)
    page.get_by_role("button", name="Rename").click()
    page.get_by_label("Chat title").fill("A title kept")
    settled(page)
    sent_and_lost(page, lost, page.get_by_role("button", name="Save title").click)
    settled(page)
    memory = page.get_by_text("Memory: what the agent remembers")
    clicked(page, memory.click)  # the next change: a run
    expect(page.get_by_role("heading", name="A title kept")).to_be_visible()
    api = backend.client().login("ada", PASSWORD)
    titles = [s["title"] for s in api.get("/api/sessions").json()["sessions"]]
    assert "A title kept" in titles


def test_the_last_message_is_edited_and_the_chat_exported_imported_and_cleared(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    expect(page.get_by_text("No model calls yet.")).to_be_visible()
    send(page, "what is the capital of Frnace")
    expect(page.get_by_text("Hello from the scripted model.")).to_be_visible()
    expect(page.get_by_text("Tokens so far:", exact=False)).to_contain_text("1 model call")
    # Edit: the message back in a box, changed, and answered again in place of the reply
    backend.scripted.push("Paris.")
    settled(page)
    page.get_by_role("button", name="Edit last message").click()
    box = page.get_by_label("Your message")
    expect(box).to_have_value("what is the capital of Frnace")
    box.fill("what is the capital of France")
    clicked(page, page.get_by_role("button", name="Send edited").click)
    expect(page.get_by_text("Paris.")).to_be_visible()
    expect(page.get_by_text("Hello from the scripted model.")).to_have_count(0)
    api = backend.client().login("ada", PASSWORD)
    sessions = api.get("/api/sessions").json()["sessions"]
    [record] = [s for s in sessions if s["title"] == "what is the capital of Frnace"]
    expected = ["what is the capital of France", "Paris."]
    assert [m.content for m in api.messages(record["id"])] == expected
    # Export: asked for, then saved as a file holding the chat
    settled(page)
    clicked(page, page.get_by_role("button", name="Export chat").click)
    with page.expect_download() as saving:
        page.get_by_role("button", name=re.compile(r"^Save the file")).click()
    download = saving.value
    assert download.suggested_filename.startswith("gui-agent-what-is-the-capital-of-frnace-")
    data = Path(download.path()).read_bytes()
    assert [m["content"] for m in json.loads(data)["messages"]] == expected
    # Import: the file becomes a new chat, opened, and the page says what it did
    settled(page)
    importing = uploader_of(page, "Import a chat")
    expect(importing).to_contain_text("64MB per file")
    uploader = importing.locator("input[type=file]")
    uploader.set_input_files(
        {"name": download.suggested_filename, "mimeType": "application/json", "buffer": data}
    )
    expect(page.get_by_text("Imported 2 messages as a new chat.")).to_be_visible()
    sessions = api.get("/api/sessions").json()["sessions"]
    copy = "what is the capital of Frnace (imported)"  # (the original is still there)
    [imported] = [s["id"] for s in sessions if s["title"] == copy]
    assert [m.content for m in api.messages(imported)] == expected
    # Clear, after saying yes: the open (imported) chat empties, the first one keeps its own
    settled(page)
    page.get_by_role("button", name="Clear chat").click()
    clicked(page, page.get_by_role("button", name="Clear", exact=True).click)
    expect(page.get_by_text("Paris.")).to_have_count(0)
    assert api.messages(imported) == []
    assert [m.content for m in api.messages(record["id"])] == expected


def test_a_file_that_is_not_an_export_is_refused_once_and_nothing_is_made(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    api = backend.client().login("ada", PASSWORD)
    before = len(api.get("/api/sessions").json()["sessions"])
    uploader = uploader_of(page, "Import a chat").locator("input[type=file]")
    bogus = b'{"format": "something else", "version": 1}'
    uploader.set_input_files(
        {"name": "notes.json", "mimeType": "application/json", "buffer": bogus}
    )
    refusal = page.get_by_text("Could not import:", exact=False)
    expect(refusal).to_be_visible()
    expect(page.get_by_text("notes.json")).to_have_count(0)  # taken once: the box is empty
    settled(page)
    page.get_by_label("Search chats").fill("x")  # any rerun: the refusal is not sent again
    run_by(page, lambda: page.get_by_label("Search chats").press("Enter"))
    expect(refusal).to_have_count(0)
    assert len(api.get("/api/sessions").json()["sessions"]) == before


def test_an_export_is_replayed_step_by_step_and_nothing_is_saved(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    backend.scripted.push(call("list_files"), "The folder is empty.")
    send(page, "what is in the folder, to replay")
    expect(page.get_by_text("The folder is empty.")).to_be_visible()
    api = backend.client().login("ada", PASSWORD)
    sessions = api.get("/api/sessions").json()["sessions"]
    [record] = [s for s in sessions if s["title"] == "what is in the folder, to replay"]
    exported = api.get(f"/api/sessions/{record['id']}/export").content
    settled(page)
    uploader_of(page, "Replay a chat").locator("input[type=file]").set_input_files(
        {"name": "chat.json", "mimeType": "application/json", "buffer": exported}
    )
    expect(
        page.get_by_role("heading", name="Replay: what is in the folder, to replay")
    ).to_be_visible()
    expect(page.get_by_text("End of the replay. Open a chat, or start a new one.")).to_be_visible()
    replayed = page.get_by_test_id("stChatMessage")
    expect(replayed).to_have_count(3)  # the call is shown with its reply
    expect(replayed.nth(0)).to_contain_text("what is in the folder, to replay")
    expect(replayed.nth(1)).to_contain_text("list_files")
    expect(replayed.nth(2)).to_contain_text("The folder is empty.")
    assert len(api.get("/api/sessions").json()["sessions"]) == len(sessions)  # nothing saved
    # A file that is not an export is refused with the reason.
    settled(page)
    uploader_of(page, "Replay a chat").locator("input[type=file]").set_input_files(
        {"name": "notes.json", "mimeType": "application/json", "buffer": b"{"}
    )
    expect(
        page.get_by_text("Could not replay: the replay file is not valid JSON: ", exact=False)
    ).to_be_visible()
    settled(page)
    clicked(page, page.get_by_role("button", name="Close the replay").click)
    expect(page.get_by_text("Start a new chat, or open one from the list.")).to_be_visible()
