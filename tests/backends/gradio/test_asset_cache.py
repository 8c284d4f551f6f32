"""Gradio's build files answered from memory once answered (asset_cache.py), against the
real page app served over loopback: what is kept, in which encodings, with which headers,
and everything that passes through untouched."""

from __future__ import annotations

import gzip
import http.client
import re
from collections.abc import Iterator
from pathlib import Path

import brotli  # type: ignore[import-untyped]
import gradio
import pytest

from backends.gradio.asset_cache import FOREVER, AssetStore, KeptAnswer, accepted_encodings
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import build, served

BUILD = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
CHROME = "gzip, deflate, br, zstd"  # what Chromium sends


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with served(build) as running:
        yield running


def get(
    server: LiveServer, path: str, method: str = "GET", **headers: str
) -> tuple[int, dict[str, str], bytes]:
    """One request as sent (no decoding, the path as written): status, headers, body."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(method, path, headers=headers)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def page_assets(server: LiveServer) -> list[str]:
    """The build files the page names in its HTML (its entry scripts and styles)."""
    _, _, html = get(server, "/")
    return sorted(set(re.findall(r"/assets/[\w.-]+\.(?:js|css)", html.decode())))


def store(server: LiveServer) -> AssetStore:
    kept: AssetStore = server.state.assets
    return kept


def decoded(headers: dict[str, str], body: bytes) -> bytes:
    coding = headers.get("content-encoding", "identity")
    if coding == "br":
        return bytes(brotli.decompress(body))
    if coding == "gzip":
        return gzip.decompress(body)
    assert coding == "identity", coding
    return body


@pytest.mark.parametrize(("accept", "coding"), [(CHROME, "br"), ("gzip", "gzip"), ("", "identity")])
def test_a_build_file_is_read_once_then_answered_from_memory_in_each_encoding(
    server: LiveServer, accept: str, coding: str
) -> None:
    path = page_assets(server)[0]
    on_disk = (BUILD / path.removeprefix("/assets/")).read_bytes()
    kept = store(server)
    answers: list[tuple[int, dict[str, str], bytes]] = []
    for _ in range(2):
        hits = kept.hits
        status, headers, body = get(server, path, **{"Accept-Encoding": accept})
        assert status == 200
        assert headers.get("content-encoding", "identity") == coding
        assert headers["cache-control"] == FOREVER  # a hashed name: never asked again
        assert decoded(headers, body) == on_disk
        answers.append((kept.hits - hits, headers, body))
    (first_hit, first, first_body), (second_hit, headers, body) = answers
    assert (first_hit, second_hit) == (0, 1)  # the first read from disk, the second not
    assert body == first_body
    assert headers["content-length"] == str(len(body))
    assert headers["content-type"] == first["content-type"]
    assert headers["content-type"].startswith(("text/css", "application/javascript"))
    assert (path, coding) in kept.answers
    assert "set-cookie" not in headers


def test_a_request_gets_an_encoding_it_accepts_of_those_kept(server: LiveServer) -> None:
    path = page_assets(server)[-1]
    for accept in ("br", "gzip"):  # both kept
        assert get(server, path, **{"Accept-Encoding": accept})[0] == 200
    hits = store(server).hits
    _, headers, _ = get(server, path, **{"Accept-Encoding": "br;q=0, gzip"})
    assert headers["content-encoding"] == "gzip"
    _, headers, body = get(server, path, **{"Accept-Encoding": "identity"})
    assert "content-encoding" not in headers  # not kept yet: read from disk, then kept
    assert store(server).hits == hits + 1
    assert body == (BUILD / path.removeprefix("/assets/")).read_bytes()


def test_what_is_not_a_whole_build_file_passes_through_and_is_not_kept(
    server: LiveServer,
) -> None:
    path = page_assets(server)[0]
    get(server, path, **{"Accept-Encoding": CHROME})  # kept, if it was not yet
    get(server, path)  # and as it is (whatever the tests before this one fetched)
    kept = store(server)
    before = (kept.hits, dict(kept.answers))
    status, headers, body = get(server, path, **{"Accept-Encoding": "", "Range": "bytes=0-9"})
    assert (status, len(body)) == (206, 10)  # Gradio's own answer to a range
    _, headers, _ = get(server, path)
    status, _, body = get(server, path, **{"If-None-Match": headers["etag"]})
    assert status in (200, 304)  # Gradio's own answer to a check (it has no 304 today)
    status, headers, body = get(server, path, method="HEAD")
    assert (status, body) == (200, b"")
    for missing in ("/assets/no-such-file-AAAAAAAA.js", "/assets/../../pyproject.toml"):
        assert get(server, missing)[0] in (403, 404)
        assert get(server, missing)[0] in (403, 404)
    assert get(server, "/config")[0] == 200  # a page route: not a build file
    assert (kept.hits, kept.answers) == (before[0] + 1, before[1])  # only the plain GET


def test_a_file_too_large_to_keep_is_still_answered_whole(server: LiveServer) -> None:
    kept = store(server)
    name = next(p.name for p in sorted(BUILD.glob("*.js")) if p.stat().st_size > 1000)
    path = f"/assets/{name}"
    on_disk = (BUILD / name).read_bytes()
    limit = kept.max_entry_bytes
    kept.max_entry_bytes = 100
    try:
        for _ in range(2):
            status, headers, body = get(server, path, **{"Accept-Encoding": "br"})
            assert status == 200
            assert decoded(headers, body) == on_disk
        assert (path, "br") not in kept.answers
    finally:
        kept.max_entry_bytes = limit


def test_the_store_keeps_each_answer_once_and_within_its_limits() -> None:
    kept = AssetStore(max_bytes=10, max_entry_bytes=6)
    small = KeptAnswer(headers=(), body=b"12345")
    assert kept.keep("/assets/a-12345678.js", "br", small)
    assert not kept.keep("/assets/a-12345678.js", "br", KeptAnswer((), b"1"))  # kept once
    assert not kept.keep("/assets/b-12345678.js", "br", KeptAnswer((), b"1234567"))  # too big
    assert not kept.keep("/assets/c-12345678.js", "br", KeptAnswer((), b"123456"))  # no room
    assert kept.keep("/assets/d-12345678.js", "gzip", KeptAnswer((), b"12345"))
    assert kept.kept_bytes == 10
    assert kept.find("/assets/a-12345678.js", {"gzip", "identity"}) is None
    assert kept.find("/assets/a-12345678.js", {"br", "gzip"}) is small


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        (CHROME, {"br", "gzip", "identity"}),
        ("", {"identity"}),
        ("br;q=0, gzip", {"gzip", "identity"}),
        ("identity;q=0, br", {"br"}),
        ("*;q=0", set()),
        ("*", {"br", "gzip", "identity"}),
        ("GZIP ; Q=0.5", {"gzip", "identity"}),
        ("gzip;q=abc", {"identity"}),
        (",,", {"identity"}),
    ],
)
def test_accepted_encodings_read_the_header_as_http_means_it(
    header: str, accepted: set[str]
) -> None:
    assert accepted_encodings(header) == accepted
