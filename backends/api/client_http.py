"""How both API clients (`client.GuiAgentClient`, `async_client.AsyncGuiAgentClient`)
set up httpx, in one place so that the two cannot drift apart:

- the token goes to `base_url`'s origin only, as an `Authorization` header (`BearerAuth`);
- redirects are not followed, and cookies are not kept (the login's cookie is for browsers);
- a loopback server is reached directly, never through a proxy named in the environment;
- a connection left idle for `KEEPALIVE_EXPIRY_S` is closed, not used again: httpx keeps
  one for 5 s, exactly as long as the server (uvicorn) keeps it open, so a request made
  after about 5 s of quiet could go out on a connection the server was closing, and fail
  ("connection reset", "server disconnected") though the server was fine;
- an event stream may stay silent for `STREAM_READ_TIMEOUT_S` (four of the server's
  keep-alives) before its connection is taken for dead and opened again.

Nothing here sends anything: the clients build their httpx client from `http_settings`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Generator
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Protocol, TypedDict, TypeVar

import httpx

from backends.api.client_wire import StreamReading
from backends.api.timing import DEFAULT_KEEPALIVE_S

_T = TypeVar("_T")

DEFAULT_TIMEOUT_S = 30.0
MAX_RECONNECTS = 5
STREAM_READ_TIMEOUT_S = 4 * DEFAULT_KEEPALIVE_S
"""Silence on an event stream longer than this (four of the server's keep-alives) is taken
for a dead connection, and the stream is opened again."""
KEEPALIVE_EXPIRY_S = 2.0
"""How long an idle connection is kept for the next request: well under the 5 s the server
keeps one open, so none is used again as the server closes it."""


class TokenHolder(Protocol):
    """Where the bearer token is kept (the client: `login` sets it)."""

    @property
    def token(self) -> str | None: ...


class BearerAuth(httpx.Auth):
    """`Authorization: Bearer <token>` on requests to `base_url`'s origin only, with the
    token `holder` has at the moment of each request."""

    def __init__(self, holder: TokenHolder, base_url: httpx.URL) -> None:
        self._holder = holder
        self._origin = origin(base_url)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self._holder.token
        if token and origin(request.url) == self._origin:
            request.headers["Authorization"] = f"Bearer {token}"
        yield request


class HttpSettings(TypedDict):
    """The keyword arguments of `httpx.Client` and `httpx.AsyncClient` both clients use."""

    base_url: httpx.URL
    auth: httpx.Auth
    timeout: float
    follow_redirects: bool
    cookies: CookieJar
    trust_env: bool
    limits: httpx.Limits


def http_settings(base_url: httpx.URL, holder: TokenHolder, timeout: float) -> HttpSettings:
    """The httpx client settings for the API at `base_url` (checked by `checked_base_url`)."""
    return HttpSettings(
        base_url=base_url,
        auth=BearerAuth(holder, base_url),
        timeout=timeout,
        follow_redirects=False,
        cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
        trust_env=not is_loopback(base_url),
        limits=pool_limits(),
    )


def pool_limits() -> httpx.Limits:
    """httpx's own limits on connections, but an idle one is let go after
    `KEEPALIVE_EXPIRY_S`."""
    return httpx.Limits(
        max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_EXPIRY_S
    )


def stream_timeout(timeout: float) -> httpx.Timeout:
    """An event stream's timeouts: `timeout` to connect, longer silences while reading."""
    return httpx.Timeout(timeout, read=max(timeout, STREAM_READ_TIMEOUT_S))


def stream_request(
    http: httpx.Client | httpx.AsyncClient, reading: StreamReading[_T], timeout: httpx.Timeout
) -> httpx.Request:
    """The request that opens (or opens again) the stream `reading` follows."""
    return http.build_request(
        "GET", reading.cursor.path, headers=reading.opening(), timeout=timeout
    )


def checked_base_url(base_url: str) -> httpx.URL:
    """`base_url` with one trailing slash (so relative paths keep a path prefix); ValueError
    for anything but an http(s) URL with a host and no user, password, query or fragment."""
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"base_url must be an http(s) URL with a host, not {base_url!r}")
    if url.userinfo or url.query or url.fragment:
        raise ValueError("base_url takes no user name, password, query or fragment")
    return url.copy_with(path=url.path.rstrip("/") + "/")


def origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or {"http": 80, "https": 443}.get(url.scheme)


def is_loopback(url: httpx.URL) -> bool:
    """A loopback address names this machine: through a proxy it would name the proxy's."""
    try:
        return url.host == "localhost" or ipaddress.ip_address(url.host).is_loopback
    except ValueError:
        return False
