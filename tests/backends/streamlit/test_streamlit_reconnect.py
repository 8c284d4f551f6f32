"""A Streamlit tab whose server went away mid-reply (a restart longer than its event
stream's own reconnects cover) says so, tries again by itself with growing waits, and shows
the chat again once the server is back: no click, no reload."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.backends.api.live import free_port, make_backend
from tests.backends.streamlit.kit import front_for, front_tab
from tests.backends.streamlit.test_streamlit_page import PASSWORD, slow_reply_streaming

pytestmark = pytest.mark.browser


def test_a_tab_whose_server_went_away_mid_reply_comes_back_by_itself(
    tmp_path: Path, chromium: Browser
) -> None:
    pytest.importorskip("streamlit")
    folder, front, port = tmp_path / "server", tmp_path / "front", free_port()
    front.mkdir()
    users = [("ada", PASSWORD)]
    first = make_backend(folder, users=users, port=port)
    second = None
    try:
        with front_for(first.base_url, front) as address, front_tab(address, chromium) as tab:
            slow_reply_streaming(tab)
            first.server.stop()  # (the reply is kept, interrupted, as the server stops)
            trying = tab.get_by_text("Trying again in", exact=False)
            expect(trying.first).to_be_visible(timeout=20_000)
            expect(tab.get_by_text("not reachable", exact=False).first).to_be_visible(
                timeout=20_000
            )
            second = make_backend(folder, users=users, port=port)  # the same server, back
            expect(trying).to_have_count(0, timeout=30_000)
            reply = tab.get_by_test_id("stChatMessage").filter(has_text="tick20")
            expect(reply).to_have_count(1)
            expect(tab.get_by_role("heading", name="tick slowly")).to_be_visible()
            expect(tab.get_by_text("Working…", exact=False)).to_have_count(0)
    finally:
        if second is not None:
            second.server.stop()
        for backend in (first, second):
            if backend is not None:
                for api in backend.clients:
                    api.close()
