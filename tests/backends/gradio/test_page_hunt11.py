"""The chat page in a real browser: what a person sees of long unbroken text, the chat's
label, the state badge on a phone, and what the approval note box tells them (see kit.py
for the scripted model and conftest.py for the fixtures)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import WAIT_MS, badge, bot_messages, send, wait_idle

pytestmark = pytest.mark.browser


@pytest.fixture
def phone(chromium: Browser, server: LiveServer) -> Iterator[Page]:
    context = chromium.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(server.url, wait_until="load")
    expect(badge(page)).to_have_text("Ready")
    yield page
    context.close()


_OVERFLOWING_CODE = """() => {
    const bubbles = [...document.querySelectorAll('#chatbot [data-testid="bot"]')];
    const bubble = bubbles[bubbles.length - 1];
    const code = bubble.querySelector('code');
    const edge = bubble.getBoundingClientRect().right;
    return [code.textContent.length, code.getBoundingClientRect().right - edge];
}"""


def test_a_long_inline_code_span_wraps_inside_its_bubble(tab: Page) -> None:
    """An address, a hash or a base64 blob in backticks has no space to break at: it wraps
    inside the reply instead of running out of the bubble, cut off where nobody can read or
    scroll to it."""
    token = "q" * 400
    send(tab, f"inline `{token}` end")
    wait_idle(tab)
    expect(bot_messages(tab).last).to_contain_text("end")
    length, past_edge = tab.evaluate(_OVERFLOWING_CODE)
    assert length == len(token)
    assert past_edge <= 1, f"the code runs {past_edge:.0f} px out of its bubble"


_LABEL_AND_MESSAGES = """() => {
    const label = document.querySelector('#chatbot [data-testid="block-label"]');
    const log = document.querySelector('#chatbot [role="log"]');
    log.scrollTop = Math.floor((log.scrollHeight - log.clientHeight) / 2);
    const l = label.getBoundingClientRect();
    const shown = log.getBoundingClientRect();  // messages show only inside the log
    const visible = l.width > 0 && l.height > 0;
    const covered = [...log.querySelectorAll('[data-testid="user"], [data-testid="bot"]')]
        .map((m) => m.getBoundingClientRect())
        .map((m) => ({top: Math.max(m.top, shown.top), bottom: Math.min(m.bottom, shown.bottom),
                      left: m.left, right: m.right}))
        .filter((m) => m.top < l.bottom && m.bottom > l.top && m.left < l.right && m.right > l.left)
        .length;
    return [visible, covered, log.scrollHeight > log.clientHeight];
}"""


def test_the_conversation_label_never_covers_a_message(tab: Page) -> None:
    """Scrolled up through a long chat, the "Conversation" label sits above the messages,
    not on top of the one under it (it used to hide the start of its first lines)."""
    for number in range(3):
        send(tab, f"long {number}: " + "many words here " * 60)
        wait_idle(tab)
    visible, covered, scrolls = tab.evaluate(_LABEL_AND_MESSAGES)
    assert scrolls, "the chat should be long enough to scroll"
    assert visible, "the chat keeps its visible label"
    assert covered == 0, "the label covers a message"


_BADGE_INSIDE = """() => {
    const shown = document.querySelector('#state-badge .ga-badge').getBoundingClientRect();
    const column = document.querySelector('.ga-actions').getBoundingClientRect();
    return [shown.left - column.left, column.right - shown.right,
            document.documentElement.clientWidth - shown.right];
}"""


@pytest.mark.parametrize("width", [390, 360, 320])
def test_the_state_badge_stays_inside_its_column_on_a_phone(phone: Page, width: int) -> None:
    """The badge's longest words ("Waiting for your approval") fit over Send and Stop on a
    phone's screen."""
    phone.set_viewport_size({"width": width, "height": 844})
    send(phone, "python: print('badge')")
    expect(badge(phone)).to_have_text("Waiting for your approval")
    try:
        left, right, screen = phone.evaluate(_BADGE_INSIDE)
        assert left >= -1 and right >= -1, f"the badge runs out of its column ({left}, {right})"
        assert screen >= 0
    finally:
        phone.locator("#deny-btn").click()
        wait_idle(phone)


def test_the_note_box_says_while_typing_that_enter_denies_and_that_either_answer_carries_it(
    tab: Page,
) -> None:
    """What Enter does in the note box is said where it stays in sight once a note is typed
    (a placeholder vanishes with the first letter), and the box says the note goes with
    Allow too (the agent reads it after the tool's result)."""
    send(tab, "python: print('note')")
    expect(badge(tab)).to_have_text("Waiting for your approval")
    note = tab.locator("#approval-note")
    try:
        note.locator("textarea").fill("use a temporary folder")
        shown = " ".join(note.inner_text().split())
        assert "Enter denies" in shown
        assert "with Allow or Deny" in shown
    finally:
        tab.locator("#deny-btn").click()
        wait_idle(tab)


