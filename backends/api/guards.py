"""What keeps other web sites out of the app (the API and the page), as ASGI middleware.

- `AllowedHostsOnly`: only requests addressed (`Host`) to a loopback name or to a name the
  operator listed (`GUI_AGENT_ALLOWED_HOSTS`) are served, so a page on another site that
  made its own name resolve to this machine (DNS rebinding) reaches nothing. It guards the
  trusted-proxy-header mode always (such a page could send the user header itself and be
  anyone), and any other login mode when the list is set (`add_host_guard`).
  `LoopbackHostOnly`: without login, loopback names only, whatever the list says: the
  name alone is all that stands between a web page and the agent then, and a listed name
  is only as safe as whoever answers for its DNS (the network's resolver, for a name such
  as `gui.lan`), which would widen who can reach the app.
- `NoCrossOrigin`: no other web site is ever allowed to read an answer (no CORS). Gradio
  would allow any origin, with credentials, whenever the app is served under a real host
  name (team mode), and any localhost origin otherwise; a page on another site could then
  use a signed-in person's page cookie to read their chats and approve tool calls. The page
  and the API need no cross-origin access: the page is served from the app itself, and API
  clients that are not browsers ignore CORS.
- `NotFramed`: no other web site may show the app inside a frame of its own page, where
  it could hide the app under something else and have the person click "Approve" or
  "Delete" without knowing (clickjacking; no login is needed for that on loopback, and
  the page cookie goes along in team mode): every answer says `X-Frame-Options: DENY`
  and `Content-Security-Policy: frame-ancestors 'none'`.
- `SameOriginWrites`: no other web site may make the app *do* anything either. Without
  CORS a page elsewhere still cannot read answers, but a browser sends some requests
  without asking first (a form's POST, a `fetch` in no-cors mode with a form or text
  body), with the app's cookies. Such a request could sign the person in as someone else
  (a form posting to the page's `/login`), or upload files with their login. So a request
  whose method changes something (anything but GET, HEAD and OPTIONS) is refused with 403,
  before it reaches the app, when the browser says it comes from another origin:

  1. `Sec-Fetch-Site: cross-site` or `same-site` (a page on another site, or on this host
     at another port or subdomain) is refused; `same-origin` is allowed (the browser itself
     vouches that the page sending it came from the very address it is sent to, which
     stays right behind any proxy); `none` (typed by the person) is allowed.
  2. Otherwise (browsers send `Sec-Fetch-Site` only over HTTPS and to localhost) an
     `Origin` header must name the app's own origin: `null` (a sandboxed frame, a file
     opened from disk, a redirect from another site) or any other origin is refused.
  3. A request with neither header (curl, Python clients, the SDKs) is served as before.

  Gradio's `/logout` changes something although it is a GET (it ends every page login of
  the person): a link or an image on another site that points at it is refused by rule 1
  (rule 2 cannot apply: browsers send no Origin with such a GET).

  The app's own origin is the request's scheme with its `Host` header; behind a reverse
  proxy, a host named by `X-Forwarded-Host` or by `Forwarded: host=...`, with a scheme from
  `X-Forwarded-Proto` or `Forwarded: proto=...`, counts as the app's own too. Caddy sends
  the browser's `Host` and the `X-Forwarded-*` headers by itself; with nginx, pass
  `proxy_set_header Host $http_host;` (or `X-Forwarded-Host $http_host`) and
  `X-Forwarded-Proto $scheme` (the page itself needs them too). These headers are trusted
  here whether or not `--trusted-proxy-header` is set: a page on another site cannot put
  them on a request (a custom header makes the browser ask first, and that preflight is
  refused), and a program that forges them carries nobody's cookies.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gui_agent.auth.hosts import LOOPBACK_NAMES, host_allowed

logger = logging.getLogger(__name__)

CROSS_ORIGIN_REFUSED = (
    "GuiAgent does not answer requests from other web sites (no cross-origin access); "
    "open it at its own address, or call the API from a program rather than a web page."
)

LOOPBACK_ONLY = (
    "GuiAgent runs without login, so it only answers requests addressed to localhost or "
    "127.0.0.1. Configure login (--auth-file) to serve it under another name."
)
HOST_NOT_ALLOWED = (
    "GuiAgent refused this request: it was addressed to {host}, a name GuiAgent is not "
    "told to answer to (a page on another site could otherwise reach it by making its own "
    "name resolve to this machine). If GuiAgent is served under this name, add the name to "
    "GUI_AGENT_ALLOWED_HOSTS (or --allowed-hosts), comma-separated, such as "
    "chat.example.com,*.example.com; localhost and 127.0.0.1 are always answered."
)

WRITE_REFUSED = (
    "GuiAgent refused this request: a page at another address sent it ({sender}), and "
    "only GuiAgent's own page may change anything. Open GuiAgent at its own address; "
    "a program calling the API sends no Origin header and is not affected."
)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing, so any page may send them (it still cannot read the
answer: `NoCrossOrigin`)."""
_DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = tuple[str, str, int]
"""scheme, host name (lower case, no brackets), port."""


