"""The React front end's tests share, per module, fresh tabs that open warm (`WarmTabs`:
the API's health check keeps their renderer)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from tests.backends.conftest import WarmTabs


@pytest.fixture(scope="module")
def tabs(chromium: Browser) -> Iterator[WarmTabs]:
    warm = WarmTabs(chromium, "/api/health", viewport={"width": 1280, "height": 900})
    yield warm
    warm.close()
