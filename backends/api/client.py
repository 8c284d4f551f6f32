"""A typed Python client for the HTTP + SSE API (`backends.api.app`), for front ends of
your own: a Streamlit page, a notebook, a script, a bot.

    client = GuiAgentClient("http://127.0.0.1:7860")
    client.login()                            # or client.login("alice", password)
    chat = client.create_session(title="Plans")
    with client.events(chat.id) as events:    # open it first: nothing sent after is missed
        client.send_message(chat.id, "Hello!")
        for event in events:                  # typed `schema` events
            ...

Synchronous, as Streamlit runs a script top to bottom (no event loop needed, none used).
Answers are the API's own models (`backends.api.responses`, `schema`); failures are the
errors drawn in `client_wire`: `ApiError` (`Unauthorized`, `NotFound`, `Conflict`,
`RateLimited`) when the server said no, `ConnectionFailed` when it could not be reached or
did not answer in time, `BadResponse` for an answer the API does not send; never a bare
httpx error.

An event stream remembers the id of the last event it handed out. When its connection
breaks (or the server says it `fell_behind`), it connects again with `Last-Event-ID` and
goes on with the next event: nothing lost, nothing twice. It tries at once the first time,
then after the server's `retry:` interval; `max_reconnects` failures in a row end it with
`ConnectionFailed`. When the server no longer holds what was missed (it restarted, or too
much happened meanwhile) it raises `ResyncRequired`: load the session again. The stream
ends (StopIteration) when the server ends it: `event: closed` (the caller's access ended;
`events.closed` says why), the session deleted, the server shutting down.

Requests are never retried: a message or an approval sent twice is not the same as sent
once; the only 429 the API sends is the login throttle, which trying again at once only
meets again (`RateLimited.retry_after` says when); its 503s (the store, the users file)
need someone to fix the server. The event stream is the exception: reading it again from
the last id changes nothing.

The token goes to `base_url`'s origin only, as an `Authorization` header: redirects are not
followed, cookies are not kept (the login's cookie is for browsers), every id is sent as
one path segment, and a loopback server is reached directly, never through a proxy named
in the environment. Nothing is printed: reconnects and skipped events are logged (logger
`backends.api.client_wire`).
"""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any, Generic, Protocol, Self, TypeVar

import httpx
from pydantic import BaseModel

from backends.api import client_wire as wire
from backends.api.app import DEFAULT_KEEPALIVE_S
from backends.api.client_wire import (
    ApiError,
    BadResponse,
    ClientError,
    Conflict,
    ConnectionFailed,
    EventCursor,
    NotFound,
    RateLimited,
    ResyncRequired,
    Step,
    StreamHello,
    Unauthorized,
    json_body,
    session_path,
)
from backends.api.responses import (
    AgentsAnswer,
    ApprovalAnswer,
    HealthAnswer,
    ImportAnswer,
    LoginAnswer,
    MessageAccepted,
    ModelsAnswer,
    SessionAnswer,
    SessionDetail,
    SessionList,
    StopAnswer,
    TurnStarted,
)
from gui_agent.changes import ChatChange
from schema import AgentName, ApprovalDecision, Event, ImagePart, SessionRecord

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ApiError",
    "BadResponse",
    "ChangeStream",
    "ClientError",
    "Conflict",
    "ConnectionFailed",
    "EventStream",
    "GuiAgentClient",
    "NotFound",
    "RateLimited",
    "ResyncRequired",
    "StreamHello",
    "Unauthorized",
]

DEFAULT_TIMEOUT_S = 30.0
MAX_RECONNECTS = 5
STREAM_READ_TIMEOUT_S = 4 * DEFAULT_KEEPALIVE_S
"""Silence on an event stream longer than this (four of the server's keep-alives) is taken
for a dead connection, and the stream is opened again."""

