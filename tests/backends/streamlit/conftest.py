"""The Streamlit front end's tests share, per module, fresh tabs that open warm
(`warm_front_tabs`: the front end's health check keeps their renderer)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from tests.backends.conftest import WarmTabs
from tests.backends.streamlit.kit import warm_front_tabs


@pytest.fixture(scope="module")
def tabs(chromium: Browser) -> Iterator[WarmTabs]:
    warm = warm_front_tabs(chromium)
    yield warm
    warm.close()
