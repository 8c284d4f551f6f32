"""The chat page in a real browser: images attached for the next message show before it is
sent, a small picture of each with its file's name, and each can be taken back on its own.
Before, the page only counted them ("📎 2 images will go with your next message")."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import send, session_of, tiny_png, user_messages, wait_idle

pytestmark = pytest.mark.browser


def _attach(tab: Page, *files: Path) -> None:
    with tab.expect_file_chooser() as chooser:
        tab.get_by_role("button", name="Attach images").click()
    chooser.value.set_files(list(files))


def test_attached_images_show_before_sending_and_each_can_be_taken_back(
    tab: Page, server: LiveServer, tmp_path: Path
) -> None:
    first, second = tmp_path / "first picture.png", tmp_path / "second.png"
    for picture in (first, second):
        picture.write_bytes(tiny_png())
    notes = tmp_path / "notes.png"  # (named as a picture: the bytes decide)
    notes.write_text("not a picture")
    _attach(tab, first, notes, second)
    expect(
        tab.get_by_text("Not attached: notes.png is not a PNG, JPEG, GIF or WebP image")
    ).to_be_visible()

    preview = tab.locator("#attach-preview")
    shown = preview.get_by_role("img")
    expect(shown).to_have_count(2)
    for name in ("first picture.png", "second.png"):
        thumbnail = preview.get_by_role("img", name=name)
        expect(thumbnail).to_be_visible()
        thumbnail.scroll_into_view_if_needed()
        assert thumbnail.evaluate("(img) => img.complete && img.naturalWidth > 0"), name
        expect(preview.get_by_text(name, exact=True)).to_be_visible()
    box = shown.first.bounding_box()
    assert box is not None and box["width"] <= 96 and box["height"] <= 96, "a small picture"

    preview.get_by_role("button", name="Remove first picture.png").click()
    expect(shown).to_have_count(1)
    expect(preview.get_by_role("img", name="second.png")).to_be_visible()
    expect(tab.locator("#attach-note")).to_contain_text("1 image will go with your next message")

    send(tab, "which one is left?")
    expect(shown).to_have_count(0)  # the tray went with the message
    wait_idle(tab)
    expect(user_messages(tab).last.locator("img")).to_have_count(1)
    interpreter = session_of(server, tab)
    assert len(interpreter.session.history[0].images) == 1, "only the one left was sent"