class AllowedHostsOnly:
    """Answer only requests (http and websocket) with one `Host` header that names a
    loopback address or `localhost`, or matches `allowed` (normalised by
    `gui_agent.auth.hosts.host_pattern`), whatever the port; refuse the others with 421
    and `refusal` (its `{host}` is the name that was refused) before they reach the app."""

    def __init__(
        self, app: ASGIApp, *, allowed: Collection[str] = (), refusal: str = HOST_NOT_ALLOWED
    ) -> None:
        self.app = app
        self.allowed = frozenset(allowed)
        self.refusal = refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            hosts = Headers(scope=scope).getlist("host")
            name = host_name(hosts[0]) if len(hosts) == 1 else ""
            if not host_allowed(name, self.allowed):
                shown = repr(name[:100]) if name else "no single host name"
                message = self.refusal.replace("{host}", shown)
                response = _refusal(scope, message, status=421, code="misdirected_request")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class LoopbackHostOnly(AllowedHostsOnly):
    """Without login, answer only requests addressed to a loopback name (Host header).

    Otherwise a web page on another site could reach the local app through DNS rebinding
    and drive the agent. Serving under another name needs login configured; the allow-list
    does not apply here (see the module docstring).
    """

    def __init__(self, app: ASGIApp) -> None:
        super().__init__(app, refusal=LOOPBACK_ONLY)


def add_host_guard(
    app: Starlette,
    *,
    proxy_header: str | None,
    users_file: bool,
    insecure_no_auth: bool,
    allowed: Sequence[str],
) -> None:
    """Add the host check `app`'s login mode calls for, and log which names are answered:

    - with a proxy's user header: loopback names and `allowed`, always;
    - without login (and without `--insecure-no-auth`): loopback names only; a list set is
      ignored, with a warning;
    - otherwise (a users file, or no login with `--insecure-no-auth`): loopback names and
      `allowed` when the list is set, no check when it is not (as before the list existed).
    """
    answered = ", ".join([*LOOPBACK_NAMES, *allowed])
    if proxy_header is not None:
        logger.info(
            "the user comes from the %s header: answering only requests addressed to %s "
            "(more names: GUI_AGENT_ALLOWED_HOSTS)",
            proxy_header,
            answered,
        )
        app.add_middleware(AllowedHostsOnly, allowed=allowed)
    elif not users_file and not insecure_no_auth:
        if allowed:
            logger.warning(
                "GUI_AGENT_ALLOWED_HOSTS (%s) is ignored without login: only localhost and "
                "loopback addresses are answered. Configure login to serve other names",
                ", ".join(allowed),
            )
        app.add_middleware(LoopbackHostOnly)
    elif allowed:
        logger.info("answering only requests addressed to %s (GUI_AGENT_ALLOWED_HOSTS)", answered)
        app.add_middleware(AllowedHostsOnly, allowed=allowed)


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
            refusal = _refusal(scope, CROSS_ORIGIN_REFUSED, code="cross_origin_request")
            await refusal(scope, receive, send)
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


FRAME_ANCESTORS = "frame-ancestors 'none'"

LOCAL_MEDIA = "img-src 'self' data: blob:; media-src 'self' data: blob:"
"""Images and media come from the app itself only (its icons and attached pictures are data
or blob URLs): an image a model's reply got through the escaping fetches nothing from
elsewhere, so its address cannot carry data out (page.js sets the same for a page served
another way)."""


