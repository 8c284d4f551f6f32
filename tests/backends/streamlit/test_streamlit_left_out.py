"""The Streamlit front end names the models the server's environment configures but left
out, with why (GET /api/models `left_out`), beside the model picker: a person who set a key
sees why its model is missing instead of guessing."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.backends.api.live import running_backend
from tests.backends.streamlit.kit import front_for, front_tab
from tests.backends.streamlit.test_streamlit_page import PASSWORD, new_chat, signed_in

pytestmark = pytest.mark.browser

WHY = "openai:gpt-4o-mini is left out: OPENAI_BASE_URL '127.0.0.1:1/v1' has no scheme"


def test_a_model_left_out_is_named_with_why_beside_the_picker(
    tmp_path: Path, chromium: Browser
) -> None:
    pytest.importorskip("streamlit")
    front = tmp_path / "front"
    front.mkdir()
    users = [("ada", PASSWORD)]
    with (
        running_backend(tmp_path / "server", users=users, left_out=[WHY]) as backend,
        front_for(backend.base_url, front) as address,
        front_tab(address, chromium) as tab,
    ):
        signed_in(tab)
        new_chat(tab)
        expect(tab.get_by_label("Model", exact=True)).to_be_visible()
        expect(tab.get_by_text(WHY, exact=True)).to_be_visible()
