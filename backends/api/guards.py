"""What keeps other web sites out of the app (the API and the page), as ASGI middleware.

- `LoopbackHostOnly`: without login, only requests addressed to a loopback name are served
  (a DNS-rebinding page on another site cannot reach the local app).
- `NoCrossOrigin`: no other web site is ever allowed to read an answer (no CORS). Gradio
  would allow any origin, with credentials, whenever the app is served under a real host
  name (team mode), and any localhost origin otherwise; a page on another site could then
  use a signed-in person's page cookie to read their chats and approve tool calls. The page
  and the API need no cross-origin access: the page is served from the app itself, and API
  clients that are not browsers ignore CORS.
"""

from __future__ import annotations

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gui_agent.auth import is_loopback

CROSS_ORIGIN_REFUSED = (
    "GuiAgent does not answer requests from other web sites (no cross-origin access); "
    "open it at its own address, or call the API from a program rather than a web page."
)


class LoopbackHostOnly:
    """Without login, answer only requests addressed to a loopback name (Host header).

    Otherwise a web page on another site could reach the local app through DNS rebinding
    and drive the agent. Serving under another name needs login configured.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = Headers(scope=scope).get("host", "")
            if not is_loopback(host_name(host)):
                response = PlainTextResponse(
                    "GuiAgent runs without login, so it only answers requests addressed to "
                    "localhost or 127.0.0.1. Configure login (--auth-file) to serve it under "
                    "another name.",
                    status_code=421,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class NoCrossOrigin:
    """Grant no origin access: a CORS preflight is refused (403) before it reaches the app,
    and `Access-Control-*` headers that anything inside adds are removed from answers to
    requests that name an origin. (A same-origin request needs no such header, so this is
    also right behind a proxy that rewrites the Host header.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if "origin" not in headers:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await PlainTextResponse(CROSS_ORIGIN_REFUSED, status_code=403)(scope, receive, send)
            return

        async def without_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                answer = MutableHeaders(scope=message)
                for name in {key for key in answer if key.startswith("access-control-")}:
                    del answer[name]
            await send(message)

        await self.app(scope, receive, without_cors)


def host_name(host: str) -> str:
    """The name part of a Host header: `[::1]:7860` -> `::1`, `localhost:80` -> `localhost`."""
    host = host.strip()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
