"""The chat form and the controls around it, in a real browser: AutoChat limits out of range
are named and never block sending, an image goes alone, Clear asks first, the AutoChat line
says what is true, and the small things (title box, an empty search, focus after an
approval, Enter in the approval note, the sidebar on a phone)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from gui_agent.wording import ALLOW_FOR_THIS_CHAT
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    badge,
    bot_messages,
    chat,
    eventually,
    open_manage,
    open_tab,
    send,
    session_of,
    tiny_png,
    toast,
    upload,
    user_messages,
    wait_idle,
)

pytestmark = pytest.mark.browser

OPEN = re.compile(r"\bopen\b")


def type_limit(page: Page, elem_id: str, value: str) -> None:
    field = page.locator(f"#{elem_id} input")
    field.fill(value)
    field.press("Tab")


def test_an_autochat_limit_out_of_range_is_named_and_never_blocks_a_send(
    tab: Page, server: LiveServer
) -> None:
    note = tab.locator("#autochat-limits-note")
    type_limit(tab, "autochat-max-turns", "0")
    expect(note).to_contain_text("Max automatic turns must be at least 1")
    send(tab, "my carefully written message")
    expect(toast(tab, "Your message was sent; AutoChat keeps that limit as it was")).to_be_visible()
    expect(bot_messages(tab).last).to_contain_text("You said: my carefully written message")
    wait_idle(tab)
    expect(tab.locator("#approval-panel")).to_be_hidden()
    interpreter = session_of(server, tab)
    assert interpreter.session.autochat.max_turns == 5  # the last valid value

    type_limit(tab, "autochat-delay", "-1")  # the note names every box that is wrong
    expect(note).to_contain_text("Delay between turns must be at least 0")
    expect(note).to_contain_text("Max automatic turns must be at least 1")
    type_limit(tab, "autochat-max-turns", "3")
    expect(note).to_contain_text("Delay between turns must be at least 0")
    expect(note).not_to_contain_text("Max automatic turns")
    send(tab, "and another one")  # every later send works too
    expect(bot_messages(tab).last).to_contain_text("You said: and another one")
    wait_idle(tab)
    expect(chat(tab)).not_to_contain_text("Error")
    expect(tab.locator("#approval-panel")).to_be_hidden()
    assert interpreter.session.autochat.delay_s == 0
    assert interpreter.session.autochat.max_turns == 3  # saved while the delay was wrong

    type_limit(tab, "autochat-delay", "2")
    expect(note).to_have_text("")  # all valid again, and saved as typed
    assert interpreter.session.autochat.max_turns == 3
    assert interpreter.session.autochat.delay_s == 2


def test_an_image_can_be_sent_without_text(tab: Page, server: LiveServer, tmp_path: Path) -> None:
    picture = tmp_path / "red.png"
    picture.write_bytes(tiny_png())
    upload(tab, "Attach images", picture)
    expect(tab.locator("#attach-note")).to_contain_text("1 image will go with your next")
    tab.locator("#send-btn").click()  # the message box is empty
    expect(user_messages(tab).first.locator("img")).to_have_count(1)
    wait_idle(tab)
    expect(tab.locator("#attach-note")).to_have_text("")
    interpreter = session_of(server, tab)
    first = interpreter.session.history[0]
    assert first.content == "" and len(first.images) == 1
    tab.locator("#send-btn").click()  # with neither text nor image nothing is sent
    expect(tab.locator("#ga-input-notice")).to_be_hidden()
    assert len([m for m in interpreter.session.history if m.role.value == "user"]) == 1


def test_clear_chat_asks_first_and_the_chatbots_own_clear_icon_is_gone(
    tab: Page, server: LiveServer
) -> None:
    send(tab, "clear me later")
    wait_idle(tab)
    expect(tab.locator('#chatbot button[aria-label="Clear"]')).to_be_hidden()
    tab.get_by_role("button", name="Clear chat").click()
    expect(tab.locator("#confirm-clear-row")).to_be_visible()
    tab.get_by_role("button", name="Cancel").last.click()
    expect(tab.locator("#confirm-clear-row")).to_be_hidden()
    expect(user_messages(tab)).to_have_count(1)
    tab.get_by_role("button", name="Clear chat").click()
    tab.get_by_role("button", name="Yes, clear it").click()
    expect(user_messages(tab)).to_have_count(0)
    expect(tab.locator("#confirm-clear-row")).to_be_hidden()
    assert session_of_cleared(server, "clear me later")


def session_of_cleared(server: LiveServer, first: str) -> bool:
    """No live session still starts with `first` (the cleared one is empty now)."""

    async def check() -> bool:
        return all(
            not i.session.history or i.session.history[0].content != first
            for i in server.state.manager._live.values()
        )

    return bool(server.call(check()))


def test_the_autochat_line_says_what_is_true(tab: Page) -> None:
    status = tab.locator("#autochat-status")
    expect(status).to_have_text("AutoChat is off.")
    send(tab, "a first message")
    wait_idle(tab)
    type_limit(tab, "autochat-max-turns", "1")
    tab.locator("#autochat-toggle input").check()  # idle after a turn: it starts at once
    expect(status).to_contain_text(
        "AutoChat stopped after 1 automatic turn: it reached its limit of automatic turns"
    )
    tab.locator("#autochat-toggle input").uncheck()
    expect(status).to_have_text("AutoChat is off.")
    tab.locator("#autochat-toggle input").check()
    expect(chat(tab).get_by_text("AutoChat turn 1:")).to_have_count(2)
    expect(status).to_contain_text(
        "AutoChat stopped after 1 automatic turn: it reached its limit of automatic turns"
    )
    tab.locator("#new-session-btn").click()
    expect(user_messages(tab)).to_have_count(0)
    expect(status).to_have_text("AutoChat is off.")
    expect(tab.locator("#autochat-toggle input")).not_to_be_checked()


def test_the_title_box_shows_the_title_and_an_empty_search_says_so(tab: Page) -> None:
    send(tab, "name this chat for me")
    wait_idle(tab)
    open_manage(tab)
    expect(tab.locator("#rename-input textarea")).to_have_value("name this chat for me")
    tab.locator("#session-search textarea").fill("no chat is called this")
    expect(tab.locator("#session-list")).to_contain_text("No chats match")
    tab.locator("#session-search textarea").fill("name this chat")
    expect(tab.locator("#session-list")).not_to_contain_text("No chats match")
    expect(tab.locator("#session-list")).to_contain_text("name this chat for me")


class HeldRefresh:
    """Holds the list refresh that follows a turn on its way to the server (its request is
    sent, with the Title box as it was then, and answered only once let go): what a busy
    server does to the answer, made certain."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.held: list[Route] = []
        page.route("**/gradio_api/queue/join*", self._route)

    def _route(self, route: Route) -> None:
        data = (route.request.post_data_json or {}).get("data")
        # The refresh's inputs: the chat's id, the search, the Title box (empty: an offer).
        if isinstance(data, list) and len(data) == 3 and data[0] and data[2] in (None, ""):
            self.held.append(route)
        else:
            route.continue_()

    def wait(self) -> None:
        eventually(self.page, lambda: bool(self.held), "the list refresh after the turn")

    def let_go(self) -> None:
        for route in self.held:
            route.continue_()
        self.page.unroute("**/gradio_api/queue/join*", self._route)


