"""The page's images by address (`backends.gradio.media`): one address per image and owner,
answered for that owner only, within a bounded shelf; the chat's Markdown links it."""

from __future__ import annotations

import base64

import httpx
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from backends.gradio.markdown import image_markdown
from backends.gradio.media import MEDIA_PATH, MediaShelf, add_media_route
from backends.gradio.renderer import ChatView
from schema import ImagePart, Message, Role
from tests.backends.gradio.kit import tiny_png

PNG = base64.b64encode(tiny_png()).decode()


def picture(data: str = PNG, media_type: str = "image/png") -> ImagePart:
    return ImagePart(media_type=media_type, data=data)


def test_an_image_keeps_one_address_per_owner_and_answers_only_that_owner() -> None:
    shelf = MediaShelf()
    address = shelf.link("alice", picture())
    assert address is not None and address.startswith(f"{MEDIA_PATH}/")
    assert shelf.link("alice", picture()) == address  # shown again: the browser's copy holds
    other = shelf.link("bob", picture())
    assert other is not None and other != address
    token = address.removeprefix(f"{MEDIA_PATH}/")
    assert shelf.take("alice", token) == ("image/png", tiny_png())
    assert shelf.take("bob", token) is None
    assert shelf.take("alice", "no-such-token") is None
    assert len(shelf) == 2 and shelf.kept_bytes == 2 * len(PNG)


def test_the_shelf_lets_the_least_recently_shown_go_and_keeps_an_oversized_image_inline() -> None:
    one, two, three = (
        picture(base64.b64encode(tiny_png() + bytes([n]) * 3).decode()) for n in (1, 2, 3)
    )
    size = len(str(one.data))
    assert {len(str(image.data)) for image in (one, two, three)} == {size}
    shelf = MediaShelf(max_bytes=2 * size)
    first = shelf.link("alice", one)
    assert first is not None and shelf.link("alice", picture(str(one.data))) == first  # equal data
    second = shelf.link("alice", two)
    assert shelf.link("alice", one) == first  # shown again: now the most recent
    assert shelf.link("alice", three) is not None  # over the bound: `two` goes, not `one`
    assert len(shelf) == 2 and shelf.kept_bytes == 2 * size
    assert shelf.take("alice", first.removeprefix(f"{MEDIA_PATH}/")) is not None
    assert second is not None and shelf.take("alice", second.removeprefix(f"{MEDIA_PATH}/")) is None
    again = shelf.link("alice", two)
    assert again is not None and again != second  # shelved again, under a new address
    assert len(shelf) == 2 and shelf.kept_bytes == 2 * size
    assert MediaShelf(max_bytes=size - 1).link("alice", one) is None  # larger than the shelf
    assert shelf.link("alice", ImagePart(url="https://example.org/a.png")) is None
    assert shelf.link("alice", picture(media_type="text/html")) is None


def test_the_chat_links_shelved_images_and_inlines_the_rest() -> None:
    shelf = MediaShelf()
    linked = image_markdown(picture(), "photo", shelf.linker("alice"))
    assert linked is not None and linked.startswith(f"![photo]({MEDIA_PATH}/")
    assert image_markdown(picture(), "photo", lambda _image: None) == (
        f"![photo](data:image/png;base64,{PNG})"
    )
    assert image_markdown(picture(media_type="text/html"), "x", shelf.linker("alice")) is None
    assert image_markdown(picture(data="not base64!"), "x", shelf.linker("alice")) is None

    message = Message(role=Role.USER, content="look", images=(picture(),))
    shown = ChatView.from_history([message], media=shelf.linker("alice")).messages()
    text = str(shown[0]["content"])
    assert f"]({MEDIA_PATH}/" in text and PNG not in text
    inline = str(ChatView.from_history([message]).messages()[0]["content"])
    assert f"base64,{PNG}" in inline


class _Page:
    """The attributes of a mounted Gradio app the route reads its login from."""

    def __init__(self, *, auth: object = None, dependency: object = None) -> None:
        self.auth = auth
        self.auth_dependency = dependency
        self.cookie_id = "cid"
        self.tokens = {"alice-cookie": "alice"}

    async def __call__(self, scope: object, receive: object, send: object) -> None:
        await PlainTextResponse("page")(scope, receive, send)  # type: ignore[arg-type]


async def _get(app: Starlette, path: str, cookies: dict[str, str] | None = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", cookies=cookies) as c:
        return await c.get(path)


async def test_the_route_answers_the_pages_login_and_is_ahead_of_the_page() -> None:
    shelf = MediaShelf()
    alice = str(shelf.link("alice", picture()))
    local = str(shelf.link("local", picture()))
    page = _Page(auth=object())
    app = Starlette(routes=[Mount("", app=page)])  # the page is mounted first
    add_media_route(app, shelf)

    signed = await _get(app, "/" + alice, {"access-token-cid": "alice-cookie"})
    assert signed.status_code == 200 and signed.content == tiny_png()
    assert signed.headers["content-type"] == "image/png"
    assert signed.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in signed.headers["content-security-policy"]
    unsecure = await _get(app, "/" + alice, {"access-token-unsecure-cid": "alice-cookie"})
    assert unsecure.status_code == 200
    assert (await _get(app, "/" + alice)).status_code == 401
    assert (await _get(app, "/" + alice, {"access-token-cid": "stale"})).status_code == 401
    assert (await _get(app, "/" + local, {"access-token-cid": "alice-cookie"})).status_code == 404
    assert (await _get(app, "/")).text == "page"  # everything else is still the page's

    page.auth = None  # no login: everyone is "local"
    assert (await _get(app, "/" + local)).status_code == 200
    assert (await _get(app, "/" + alice)).status_code == 404

    async def by_header(request: object) -> str | None:
        return "alice"

    page.auth_dependency = by_header  # a reverse proxy signs people in
    assert (await _get(app, "/" + alice)).status_code == 200
    page.auth_dependency = lambda _request: None
    assert (await _get(app, "/" + alice)).status_code == 401


async def test_without_a_mounted_page_nobody_is_answered() -> None:
    shelf = MediaShelf()
    app = Starlette(routes=[Route("/", PlainTextResponse)])
    add_media_route(app, shelf)
    assert (await _get(app, "/" + str(shelf.link("local", picture())))).status_code == 401