class NotFramed:
    """Tell browsers never to show any answer inside a frame (`X-Frame-Options: DENY` and
    the CSP `frame-ancestors 'none'`) nor to load images and media from elsewhere
    (`LOCAL_MEDIA`), added to whatever policy the answer already has."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def not_framed(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                answer = MutableHeaders(scope=message)
                answer["X-Frame-Options"] = "DENY"
                answer.append("Content-Security-Policy", FRAME_ANCESTORS)
                answer.append("Content-Security-Policy", LOCAL_MEDIA)
            await send(message)

        await self.app(scope, receive, not_framed)


class SameOriginWrites:
    """Refuse (403) a request that changes something when the browser says another origin
    sent it (see the module docstring for the rule). `changing_gets` are paths whose GET
    changes something all the same (Gradio's `/logout` ends every page login of the
    person): they are refused when the browser says another site sent them (a link or an
    image on another site), which it says over HTTPS and to localhost."""

    def __init__(self, app: ASGIApp, *, changing_gets: Collection[str] = ("/logout",)) -> None:
        self.app = app
        self.changing_gets = frozenset(changing_gets)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            scope["method"] not in SAFE_METHODS or _app_path(scope) in self.changing_gets
        ):
            sender = foreign_sender(scope, Headers(scope=scope))
            if sender is not None:
                await _refusal(scope, WRITE_REFUSED.format(sender=sender))(scope, receive, send)
                return
        await self.app(scope, receive, send)


def foreign_sender(scope: Scope, headers: Headers) -> str | None:
    """Who sent a request, when the browser says it is not the app's own page (the words
    for the refusal); None for the app's own page and for programs."""
    fetch_site = headers.get("sec-fetch-site", "").strip().lower()
    if fetch_site in ("cross-site", "same-site"):
        origin = headers.get("origin")
        return f"origin {origin}" if origin else f"Sec-Fetch-Site: {fetch_site}"
    origin = headers.get("origin")
    if origin is None or fetch_site == "same-origin":
        return None
    parsed = parse_origin(origin)
    if parsed is None:
        if origin.strip() == "null":
            return "origin null: a sandboxed frame, a file opened from disk or a redirect"
        return f"the unreadable origin {origin[:100]!r}"
    return None if parsed in own_origins(scope, headers) else f"origin {origin}"


def own_origins(scope: Scope, headers: Headers) -> set[Origin]:
    """The origins the app is served at, as this request tells them: its scheme and Host,
    and what a reverse proxy in front says (`X-Forwarded-Host`/`-Proto`, `Forwarded`)."""
    schemes = {str(scope.get("scheme", "http")).lower()}
    hosts = {headers.get("host", "")}
    schemes.update(_listed(headers.getlist("x-forwarded-proto")))
    hosts.update(_listed(headers.getlist("x-forwarded-host")))
    for element in _listed(headers.getlist("forwarded")):
        for pair in element.split(";"):
            key, _, value = pair.partition("=")
            value = value.strip().strip('"')
            if key.strip().lower() == "host":
                hosts.add(value)
            elif key.strip().lower() == "proto":
                schemes.add(value.lower())
    found = set()
    for scheme in schemes:
        for host in hosts:
            if host and not any(mark in host for mark in "/\\@?# "):
                origin = parse_origin(f"{scheme}://{host}")
                if origin is not None:
                    found.add(origin)
    return found


def parse_origin(origin: str) -> Origin | None:
    """`https://Chat.Example.com` -> ("https", "chat.example.com", 443); None for `null`
    and anything that is not an http(s) origin."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.username is not None:
        return None
    return scheme, parts.hostname.lower().rstrip("."), port or _DEFAULT_PORTS[scheme]


def _listed(values: list[str]) -> list[str]:
    """The items of comma-separated header values, stripped, empty ones left out."""
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def _app_path(scope: Scope) -> str:
    """The request's path inside the app (without the `--root-path` prefix)."""
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", ""))
    path = path[len(root) :] if root and path.startswith(root) else path
    return path.rstrip("/") or "/"


def _refusal(
    scope: Scope, message: str, *, status: int = 403, code: str = "cross_site_request"
) -> Response:
    """A refusal saying why: in the API's error shape under /api (so an API client reads
    every error the same way), as plain text elsewhere."""
    path = _app_path(scope)
    if path == "/api" or path.startswith("/api/"):
        return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)
    return PlainTextResponse(message, status_code=status)
