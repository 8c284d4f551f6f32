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
httpx error. `AsyncGuiAgentClient` (`async_client`) is the same client for asyncio: the
same methods as coroutines, `events()` as an async iterator.

An event stream remembers the id of the last event it handed out. When its connection
breaks (or the server says it `fell_behind`), it connects again with `Last-Event-ID` and
goes on with the next event: nothing lost, nothing twice. It tries at once the first time,
then after the server's `retry:` interval; `max_reconnects` failures in a row end it with
`ConnectionFailed`. When the server no longer holds what was missed (it restarted, or too
much happened meanwhile) it raises `ResyncRequired`: load the session again. The stream
ends (StopIteration) when the server ends it: `event: closed` (the caller's access ended,
or the session was deleted; `events.closed` says why), the server shutting down.

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

Importing it is light (httpx, pydantic and `schema`, no FastAPI, store or interpreter): the
`backends.api` and `gui_agent` packages load their server and core names only on first use.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Generic, Self, TypeVar

import httpx

from backends.api import client_calls as calls
from backends.api import client_wire as wire
from backends.api.async_client import AsyncChangeStream, AsyncEventStream, AsyncGuiAgentClient
from backends.api.client_http import (
    DEFAULT_TIMEOUT_S,
    MAX_RECONNECTS,
    STREAM_READ_TIMEOUT_S,
    checked_base_url,
    http_settings,
    stream_request,
    stream_timeout,
)
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
    StreamCursor,
    StreamHello,
    Unauthorized,
)
from backends.api.responses import (
    AgentsAnswer,
    ApprovalAnswer,
    HealthAnswer,
    ImportAnswer,
    LoginAnswer,
    MemoryAnswer,
    MessageAccepted,
    ModelsAnswer,
    ReplayAnswer,
    SessionDetail,
    SessionList,
    ToolInfo,
    TurnStarted,
)
from gui_agent.changes import ChatChange
from schema import AgentName, ApprovalDecision, Event, ImagePart, PermissionMode, SessionRecord

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_RECONNECTS",
    "STREAM_READ_TIMEOUT_S",
    "ApiError",
    "AsyncChangeStream",
    "AsyncEventStream",
    "AsyncGuiAgentClient",
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