_M = TypeVar("_M", bound=BaseModel)
_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class GuiAgentClient:
    """The API of the GuiAgent server at `base_url` (the page's address, with its
    `--root-path` if any). `token`: one you already hold (else `login`); `timeout`: for
    each request, in seconds. Use it as a context manager, or `close()` it."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_reconnects: int = MAX_RECONNECTS,
    ) -> None:
        self.base_url = _checked(base_url)
        self.token = token
        """The bearer token sent with each request; `login` sets it."""
        self.max_reconnects = max_reconnects
        self._stream_timeout = httpx.Timeout(timeout, read=max(timeout, STREAM_READ_TIMEOUT_S))
        self._http = httpx.Client(
            base_url=self.base_url,
            auth=_Bearer(self),
            timeout=timeout,
            follow_redirects=False,
            cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
            trust_env=not _loopback(self.base_url),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- who, and what is on offer ---------------------------------------------------------

    def health(self) -> HealthAnswer:
        """Needs no token; `auth` says how to log in ("password", "proxy" or "none")."""
        return self._read(HealthAnswer, self._send("GET", "api/health"))

    def login(self, username: str | None = None, password: str | None = None) -> LoginAnswer:
        """Log in and keep the token for the next requests. A server without a users file
        (`health().auth == "none"`) wants no name or password."""
        body = json_body(username=username, password=password) if username is not None else None
        answer = self._read(LoginAnswer, self._send("POST", "api/login", body))
        self.token = answer.token
        return answer

    def models(self) -> ModelsAnswer:
        return self._read(ModelsAnswer, self._send("GET", "api/models"))

    def agents(self) -> AgentsAnswer:
        return self._read(AgentsAnswer, self._send("GET", "api/agents"))

    # -- sessions ----------------------------------------------------------------------------

    def list_sessions(
        self, *, query: str | None = None, limit: int | None = None, offset: int = 0
    ) -> SessionList:
        """The caller's sessions, most recently used first; `query` searches them."""
        params = {"q": query, "limit": limit, "offset": offset}
        answer = self._send("GET", "api/sessions", params=params)
        return self._read(SessionList, answer)

    def create_session(
        self,
        *,
        agent: AgentName | None = None,
        model: str | None = None,
        settings: Mapping[str, Any] | None = None,
        title: str | None = None,
    ) -> SessionRecord:
        """`settings` holds only the fields to change from the defaults."""
        body = json_body(agent=agent, model=model, settings=settings, title=title)
        return self._read(SessionAnswer, self._send("POST", "api/sessions", body)).session

    def get_session(self, session_id: str, *, limit: int | None = None) -> SessionDetail:
        """The session, its last `limit` messages (all by default), what it is doing, and
        where its events are at (`last_seq`, `epoch`: where `events` can resume)."""
        answer = self._send("GET", session_path(session_id), params={"limit": limit})
        return self._read(SessionDetail, answer)

    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        settings: Mapping[str, Any] | None = None,
        autochat: Mapping[str, Any] | None = None,
        agent: AgentName | None = None,
        model: str | None = None,
    ) -> SessionRecord:
        """Change only what is given; `settings` and `autochat` field by field."""
        body = json_body(
            title=title, settings=settings, autochat=autochat, agent=agent, model=model
        )
        answer = self._send("PATCH", session_path(session_id), body)
        return self._read(SessionAnswer, answer).session

    def delete_session(self, session_id: str) -> None:
        """The session, its history and its working folder, for good."""
        self._send("DELETE", session_path(session_id))

    def export_session(self, session_id: str, *, allow_unimportable: bool = False) -> bytes:
        """The export document (JSON), as the file to save. A session too large to import
        back is `ApiError` 413 unless `allow_unimportable`."""
        params = {"allow_unimportable": "true" if allow_unimportable else None}
        return self._send("GET", session_path(session_id, "export"), params=params).content

    def import_session(self, document: bytes | str | Mapping[str, Any]) -> ImportAnswer:
        """A new session from an export document (what it did not carry over: `reset`)."""
        if isinstance(document, Mapping):
            document = json.dumps(document)
        body = document.encode() if isinstance(document, str) else document
        return self._read(ImportAnswer, self._send("POST", "api/sessions/import", body))

    # -- a conversation ----------------------------------------------------------------------

    def send_message(
        self,
        session_id: str,
        text: str,
        *,
        images: Sequence[ImagePart] = (),
        agent: AgentName | None = None,
    ) -> MessageAccepted:
        """Starts a turn, or waits behind the running one (`queued`)."""
        body = json_body(text=text, images=list(images) or None, agent=agent)
        answer = self._send("POST", session_path(session_id, "messages"), body)
        return self._read(MessageAccepted, answer)

    def stop(self, session_id: str) -> bool:
        """Stop the running turn, keeping its reply; False when nothing was running."""
        answer = self._send("POST", session_path(session_id, "stop"))
        return self._read(StopAnswer, answer).stopped

    def answer_approval(
        self,
        session_id: str,
        approval_id: str,
        decision: ApprovalDecision | str,
        *,
        note: str | None = None,
    ) -> ApprovalAnswer:
        """Answer an `ApprovalRequested` event; the agent reads the note either way. An
        approval answered already (another tab, the timeout) is `Conflict`."""
        path = session_path(session_id, "approvals", wire.segment(approval_id))
        answer = self._send("POST", path, json_body(decision=decision, note=note))
        return self._read(ApprovalAnswer, answer)

    def retry(self, session_id: str) -> TurnStarted:
        """Answer the last message again (`Conflict` while a turn runs)."""
        return self._control(session_id, "retry")

    def edit_last(
        self, session_id: str, text: str, *, images: Sequence[ImagePart] = ()
    ) -> TurnStarted:
        """Replace the person's last message with this one, and answer it again."""
        return self._control(session_id, "edit_last", text, images)

    def clear(self, session_id: str) -> None:
        """Empty the conversation (`Conflict` while a turn runs)."""
        self._send("POST", session_path(session_id, "control"), json_body(action="clear"))

    def events(
        self, session_id: str, *, since: int | str | None = None, epoch: str | None = None
    ) -> EventStream:
        """The session's events, connected before this returns, so a message sent next is
        seen. `since`: the seq (of `epoch`, when known) or the event id to go on after;
        None: from now on (`hello` says where the session is). Close it, or use `with`."""
        cursor = EventCursor.starting(session_id, since, epoch)
        return EventStream(self, cursor, wire.Reconnects(self.max_reconnects))

    def changes(self) -> ChangeStream:
        """The caller's chats created, imported, renamed or deleted, from anywhere. Not
        resumable: after `ConnectionFailed` or `ResyncRequired`, list the sessions again."""
        return ChangeStream(self, wire.ChangeCursor(), wire.Reconnects(0))

    # -- the wire ----------------------------------------------------------------------------

    def _control(
        self,
        session_id: str,
        action: str,
        text: str | None = None,
        images: Sequence[ImagePart] = (),
    ) -> TurnStarted:
        body = json_body(action=action, text=text, images=list(images) or None)
        answer = self._send("POST", session_path(session_id, "control"), body)
        return self._read(TurnStarted, answer)

    def _send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        params: Mapping[str, str | int | None] | None = None,
    ) -> httpx.Response:
        """The success answer to one request; the client's error for anything else."""
        headers = {"Content-Type": "application/json"} if body is not None else None
        query = {k: v for k, v in (params or {}).items() if v is not None}
        request = self._http.build_request(
            method, path, content=body, params=query, headers=headers
        )
        try:
            response = self._http.send(request)
        except httpx.HTTPError as exc:
            raise _failed(exc, request) from exc
        if not response.is_success:
            raise wire.error_from(response)
        return response

    @staticmethod
    def _read(model: type[_M], response: httpx.Response) -> _M:
        return wire.parse(model, response.content)