def test_a_title_typed_while_the_list_refresh_is_on_its_way_is_kept(tab: Page) -> None:
    mark = uuid.uuid4().hex[:8]  # (a rerun after a failed attempt finds only its own chat)
    held = HeldRefresh(tab)
    send(tab, f"titled by its first message {mark}")
    wait_idle(tab)
    held.wait()
    open_manage(tab)
    title = tab.locator("#rename-input textarea")
    title.fill(f"Typed before the list came back {mark}")
    held.let_go()  # its answer offers the first message's title to the box
    expect(tab.locator("#session-list")).to_contain_text(f"titled by its first message {mark}")
    tab.get_by_role("button", name="Rename chat").click()
    expect(tab.locator("#session-list")).to_contain_text(f"Typed before the list came back {mark}")
    expect(title).to_have_value(f"Typed before the list came back {mark}")


def test_a_new_chat_opened_while_the_list_refresh_is_on_its_way_keeps_an_empty_title(
    tab: Page,
) -> None:
    mark = uuid.uuid4().hex[:8]  # (a rerun after a failed attempt finds only its own chat)
    held = HeldRefresh(tab)
    send(tab, f"a chat left while its list came back {mark}")
    wait_idle(tab)
    held.wait()
    tab.locator("#new-session-btn").click()
    expect(user_messages(tab)).to_have_count(0)
    held.let_go()
    left = f"a chat left while its list came back {mark}"
    expect(tab.locator("#session-list")).to_contain_text(left)
    send(tab, f"the second chat's own title {mark}")  # its own refresh offers its own title
    wait_idle(tab)
    open_manage(tab)
    own = f"the second chat's own title {mark}"
    expect(tab.locator("#rename-input textarea")).to_have_value(own)