_R = TypeVar("_R")
_T = TypeVar("_T")


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
        self.base_url = checked_base_url(base_url)
        self.token = token
        """The bearer token sent with each request; `login` sets it."""
        self.max_reconnects = max_reconnects
        self._stream_timeout = stream_timeout(timeout)
        self._http = httpx.Client(**http_settings(self.base_url, self, timeout))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- who, and what is on offer ---------------------------------------------------------

    def health(self) -> HealthAnswer:
        """Needs no token; `auth` says how to log in ("password", "proxy" or "none")."""
        return self._call(calls.health())

    def login(self, username: str | None = None, password: str | None = None) -> LoginAnswer:
        """Log in and keep the token for the next requests. A server without a users file
        (`health().auth == "none"`) wants no name or password (sent anyway, they are not
        checked, and the answer's `notice` says so)."""
        answer = self._call(calls.login(username, password))
        self.token = answer.token
        return answer

    def logout(self) -> None:
        """Sign the token out on the server (refused from now on, by every client that
        holds it) and forget it. Without a token, nothing is sent."""
        if self.token is not None:
            self._call(calls.logout())
            self.token = None

    def models(self) -> ModelsAnswer:
        return self._call(calls.models())

    def agents(self) -> AgentsAnswer:
        return self._call(calls.agents())

    # -- sessions ----------------------------------------------------------------------------

    def list_sessions(
        self, *, query: str | None = None, limit: int | None = None, offset: int = 0
    ) -> SessionList:
        """The caller's sessions, most recently used first; `query` searches them."""
        return self._call(calls.list_sessions(query, limit, offset))

    def create_session(
        self,
        *,
        agent: AgentName | str | None = None,
        model: str | None = None,
        settings: Mapping[str, Any] | None = None,
        title: str | None = None,
    ) -> SessionRecord:
        """`settings` holds only the fields to change from the defaults. `agent` (here, in
        `update_session` and `send_message`) is a role or its word: "planner", any case."""
        return self._call(calls.create_session(agent, model, settings, title))

    def get_session(self, session_id: str, *, limit: int | None = None) -> SessionDetail:
        """The session, its last `limit` messages (all by default), what it is doing, and
        where its events are at (`last_seq`, `epoch`: where `events` can resume)."""
        return self._call(calls.get_session(session_id, limit))

    def memory(self, session_id: str) -> MemoryAnswer:
        """What the next model call would be sent of the history: the memory window's
        message ids (oldest first), its tokens, and AutoChat's goal."""
        return self._call(calls.memory(session_id))

    def tools(self, session_id: str) -> list[ToolInfo]:
        """The chat's tools, and what a call of each does now (`mode`), the mode set for
        the chat (`chosen`) and whether it was allowed for the session."""
        return self._call(calls.tools(session_id))

    def set_tool_mode(
        self, session_id: str, tool: str, mode: PermissionMode | str | None
    ) -> ToolInfo:
        """What a call of `tool` does in this chat: "ask", "allow", "deny", or None for what
        the app decides. Kept with the chat's settings."""
        return self._call(calls.set_tool_mode(session_id, tool, mode))

    def forget_allowed_tools(self, session_id: str, *, tool: str | None = None) -> list[str]:
        """Ask again before `tool` runs (every tool allowed for this session when None);
        the tools still allowed without asking."""
        return self._call(calls.forget_allowed_tools(session_id, tool))

    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        settings: Mapping[str, Any] | None = None,
        autochat: Mapping[str, Any] | None = None,
        agent: AgentName | str | None = None,
        model: str | None = None,
    ) -> SessionRecord:
        """Change only what is given; `settings` and `autochat` field by field."""
        return self._call(
            calls.update_session(
                session_id,
                title=title,
                settings=settings,
                autochat=autochat,
                agent=agent,
                model=model,
            )
        )

    def delete_session(self, session_id: str) -> None:
        """The session, its history and its working folder, for good."""
        self._call(calls.delete_session(session_id))

    def export_session(self, session_id: str, *, allow_unimportable: bool = False) -> bytes:
        """The export document (JSON), as the file to save. A session too large to import
        back is `ApiError` 413 unless `allow_unimportable`."""
        return self._call(calls.export_session(session_id, allow_unimportable))

    def import_session(self, document: bytes | str | Mapping[str, Any]) -> ImportAnswer:
        """A new session from an export document (what it did not carry over: `reset`)."""
        return self._call(calls.import_session(document))

    def replay_export(self, document: bytes | str | Mapping[str, Any]) -> ReplayAnswer:
        """An export document's events in order, to show the chat step by step (nothing is
        saved); refused as an import would refuse the document."""
        return self._call(calls.replay_export(document))

    # -- a conversation ----------------------------------------------------------------------

    def send_message(
        self,
        session_id: str,
        text: str,
        *,
        images: Sequence[ImagePart] = (),
        agent: AgentName | str | None = None,
    ) -> MessageAccepted:
        """Starts a turn, or waits behind the running one (`queued`)."""
        return self._call(calls.send_message(session_id, text, images, agent))

    def stop(self, session_id: str) -> bool:
        """Stop the running turn, keeping its reply; False when nothing was running."""
        return self._call(calls.stop(session_id))

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
        return self._call(calls.answer_approval(session_id, approval_id, decision, note))

    def retry(self, session_id: str, *, message_id: str | None = None) -> TurnStarted:
        """Answer the last message again (`Conflict` while a turn runs). `message_id`: the
        person's last message as the caller shows it (as for `edit_last`)."""
        return self._call(calls.control(session_id, "retry", message_id=message_id))

    def edit_last(
        self,
        session_id: str,
        text: str,
        *,
        images: Sequence[ImagePart] = (),
        message_id: str | None = None,
    ) -> TurnStarted:
        """Replace the person's last message with this one, and answer it again.
        `message_id`: the message being edited; when another of the person's was sent since
        (another tab), `Conflict`, and nothing changes."""
        return self._call(calls.control(session_id, "edit_last", text, images, message_id))

    def clear(self, session_id: str) -> None:
        """Empty the conversation (`Conflict` while a turn runs)."""
        self._call(calls.clear(session_id))

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

    def _call(self, call: calls.Call[_R]) -> _R:
        """What the success answer to `call` says; the client's error for anything else."""
        request = call.request(self._http)
        try:
            response = self._http.send(request)
        except httpx.HTTPError as exc:
            raise wire.request_failed(exc, request) from exc
        if not response.is_success:
            raise wire.error_from(response)
        return call.read(response.content)


# -- event streams -------------------------------------------------------------------------


class _Stream(Generic[_T]):
    """A Server-Sent Events stream read through `cursor`, connected (and `hello` read)
    before the constructor returns, and connected again as `reconnects` allows when its
    connection breaks."""

    def __init__(
        self, client: GuiAgentClient, cursor: StreamCursor[_T], reconnects: wire.Reconnects
    ) -> None:
        self._client, self._cursor = client, cursor
        self._reading = wire.StreamReading(cursor, reconnects)
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
        """Why the server ended the stream, when it said (`Unauthorized`: access ended;
        `NotFound`: the chat was deleted)."""
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
                self._reading.broke(exc)
                continue
            step = self._reading.line(line)
            if step is None:
                continue
            if step is Step.RECONNECT:
                self._disconnect()
                continue
            if step is Step.END:
                self.close()
            return step

    def _connect(self) -> None:
        http = self._client._http
        while self._lines is None:
            if delay := self._reading.reconnects.delay():
                time.sleep(delay)
            request = stream_request(http, self._reading, self._client._stream_timeout)
            try:
                response = http.send(request, stream=True)
            except httpx.TransportError as exc:
                self._reading.refused(exc)
                continue
            if not response.is_success:
                response.read()
                response.close()
                raise wire.error_from(response)
            self._response, self._lines = response, response.iter_lines()

    def _disconnect(self) -> None:
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