class _Bearer(httpx.Auth):
    """`Authorization: Bearer <token>` on requests to the client's own origin only."""

    def __init__(self, client: GuiAgentClient) -> None:
        self._client = client
        self._origin = _origin(client.base_url)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self._client.token
        if token and _origin(request.url) == self._origin:
            request.headers["Authorization"] = f"Bearer {token}"
        yield request


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or {"http": 80, "https": 443}.get(url.scheme)


def _checked(base_url: str) -> httpx.URL:
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"base_url must be an http(s) URL with a host, not {base_url!r}")
    if url.userinfo or url.query or url.fragment:
        raise ValueError("base_url takes no user name, password, query or fragment")
    return url.copy_with(path=url.path.rstrip("/") + "/")


def _loopback(url: httpx.URL) -> bool:
    """A loopback address names this machine: through a proxy it would name the proxy's."""
    try:
        return url.host == "localhost" or ipaddress.ip_address(url.host).is_loopback
    except ValueError:
        return False


def _failed(exc: httpx.HTTPError, request: httpx.Request) -> ClientError:
    """The client's error for a request that got no answer it could read."""
    where = f"{request.method} {request.url.copy_with(query=None)}"
    if isinstance(exc, httpx.DecodingError):
        return BadResponse(f"{where}: the answer could not be decoded: {exc}")
    return ConnectionFailed(f"{where}: {wire.describe(exc)}")


