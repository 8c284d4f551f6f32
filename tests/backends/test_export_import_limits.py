"""Every chat the app exports can be imported back, or the person is told when they export it.

A real server as `gui-agent serve` builds it (the page and the API, a SQLite store in a temp
folder, the offline echo model), real chats made through the API with full-size photos
(real PNG files of 5 MiB, the most a person may attach), exported and imported through the
API and through the page in Chromium.
"""

from __future__ import annotations

import asyncio
import base64
import random
import re
import struct
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect
from starlette.routing import Mount

from backends.server import build_server
from gui_agent.config import AppConfig
from gui_agent.export import MAX_IMPORT_BYTES, size_text
from schema.requests import MAX_IMAGE_BYTES
from tests.backends.api.live import Api, ServerThread, is_idle
from tests.backends.gradio.kit import badge, chat, toast, upload, user_messages

pytestmark = pytest.mark.browser

WAIT_MS = 60_000
OLD_LIMIT = 20_000_000
"""The import limit before this rule: a three-photo chat exported bigger than this."""
PHOTOS_TITLE = "Фото из отпуска 🏖"
PHOTOS_SLUG = "фото-из-отпуска"
BIG_TITLE = "Every photo of the trip"


def photo(seed: int, size: int = MAX_IMAGE_BYTES) -> bytes:
    """A real PNG of random pixels, as close to `size` bytes as its rows allow (not over)."""
    width = 1024
    row = 1 + 3 * width
    height = (size - 200) // (row + 8)
    pixels = random.Random(seed).randbytes(row * height)
    rows = b"".join(b"\x00" + pixels[i * row + 1 : (i + 1) * row] for i in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
    data += chunk(b"IDAT", zlib.compress(rows, 0)) + chunk(b"IEND", b"")
    assert size - 100_000 < len(data) <= size
    return data


@dataclass
class Served:
    server: ServerThread
    api: Api
    photos: str
    """A chat of three full-size photos, each answered."""
    big: str
    """A chat of ten full-size photos: more than an import takes."""
    sent: dict[str, list[str]]
    """Session id -> the base64 data of the photos sent to it, in order."""

    @property
    def url(self) -> str:
        return self.server.base_url + "/"


def send_photos(api: Api, session_id: str, seeds: range) -> list[str]:
    sent = []
    for seed in seeds:
        data = base64.b64encode(photo(seed)).decode("ascii")
        body = {"text": f"photo {seed}", "images": [{"media_type": "image/png", "data": data}]}
        with api.events(session_id) as stream:
            response = api.post(f"/api/sessions/{session_id}/messages", json=body)
            assert response.status_code == 202, response.text
            stream.until(is_idle)
        sent.append(data)
    return sent


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data_dir = tmp_path_factory.mktemp("limits") / "data"
    config = AppConfig(models=("scripted:echo",), data_dir=data_dir)
    server = ServerThread(lambda: build_server(config, probe_local=False)).start()
    api = Api(server.base_url).login()
    api.http.timeout = httpx.Timeout(120.0)
    try:
        photos = api.create_session(title=PHOTOS_TITLE)
        big = api.create_session(title=BIG_TITLE)
        sent = {photos: send_photos(api, photos, range(3))}
        sent[big] = send_photos(api, big, range(10))
        yield Served(server, api, photos, big, sent)
    finally:
        api.close()
        server.stop()


def images_of(api: Api, session_id: str) -> list[str]:
    response = api.get(f"/api/sessions/{session_id}")
    assert response.status_code == 200, response.text
    return [i["data"] for m in response.json()["messages"] for i in m["images"]]


def error_of(response: Any) -> dict[str, str]:
    error: dict[str, str] = response.json()["error"]
    return error


def open_chat(browser: Browser, served: Served, title: str) -> Page:
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(served.url, wait_until="load")
    expect(badge(page)).to_have_text("Ready")
    page.locator("#session-list").get_by_text(title).first.click()
    expect(user_messages(page)).not_to_have_count(0, timeout=WAIT_MS)
    expect(badge(page)).to_have_text("Your turn", timeout=WAIT_MS)
    page.get_by_role("button", name="Manage this chat").click()
    return page


def export_on(page: Page, saved: Path) -> str:
    with page.expect_download(timeout=WAIT_MS) as download:
        page.get_by_role("button", name="Export as JSON").click()
    download.value.save_as(saved)
    return download.value.suggested_filename


# -- within the limit: out and back in ------------------------------------------------------------


def test_a_chat_with_full_size_photos_exports_and_imports_back_through_the_api(
    served: Served,
) -> None:
    api = served.api
    exported = api.get(f"/api/sessions/{served.photos}/export")
    assert exported.status_code == 200, exported.text
    assert OLD_LIMIT < len(exported.content) <= MAX_IMPORT_BYTES

    imported = api.post("/api/sessions/import", content=exported.content)
    assert imported.status_code == 201, imported.text
    answer = imported.json()
    copies = (f"{PHOTOS_TITLE} (imported)", f"{PHOTOS_TITLE} (imported 2)")  # (the original
    assert answer["message_count"] == 6 and answer["session"]["title"] in copies  # is there)
    assert images_of(api, answer["session"]["id"]) == served.sent[served.photos]


def test_the_page_exports_a_chat_with_full_size_photos_and_imports_it_back(
    chromium: Browser, served: Served, tmp_path: Path
) -> None:
    page = open_chat(chromium, served, PHOTOS_TITLE)
    # The photos are linked, not carried in the page's updates (backends/gradio/media.py).
    shown = page.locator("#chatbot img[alt='attached image']")
    expect(shown).to_have_count(3)
    assert all(
        src.startswith("media/")
        for src in shown.evaluate_all("e => e.map(i => i.getAttribute('src'))")
    )
    page.wait_for_function(
        "() => [...document.querySelectorAll(\"#chatbot img[alt='attached image']\")]"
        ".every(i => i.complete && i.naturalWidth > 0)"
    )
    saved = tmp_path / "photos.json"
    name = export_on(page, saved)
    assert name.startswith(f"gui-agent-{PHOTOS_SLUG}-"), name
    assert OLD_LIMIT < saved.stat().st_size <= MAX_IMPORT_BYTES
    expect(toast(page, "cannot be imported back")).to_have_count(0)

    before = {s["id"] for s in served.api.get("/api/sessions").json()["sessions"]}
    upload(page, "Import a JSON export", saved)
    expect(toast(page, "Imported 6 messages as a new chat.")).to_have_count(1, timeout=WAIT_MS)
    expect(chat(page)).to_contain_text("photo 2", timeout=WAIT_MS)
    expect(badge(page)).to_have_text("Your turn", timeout=WAIT_MS)
    after = served.api.get("/api/sessions").json()["sessions"]
    (new,) = [s for s in after if s["id"] not in before]
    # the original is still there (and, with the API's test before, an earlier copy)
    assert new["title"] in (f"{PHOTOS_TITLE} (imported)", f"{PHOTOS_TITLE} (imported 2)")
    assert images_of(served.api, new["id"]) == served.sent[served.photos]
    page.context.close()


def test_the_page_takes_every_file_an_import_takes(tmp_path: Path) -> None:
    """The page's upload limit (Gradio's, `backends.server.MAX_UPLOAD`) lets through every
    export an import reads: otherwise an export the app said was importable is refused."""
    config = AppConfig(models=("scripted:echo",), data_dir=tmp_path / "data")

    async def page_limit() -> int | None:
        app, cleanup = await build_server(config, probe_local=False)
        try:
            (page,) = [r.app for r in app.routes if isinstance(r, Mount) and r.path == ""]
            limit: int | None = page.get_blocks().max_file_size  # type: ignore[attr-defined]
            return limit
        finally:
            await cleanup()

    # Not on this thread: a browser test's Playwright session keeps a loop running here.
    with ThreadPoolExecutor(1) as thread:
        limit = thread.submit(asyncio.run, page_limit()).result()
    assert limit is not None and limit >= MAX_IMPORT_BYTES, (
        f"the page takes uploads up to {limit} bytes, an import up to {MAX_IMPORT_BYTES:,}"
    )


# -- over the limit: told at export, refused at import in the same words --------------------------


def test_an_export_too_large_to_import_is_refused_by_the_api_with_both_sizes(
    served: Served,
) -> None:
    api = served.api
    refused = api.get(f"/api/sessions/{served.big}/export")
    assert refused.status_code == 413, refused.text
    message = error_of(refused)["message"]
    match = re.search(r"the export is ([\d.]+ MiB); an import takes at most (\d+ MiB)", message)
    assert match is not None, message
    assert match.group(2) == size_text(MAX_IMPORT_BYTES) == "64 MiB"
    assert "?allow_unimportable=true" in message

    anyway = api.get(f"/api/sessions/{served.big}/export", params={"allow_unimportable": "true"})
    assert anyway.status_code == 200, anyway.text
    assert len(anyway.content) > MAX_IMPORT_BYTES
    assert size_text(len(anyway.content)) == match.group(1)

    imported = api.post("/api/sessions/import", content=anyway.content)
    assert imported.status_code == 413, imported.text
    assert error_of(imported) == {
        "code": "too_large",
        "message": f"the file is {match.group(1)}; the limit is 64 MiB",
    }


def test_the_page_says_at_export_that_a_chat_is_too_large_to_import_and_saves_it_anyway(
    chromium: Browser, served: Served, tmp_path: Path
) -> None:
    page = open_chat(chromium, served, BIG_TITLE)
    saved = tmp_path / "big.json"
    export_on(page, saved)
    size = size_text(saved.stat().st_size)
    said = toast(page, "cannot be imported back")
    expect(said).to_have_count(1, timeout=WAIT_MS)
    expect(said).to_contain_text(f"the export is {size}; an import takes at most 64 MiB")
    expect(said).to_contain_text("It holds the whole chat")
    refused = served.api.get(f"/api/sessions/{served.big}/export")
    assert error_of(refused)["message"].startswith(
        f"this chat could not be imported back: the export is {size}; "
    )
    page.context.close()