def test_after_answering_an_approval_the_keyboard_is_back_in_the_message_box(tab: Page) -> None:
    send(tab, "python: print(2 ** 10)")
    expect(badge(tab)).to_have_text("Waiting for your approval")
    tab.locator("#approve-once-btn").focus()
    tab.keyboard.press("Enter")
    wait_idle(tab)
    expect(bot_messages(tab).last).to_contain_text("Result: 1024")
    expect(tab.locator("#chat-input textarea")).to_be_focused()
    tab.keyboard.type("typed right away")
    expect(tab.locator("#chat-input textarea")).to_have_value("typed right away")


def test_enter_in_the_approval_note_denies_with_the_note(tab: Page, server: LiveServer) -> None:
    send(tab, "python: open('kept-out.txt', 'w').write('x')")
    expect(badge(tab)).to_have_text("Waiting for your approval")
    note = tab.locator("#approval-note textarea")
    note.press("Enter")  # an empty note decides nothing
    expect(toast(tab, "Enter denies with your note")).to_be_visible()
    expect(badge(tab)).to_have_text("Waiting for your approval")
    note.fill("not on this machine")
    note.press("Shift+Enter")  # a second line, still undecided
    note.type("ask me first")
    expect(note).to_have_value("not on this machine\nask me first")
    expect(badge(tab)).to_have_text("Waiting for your approval")
    note.press("Enter")
    wait_idle(tab)
    expect(tab.locator("#approval-panel")).to_be_hidden()
    expect(chat(tab)).to_contain_text("Denied")
    expect(bot_messages(tab).last).to_contain_text("Result: The user denied this tool call.")
    expect(tab.locator("#chat-input textarea")).to_be_focused()
    interpreter = session_of(server, tab)
    assert not (interpreter.session.workdir_path() / "kept-out.txt").exists()
    denial = next(m for m in interpreter.session.history if m.role.value == "tool")
    assert "not on this machine\nask me first" in denial.content


@pytest.mark.parametrize("how", ["deny", "enter"])
def test_a_denial_carries_the_note_the_box_shows_even_when_gradio_lags(
    tab: Page, server: LiveServer, how: str
) -> None:
    """Gradio's copy of the note box can lag a note typed just before Deny or Enter (Enter
    then saw an empty note and decided nothing): the note is read from the box itself."""
    send(tab, "python: open('kept-out.txt', 'w').write('x')")
    expect(badge(tab)).to_have_text("Waiting for your approval")
    note = tab.locator("#approval-note textarea")
    # The box shows the note; Gradio is never told (no input event): its copy stays empty.
    note.evaluate("(box) => { box.value = 'not without asking'; }")
    if how == "enter":
        note.press("Enter")
    else:
        tab.locator("#deny-btn").click()
    wait_idle(tab)
    expect(chat(tab)).to_contain_text("Denied")
    denial = next(m for m in session_of(server, tab).session.history if m.role.value == "tool")
    assert "not without asking" in denial.content


def test_a_tool_allowed_for_the_session_is_shown_and_can_be_made_to_ask_again(
    tab: Page, server: LiveServer
) -> None:
    allowed = tab.locator("#allowed-tools")
    expect(allowed).to_contain_text("None")
    send(tab, "python: print('first')")
    expect(badge(tab)).to_have_text("Waiting for your approval")
    choice = tab.locator("#approve-session-btn")
    expect(choice).to_have_text(ALLOW_FOR_THIS_CHAT)  # people see chats, not sessions
    choice.click()
    wait_idle(tab)
    expect(chat(tab)).to_contain_text("Allowed for this chat")  # what it decided
    expect(allowed).to_contain_text("run_python")
    expect(allowed).to_contain_text("without asking")
    send(tab, "python: print('second')")  # runs without asking
    wait_idle(tab)
    expect(bot_messages(tab).last).to_contain_text("second")
    tab.locator("#forget-allowed-btn").click()
    expect(toast(tab, "asks you again")).to_be_visible()
    expect(allowed).to_contain_text("None")
    assert session_of(server, tab).allowed_tools == ()
    send(tab, "python: print('third')")
    expect(badge(tab)).to_have_text("Waiting for your approval")  # asked again
    tab.locator("#deny-btn").click()
    wait_idle(tab)


