"""The Streamlit front end against what goes wrong between chats, people and pictures, end to
end (a real `gui-agent streamlit`, a real API server, a real Chromium): a damaged picture, a
click that lands as another chat opens, another person signing in on the same tab, a message
longer than the server takes, more chats than the sidebar lists (and a search starting from
the first page again), an edit refused because another tab wrote since, unsent text kept with
its chat, and signing out."""

from __future__ import annotations

import base64
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from backends.api import auth, routes_access, routes_sessions
from backends.api.responses import SessionDetail
from connectors.scripted import call
from schema.requests import MAX_MESSAGE_CHARS
from tests.backends.api.live import Api, Backend, running_backend
from tests.backends.conftest import WarmTabs
from tests.backends.pictures import red_png
from tests.backends.streamlit.kit import clicked, front_for, warm_front_tab
from tests.backends.streamlit.test_streamlit_page import settled, uploader_of

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery staple"
PEOPLE = ("ada", "cy", "dee", "eve", "fay", "gus")
UNSHOWABLE = "(could not show this picture)"


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    users = [(name, PASSWORD) for name in PEOPLE]
    with running_backend(tmp_path_factory.mktemp("st-chats"), users=users) as running:
        yield running


@pytest.fixture(scope="module")
def front(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`gui-agent streamlit` for the backend; its address."""
    pytest.importorskip("streamlit")
    with front_for(backend.base_url, tmp_path_factory.mktemp("st-chats-front")) as address:
        yield address


@pytest.fixture
def page(front: str, tabs: WarmTabs) -> Iterator[Page]:
    with warm_front_tab(front, tabs) as tab:
        yield tab


def signed_in(page: Page, name: str = "ada", password: str = PASSWORD) -> None:
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password", exact=True).fill(password)
    clicked(page, page.get_by_role("button", name="Sign in").click)
    expect(page.get_by_text(f"Signed in as {name}")).to_be_visible()
    settled(page)


def api_of(backend: Backend, name: str = "ada") -> Api:
    return backend.client().login(name, PASSWORD)


def answered(api: Api, session_id: str, count: int) -> None:
    """Wait until the chat holds `count` messages and no turn runs."""
    deadline = time.monotonic() + 20
    while True:
        detail = api.session(session_id)
        if len(detail["messages"]) >= count and not detail["busy"]:
            return
        assert time.monotonic() < deadline, detail["messages"]
        time.sleep(0.1)


def open_chat(page: Page, title: str) -> None:
    clicked(page, page.get_by_role("button", name=title, exact=True).click)
    expect(page.get_by_role("heading", name=title)).to_be_visible()
    settled(page)


def truncated_png() -> bytes:
    """A PNG whose header is whole and whose picture data stops short (a download cut in
    half): the server takes it, decoding it fails."""
    whole = red_png(64)
    return whole[: whole.index(b"IDAT") + 20]


def test_a_damaged_picture_is_a_note_and_the_rest_of_the_chat_still_works(
    page: Page, backend: Backend
) -> None:
    api = api_of(backend)
    title = f"damaged picture {uuid.uuid4().hex[:6]}"
    session_id = api.create_session(title=title)
    picture = {"media_type": "image/png", "data": base64.b64encode(truncated_png()).decode()}
    backend.scripted.push(call("run_python", code="print(1)"), "Ran it.")
    sent = api.post(
        f"/api/sessions/{session_id}/messages", json={"text": "look", "images": [picture]}
    )
    assert sent.status_code == 202, sent.text
    deadline = time.monotonic() + 20
    while not api.session(session_id)["pending_approvals"]:
        assert time.monotonic() < deadline, "no approval was asked"
        time.sleep(0.1)
    signed_in(page)
    open_chat(page, title)
    expect(page.get_by_text(UNSHOWABLE)).to_be_visible()
    expect(page.get_by_text("truncated", exact=False)).to_have_count(0)  # no traceback
    expect(page.get_by_test_id("stChatInputTextArea")).to_be_visible()
    # the approval is there, and answered
    clicked(page, page.get_by_role("button", name="Deny").click)
    expect(page.get_by_text("Ran it.")).to_be_visible()
    # Its export replays too, the picture a note there as well.
    exported = api.get(f"/api/sessions/{session_id}/export").content
    settled(page)
    uploader_of(page, "Replay a chat").locator("input[type=file]").set_input_files(
        {"name": "chat.json", "mimeType": "application/json", "buffer": exported}
    )
    expect(page.get_by_text("End of the replay. Open a chat, or start a new one.")).to_be_visible()
    # (once: as the replay is drawn, the chat it replaces may still be there for a moment)
    expect(page.get_by_text(UNSHOWABLE)).to_have_count(1)
    expect(page.get_by_text(UNSHOWABLE)).to_be_visible()
    expect(page.get_by_text("Ran it.")).to_be_visible()


def slow_to_open(monkeypatch: pytest.MonkeyPatch, session_id: str, seconds: float) -> None:
    """The server takes `seconds` to answer the chat `session_id` the first time it is asked
    for next, as a busy server would: the page meanwhile still shows the chat before."""
    detail = SessionDetail
    once = threading.Event()

    def slow(**fields: Any) -> SessionDetail:
        if fields["session"].id == session_id and not once.is_set():
            once.set()
            time.sleep(seconds)
        return detail(**fields)

    monkeypatch.setattr(routes_sessions, "SessionDetail", slow)


def test_a_click_as_another_chat_opens_acts_on_the_chat_shown(
    page: Page, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = api_of(backend)
    marker = uuid.uuid4().hex[:6]
    first, second = f"chat A {marker}", f"chat B {marker}"
    a_id, b_id = api.create_session(title=first), api.create_session(title=second)
    for session_id in (a_id, b_id):
        api.send(session_id, f"hello {marker}")
        answered(api, session_id, 2)
    b_before = [m.id for m in api.messages(b_id)]
    signed_in(page)
    open_chat(page, first)
    page.get_by_test_id("stChatInputTextArea").fill("a draft for A only")  # not sent
    slow_to_open(monkeypatch, b_id, 2.0)
    backend.scripted.push(f"A answered again {marker}")
    clicked(page, page.get_by_role("button", name=second, exact=True).click)
    app = page.get_by_test_id("stApp")
    expect(app).to_have_attribute("data-test-script-state", "running")
    # still A's, on the page
    clicked(page, page.get_by_role("button", name="Retry last turn").click)
    expect(page.get_by_role("heading", name=second)).to_be_visible()
    settled(page)
    answered(api, a_id, 2)
    assert [m.content for m in api.messages(a_id)][-1] == f"A answered again {marker}"
    assert [m.id for m in api.messages(b_id)] == b_before  # B's reply kept
    expect(page.get_by_test_id("stChatInputTextArea")).to_have_value("")  # A's draft stays A's


def test_a_message_sent_as_another_chat_opens_goes_to_the_chat_it_was_written_in(
    page: Page, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = api_of(backend)
    marker = uuid.uuid4().hex[:6]
    first, second = f"chat C {marker}", f"chat D {marker}"
    c_id, d_id = api.create_session(title=first), api.create_session(title=second)
    signed_in(page)
    open_chat(page, first)
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(f"meant for C {marker}")
    slow_to_open(monkeypatch, d_id, 2.0)
    clicked(page, page.get_by_role("button", name=second, exact=True).click)
    app = page.get_by_test_id("stApp")
    expect(app).to_have_attribute("data-test-script-state", "running")
    box.press("Enter")  # C's box, still on the page
    expect(page.get_by_role("heading", name=second)).to_be_visible()
    settled(page)
    answered(api, c_id, 2)
    assert [m.content for m in api.messages(c_id)][:1] == [f"meant for C {marker}"]
    assert api.messages(d_id) == []


def test_the_next_person_on_the_tab_sees_nothing_of_the_one_before(
    page: Page, backend: Backend
) -> None:
    api = api_of(backend, "cy")
    title = f"cy private {uuid.uuid4().hex[:6]}"
    session_id = api.create_session(title=title)
    api.send(session_id, "cy's secret")
    answered(api, session_id, 2)
    exported = api.get(f"/api/sessions/{session_id}/export").content
    signed_in(page, "cy")
    uploader_of(page, "Replay a chat").locator("input[type=file]").set_input_files(
        {"name": "chat.json", "mimeType": "application/json", "buffer": exported}
    )
    expect(page.get_by_role("heading", name=f"Replay: {title}")).to_be_visible()
    settled(page)
    assert backend.users is not None
    backend.users.add("cy", "a new password for cy", replace=True)  # cy's sign-in ends
    clicked(page, page.get_by_role("button", name="New chat", exact=True).click)
    expect(page.get_by_text("Your sign-in ended: sign in again.")).to_be_visible()
    signed_in(page, "dee")
    expect(page.get_by_text("Start a new chat, or open one from the list.")).to_be_visible()
    expect(page.get_by_role("heading", name=f"Replay: {title}")).to_have_count(0)
    expect(page.get_by_text("cy's secret")).to_have_count(0)


def test_the_message_box_takes_no_more_than_the_server_does(page: Page, backend: Backend) -> None:
    signed_in(page)
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill("x" * (MAX_MESSAGE_CHARS + 1))
    assert len(box.input_value()) <= MAX_MESSAGE_CHARS
    expect(page.get_by_text("String should have at most", exact=False)).to_have_count(0)


def test_chats_past_the_first_fifty_are_offered(page: Page, backend: Backend) -> None:
    api = api_of(backend, "eve")
    oldest = f"the oldest chat {uuid.uuid4().hex[:6]}"
    api.create_session(title=oldest)
    for number in range(50):
        api.create_session(title=f"chat {number}")
    signed_in(page, "eve")
    expect(page.get_by_text("Your 50 most recent chats: search to find others")).to_be_visible()
    expect(page.get_by_role("button", name=oldest)).to_have_count(0)
    clicked(page, page.get_by_role("button", name="Show more chats").click)
    expect(page.get_by_role("button", name=oldest)).to_be_visible()


def test_an_edit_refused_because_another_tab_wrote_says_so_and_keeps_the_text(
    page: Page, backend: Backend
) -> None:
    api = api_of(backend)
    title = f"edit race {uuid.uuid4().hex[:6]}"
    session_id = api.create_session(title=title)
    api.send(session_id, "first words")
    answered(api, session_id, 2)
    signed_in(page)
    open_chat(page, title)
    page.get_by_role("button", name="Edit last message").click()
    box = page.get_by_label("Your message")
    expect(box).to_have_value("first words")
    box.fill("first words, edited")
    api.send(session_id, "written in another tab")  # the page has not drawn it yet
    answered(api, session_id, 4)
    clicked(page, page.get_by_role("button", name="Send edited").click)
    expect(page.get_by_text("Edit:", exact=False).first).to_be_visible()
    contents = [m.content for m in api.messages(session_id)]
    assert contents[0] == "first words" and "written in another tab" in contents
    settled(page)
    # the edit's box still open (the refusal, said above, moved nothing), the text kept in it
    expect(page.get_by_label("Your message")).to_have_value("first words, edited")


def test_a_search_lists_its_chats_from_the_first_page_again(page: Page, backend: Backend) -> None:
    api = api_of(backend, "fay")
    marker = uuid.uuid4().hex[:8]
    oldest = f"{marker} the oldest"
    api.create_session(title=oldest)
    for number in range(50):
        api.create_session(title=f"{marker} chat {number}")
    signed_in(page, "fay")
    first_page = page.get_by_text("Your 50 most recent chats: search to find others")
    more = page.get_by_role("button", name="Show more chats")
    more.click()
    expect(page.get_by_role("button", name=oldest)).to_be_visible()
    expect(first_page).to_have_count(0)
    settled(page)
    search = page.get_by_label("Search chats")
    search.fill(marker)  # all 51 match: a first page of 50 again, and more offered
    search.press("Enter")
    expect(first_page).to_be_visible()
    expect(page.get_by_role("button", name=oldest)).to_have_count(0)
    settled(page)
    more.click()
    expect(page.get_by_role("button", name=oldest)).to_be_visible()
    settled(page)
    search.fill("")  # no search: the first page again too
    search.press("Enter")
    expect(first_page).to_be_visible()
    expect(page.get_by_role("button", name=oldest)).to_have_count(0)


def test_unsent_text_is_back_in_its_chats_box_when_the_chat_opens_again(
    page: Page, backend: Backend
) -> None:
    api = api_of(backend, "gus")
    marker = uuid.uuid4().hex[:6]
    first, second = f"draft A {marker}", f"draft B {marker}"
    a_id = api.create_session(title=first)
    api.create_session(title=second)
    signed_in(page, "gus")
    box = page.get_by_test_id("stChatInputTextArea")
    open_chat(page, first)
    box.fill(f"half a thought for A {marker}")  # not sent
    open_chat(page, second)
    expect(box).to_have_value("")  # A's text stays out of B's box
    box.fill(f"words for B {marker}")
    open_chat(page, first)
    expect(box).to_have_value(f"half a thought for A {marker}")
    open_chat(page, second)
    expect(box).to_have_value(f"words for B {marker}")
    open_chat(page, first)
    expect(box).to_have_value(f"half a thought for A {marker}")
    box.press("Enter")  # the text put back is the box's own: it is sent as it shows
    answered(api, a_id, 2)
    assert [m.content for m in api.messages(a_id)][:1] == [f"half a thought for A {marker}"]
    settled(page)
    open_chat(page, second)
    open_chat(page, first)
    expect(box).to_have_value("")  # sent, it is no draft any more


def test_sign_out_tells_the_server_and_asks_who_signs_in(
    page: Page, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    told = threading.Event()

    def recorded(response: Any, *, secure: bool) -> Any:
        told.set()
        return auth.clear_token_cookie(response, secure=secure)

    monkeypatch.setattr(routes_access, "clear_token_cookie", recorded)
    api = api_of(backend, "dee")
    title = f"before sign-out {uuid.uuid4().hex[:6]}"
    api.create_session(title=title)
    signed_in(page, "dee")
    open_chat(page, title)
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill("not for after the sign-out")
    clicked(page, page.get_by_role("button", name="Sign out").click)
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    expect(page.get_by_text("Signed in as dee")).to_have_count(0)
    expect(page.get_by_role("heading", name=title)).to_have_count(0)
    assert told.is_set()  # POST /api/logout came before the page asked who signs in
    signed_in(page, "dee")  # signed in again: nothing kept from before the sign-out
    expect(page.get_by_text("Start a new chat, or open one from the list.")).to_be_visible()
    open_chat(page, title)
    expect(box).to_have_value("")