# -- event streams -------------------------------------------------------------------------


class _Cursor(Protocol[_T_co]):
    """What a stream's frames mean (`client_wire.EventCursor`, `ChangeCursor`)."""

    @property
    def path(self) -> str: ...
    @property
    def closed(self) -> ApiError | None: ...
    def opening(self) -> dict[str, str]: ...
    def feed(self, frame: wire.Frame) -> _T_co | Step: ...


class _Stream(Generic[_T]):
    """A Server-Sent Events stream read through `cursor`, connected (and `hello` read)
    before the constructor returns, and connected again as `reconnects` allows when its
    connection breaks."""

    def __init__(
        self, client: GuiAgentClient, cursor: _Cursor[_T], reconnects: wire.Reconnects
    ) -> None:
        self._client, self._cursor, self._reconnects = client, cursor, reconnects
        self._parser = wire.FrameParser()
        self._response: httpx.Response | None = None
        self._lines: Iterator[str] | None = None
        self._done = False
        try:
            if self._step() is not Step.HELLO:
                raise BadResponse(f"{cursor.path} did not begin with hello")
        except BaseException:
            self.close()
            raise

    @property
    def closed(self) -> ApiError | None:
        """Why the server ended the stream, when it said (`Unauthorized`: access ended)."""
        return self._cursor.closed

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> _T:
        try:
            while not self._done:
                step = self._step()
                if not isinstance(step, Step):
                    return step
        except BaseException:  # an error, or the caller stopped (Ctrl-C, Streamlit's rerun)
            self.close()
            raise
        raise StopIteration

    def close(self) -> None:
        self._done = True
        self._disconnect()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _step(self) -> _T | Step:
        """What the next frame means; connects (again) first when needed."""
        while True:
            if self._lines is None:
                self._connect()
            assert self._lines is not None
            try:
                line = next(self._lines)
            except StopIteration:  # the server ended the stream
                self.close()
                return Step.END
            except httpx.TransportError as exc:  # the connection broke, or went silent
                self._disconnect()
                self._reconnects.failed(exc, f"the stream {self._cursor.path}")
                continue
            frame = self._parser.feed(line)
            if frame is None:
                continue
            if frame.retry_ms is not None:
                self._reconnects.retry_s = frame.retry_ms / 1000
            step = self._cursor.feed(frame)
            if step is Step.RECONNECT:
                self._disconnect()
                continue
            if step is Step.END:
                self.close()
            elif step is Step.HELLO:
                self._reconnects.hello()
            return step

    def _connect(self) -> None:
        http = self._client._http
        while self._lines is None:
            if delay := self._reconnects.delay():
                time.sleep(delay)
            request = http.build_request(
                "GET",
                self._cursor.path,
                headers=self._cursor.opening(),
                timeout=self._client._stream_timeout,
            )
            try:
                response = http.send(request, stream=True)
            except httpx.TransportError as exc:
                self._reconnects.failed(exc, f"opening {self._cursor.path}")
                continue
            if not response.is_success:
                response.read()
                response.close()
                raise wire.error_from(response)
            self._response, self._lines = response, response.iter_lines()

    def _disconnect(self) -> None:
        self._parser.reset()
        self._lines = None
        if self._response is not None:
            self._response.close()
            self._response = None


class EventStream(_Stream[Event]):
    """A session's events, typed, in order; resumed after a broken connection."""

    _cursor: EventCursor

    @property
    def hello(self) -> StreamHello | None:
        """What the last `hello` said: the session's state, open approvals, the replies
        being written (with their text so far) and `last_seq`, the seq it was at."""
        return self._cursor.hello

    @property
    def last_event_id(self) -> str | None:
        """The id of the last event handed out (`<epoch>-<seq>`): `since` to go on later."""
        return self._cursor.last_event_id


class ChangeStream(_Stream[ChatChange]):
    """The caller's chats list as it changes (`GuiAgentClient.changes`)."""