def test_a_tool_set_to_never_run_is_refused_and_one_set_to_run_runs_unasked(
    tab: Page, server: LiveServer
) -> None:
    tools = tab.locator("#tools-panel")
    expect(tools).to_contain_text("run_python: asks you first")  # a new chat: the app's own
    send(tab, "a chat whose tools are set")
    wait_idle(tab)
    tab.locator("#tool-picker input").click()
    tab.get_by_role("option", name="run_python").click()
    expect(tab.locator("#tool-mode").get_by_label("As the app decides")).to_be_checked()
    tab.locator("#tool-mode").get_by_text("Never run").click()
    expect(tools).to_contain_text("run_python: never runs (set for this chat)")
    expect(tab.locator("#tool-mode").get_by_label("Never run")).to_be_checked()
    expect(toast(tab, "run_python: never runs")).to_be_visible()
    send(tab, "python: print('refused')")
    wait_idle(tab)  # no approval asked: refused at once
    expect(bot_messages(tab).last).to_contain_text("not allowed")
    tab.locator("#tool-mode").get_by_text("Run without asking").click()
    expect(tools).to_contain_text("run_python: runs without asking (set for this chat)")
    send(tab, "python: print('ran unasked')")
    wait_idle(tab)
    expect(bot_messages(tab).last).to_contain_text("ran unasked")
    interpreter = session_of(server, tab)
    assert interpreter.session.settings.permissions == {"run_python": "allow"}
    tab.locator("#tool-mode").get_by_text("As the app decides").click()
    expect(tools).to_contain_text("run_python: asks you first")
    assert interpreter.session.settings.permissions == {}


def test_the_tool_picker_is_emptied_when_another_chat_or_a_new_one_is_opened(tab: Page) -> None:
    """A tool picked with its mode in one chat is not shown as the next chat's: the mode
    belongs to the chat it was set in."""
    picker, mode = tab.locator("#tool-picker input"), tab.locator("#tool-mode")
    send(tab, "a chat where run_python never runs")
    wait_idle(tab)
    picker.click()
    tab.get_by_role("option", name="run_python").click()
    expect(mode.get_by_label("As the app decides")).to_be_checked()  # its mode in this chat
    mode.get_by_text("Never run").click()
    expect(tab.locator("#tools-panel")).to_contain_text("run_python: never runs")
    expect(mode.get_by_label("Never run")).to_be_checked()
    tab.locator("#new-session-btn").click()
    expect(picker).to_have_value("")
    expect(mode.locator("input:checked")).to_have_count(0)
    expect(tab.locator("#tools-panel")).to_contain_text("run_python: asks you first")
    send(tab, "another chat")
    wait_idle(tab)
    picker.click()
    tab.get_by_role("option", name="run_python").click()
    tab.locator("#session-list").get_by_text("a chat where run_python never runs").first.click()
    expect(tab.locator("#tools-panel")).to_contain_text("run_python: never runs")
    expect(picker).to_have_value("")
    expect(mode.locator("input:checked")).to_have_count(0)


def test_on_a_phone_picking_a_chat_closes_the_sidebar(
    chromium: Browser, server: LiveServer
) -> None:
    page = open_tab(chromium, server, viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        sidebar = page.locator("#session-sidebar")
        expect(sidebar).not_to_have_class(OPEN)
        send(page, "a chat to pick on a phone")
        wait_idle(page)
        page.locator('#session-sidebar button[aria-label="Toggle Sidebar"]').click()
        expect(sidebar).to_have_class(OPEN)
        page.locator("#session-list").get_by_text("a chat to pick on a phone").first.click()
        expect(sidebar).not_to_have_class(OPEN)
        expect(bot_messages(page).last).to_contain_text("You said: a chat to pick on a phone")
        page.locator("#send-btn").click(trial=True)  # nothing covers the chat any more
    finally:
        page.context.close()