_SETTLED_INPUT = """(closed) => new Promise((resolve) => {
    // Where the message box is once the page holds still: the sidebar closed (if `closed`),
    // nothing animating, and the box in the same place for 30 frames in a row.
    let last = null;
    let same = 0;
    const look = () => {
        const bar = document.querySelector('#session-sidebar');
        const box = document.querySelector('#chat-input textarea');
        const moving = document.getAnimations().some((a) => a.playState === 'running');
        if (bar && box && !(closed && bar.classList.contains('open')) && !moving) {
            const r = box.getBoundingClientRect();
            same = last !== null && r.top === last.top ? same + 1 : 0;
            last = r;
            if (same >= 30) {
                resolve({top: r.top, bottom: r.bottom, height: window.innerHeight,
                         focused: document.activeElement === box, scrolled: window.scrollY});
                return;
            }
        }
        requestAnimationFrame(look);
    };
    look();
})"""


def test_a_phone_opens_the_page_with_the_message_box_in_view(phone: Page) -> None:
    """The box has the focus as the page opens, and the browser scrolls to it while the
    sessions sidebar is still open; the page then closes the sidebar on a phone, and the box
    used to end up above the top of the screen, the chat with it, with only the buttons
    under them in sight."""
    settled = phone.evaluate(_SETTLED_INPUT, True)
    assert settled["focused"]
    assert settled["top"] >= 0, f"the message box is {-settled['top']:.0f} px above the screen"
    assert settled["bottom"] <= settled["height"]


def test_a_screen_that_shows_the_message_box_from_the_top_opens_the_page_at_its_top(
    tab: Page,
) -> None:
    """On a laptop's screen the whole page down to the message box fits: it opens at its
    top, the title and the notice (which says what model answers) in sight. The browser
    scrolled to the focused box while the page was taking shape (its chat not yet sized),
    and the page stayed scrolled down, with the notice above the screen."""
    settled = tab.evaluate(_SETTLED_INPUT, False)
    assert settled["focused"]
    assert settled["scrolled"] + settled["bottom"] <= settled["height"], "(it fits from the top)"
    assert settled["scrolled"] == 0, f"the page opened {settled['scrolled']} px down"
    assert settled["top"] >= 0 and settled["bottom"] <= settled["height"]
    expect(tab.locator("#notice")).to_be_in_viewport(ratio=1)


_WIDE_TABLE = """() => {
    const bubbles = [...document.querySelectorAll('#chatbot [data-testid="bot"]')];
    const bubble = bubbles[bubbles.length - 1];
    const table = bubble.querySelector('table');
    const lines = [...table.querySelectorAll('td')].map((cell) => {
        const range = document.createRange();
        range.selectNodeContents(cell);
        return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
    });
    let box = table.parentElement;  // the box that shows the table: it scrolls sideways
    while (box !== bubble && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) {
        box = box.parentElement;
    }
    const scrolls = box !== bubble;
    const fits = table.getBoundingClientRect().right <= bubble.getBoundingClientRect().right + 1;
    const before = box.scrollLeft;
    box.scrollLeft = box.scrollWidth;
    return {lines, fits, scrolls, moved: box.scrollLeft > before};
}"""


def test_a_wide_table_scrolls_sideways_and_keeps_its_words_whole(tab: Page) -> None:
    """A reply's table with more columns than the bubble has room for used to squeeze each
    word into a column of letters and run out of the bubble, its last columns cut off."""
    columns = 12
    table = "\n".join(
        [
            "A table:",
            "",
            "| " + " | ".join(f"column{i} header" for i in range(columns)) + " |",
            "|" + "---|" * columns,
            "| " + " | ".join(f"value{i}" + "v" * 16 for i in range(columns)) + " |",
        ]
    )
    send(tab, table)
    wait_idle(tab)
    expect(bot_messages(tab).last.locator("table")).to_be_visible()
    shown = tab.evaluate(_WIDE_TABLE)
    assert shown["lines"] == [1] * columns, "a one-word cell was broken across lines"
    assert shown["fits"] or (shown["scrolls"] and shown["moved"]), "the last columns are cut off"


_QUESTION_MARK_SIDE = """(sentence) => {
    const bubbles = [...document.querySelectorAll('#chatbot [data-testid="bot"]')];
    const paragraph = [...bubbles.pop().querySelectorAll('p')]
        .find((p) => p.textContent.trim() === sentence);
    const text = paragraph.firstChild;
    const at = (index) => {
        const range = document.createRange();
        range.setStart(text, index);
        range.setEnd(text, index + 1);
        return range.getBoundingClientRect().left;
    };
    const start = text.textContent.indexOf(sentence[0]);
    return [at(start), at(text.textContent.indexOf('?'))];
}"""


def test_a_right_to_left_paragraph_reads_right_to_left(tab: Page) -> None:
    """A Hebrew or Arabic paragraph is laid out right to left, as its first letter says:
    its question mark ends it, on the left, instead of standing before its first word."""
    sentence = "שלום, מה שלומך היום?"
    send(tab, f"Hebrew:\n\n{sentence}")
    wait_idle(tab)
    expect(bot_messages(tab).last).to_contain_text(sentence)
    first_letter, question_mark = tab.evaluate(_QUESTION_MARK_SIDE, sentence)
    assert question_mark < first_letter, "the question mark stands before the first word"
