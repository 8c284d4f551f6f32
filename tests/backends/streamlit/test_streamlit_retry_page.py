"""The Streamlit front end, end to end, shows the first (often the only) notice that the
model is asked again in the tab that sent the message: it follows the turn from the
session detail's `last_seq`, which already covers that notice, so the line comes from the
detail's `streaming` (`retrying`). Until then a rate limit looked like a frozen reply."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.backends.api.live import Backend, running_backend
from tests.backends.retried import FIRST, LAST, RetriedModel
from tests.backends.streamlit.kit import front_for, front_tab
from tests.backends.streamlit.test_streamlit_page import PASSWORD, new_chat, send, signed_in

pytestmark = pytest.mark.browser

SAID = re.compile(r"Rate limited \(HTTP 429\): asking again in \d+ s \(attempt 2 of 4\)…")
"""The line, with the wait left when the tab read the chat (20 s at first)."""


@pytest.fixture
def retried() -> RetriedModel:
    return RetriedModel()


@pytest.fixture
def backend(tmp_path: Path, retried: RetriedModel) -> Iterator[Backend]:
    folder = tmp_path / "server"
    with running_backend(folder, users=[("ada", PASSWORD)], models=[retried.provider]) as run:
        try:
            yield run
        finally:  # a reply left waiting would hold the server's shutdown
            run.server.call(retried.release(whole=True))


@pytest.fixture
def page(backend: Backend, tmp_path: Path, chromium: Browser) -> Iterator[Page]:
    pytest.importorskip("streamlit")
    front = tmp_path / "front"
    front.mkdir()
    with front_for(backend.base_url, front) as address, front_tab(address, chromium) as tab:
        yield tab


def test_the_tab_that_sent_the_message_shows_the_first_retry_at_once(
    page: Page, backend: Backend, retried: RetriedModel
) -> None:
    signed_in(page)
    new_chat(page)
    page.get_by_label("Model", exact=True).click()
    page.get_by_role("option", name="retried").click()
    send(page, "hi")
    notice = page.get_by_text(SAID)
    expect(notice).to_be_visible()  # (the model waits for the test: no other notice comes)
    backend.server.call(retried.release(whole=True))
    expect(page.get_by_text(FIRST + LAST)).to_be_visible()
    expect(notice).to_have_count(0)
