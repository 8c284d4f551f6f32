"""`AsyncGuiAgentClient`: the typed API client (`client.GuiAgentClient`) for asyncio
programs (a bot, an async web framework, a notebook's running loop).

    async with AsyncGuiAgentClient("http://127.0.0.1:7860") as client:
        await client.login()
        chat = await client.create_session(title="Plans")
        async with client.events(chat.id) as events:   # connected here: nothing is missed
            await client.send_message(chat.id, "Hello!")
            async for event in events:                 # typed `schema` events
                ...

The same methods as `GuiAgentClient`, as coroutines, built from the same calls
(`client_calls`), httpx settings (`client_http`) and stream reading (`client_wire`), so the
two behave alike: the same answers, the same errors, nothing retried but an event stream,
the token to `base_url`'s origin only, no redirects followed, no cookies kept, every id one
path segment.

`events()` and `changes()` return a stream that connects (and reads the server's `hello`)
on `async with`, on `await stream` or `await stream.open()`, or else on the first
`async for` step. A session's stream connects again by itself after a broken connection
and goes on after the last event it handed out (nothing lost, nothing twice), raises
`ResyncRequired` when the server no longer holds what was missed, and ends (the `async for`
ends) when the server ends it (`closed` says why when the caller's access ended or the
session was deleted). Leaving the `async with` block, an error, or the task being
cancelled closes the connection; the cancellation goes on up.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Mapping, Sequence
from typing import Any, Generic, Self, TypeVar

import httpx

from backends.api import client_calls as calls
from backends.api import client_wire as wire
from backends.api.client_http import (
    DEFAULT_TIMEOUT_S,
    MAX_RECONNECTS,
    checked_base_url,
    http_settings,
    stream_request,
    stream_timeout,
)
from backends.api.client_wire import (
    ApiError,
    BadResponse,
    EventCursor,
    Step,
    StreamCursor,
    StreamHello,
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

__all__ = ["AsyncChangeStream", "AsyncEventStream", "AsyncGuiAgentClient"]

_R = TypeVar("_R")
_T = TypeVar("_T")


class AsyncGuiAgentClient:
    """The API of the GuiAgent server at `base_url`, for asyncio (see `GuiAgentClient`
    for what each method does). Use it with `async with`, or `await client.aclose()`."""

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
        self._http = httpx.AsyncClient(**http_settings(self.base_url, self, timeout))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- who, and what is on offer ---------------------------------------------------------

    async def health(self) -> HealthAnswer:
        """Needs no token; `auth` says how to log in ("password", "proxy" or "none")."""
        return await self._call(calls.health())

    async def login(self, username: str | None = None, password: str | None = None) -> LoginAnswer:
        """Log in and keep the token for the next requests."""
        answer = await self._call(calls.login(username, password))
        self.token = answer.token
        return answer

    async def logout(self) -> None:
        """Sign the token out on the server (refused from now on, by every client that
        holds it) and forget it. Without a token, nothing is sent."""
        if self.token is not None:
            await self._call(calls.logout())
            self.token = None

    async def models(self) -> ModelsAnswer:
        return await self._call(calls.models())

    async def agents(self) -> AgentsAnswer:
        return await self._call(calls.agents())

    # -- sessions ----------------------------------------------------------------------------

    async def list_sessions(
        self, *, query: str | None = None, limit: int | None = None, offset: int = 0
    ) -> SessionList:
        return await self._call(calls.list_sessions(query, limit, offset))

    async def create_session(
        self,
        *,
        agent: AgentName | str | None = None,
        model: str | None = None,
        settings: Mapping[str, Any] | None = None,
        title: str | None = None,
    ) -> SessionRecord:
        return await self._call(calls.create_session(agent, model, settings, title))

    async def get_session(self, session_id: str, *, limit: int | None = None) -> SessionDetail:
        return await self._call(calls.get_session(session_id, limit))

    async def memory(self, session_id: str) -> MemoryAnswer:
        return await self._call(calls.memory(session_id))

    async def tools(self, session_id: str) -> list[ToolInfo]:
        return await self._call(calls.tools(session_id))

    async def set_tool_mode(
        self, session_id: str, tool: str, mode: PermissionMode | str | None
    ) -> ToolInfo:
        return await self._call(calls.set_tool_mode(session_id, tool, mode))

    async def forget_allowed_tools(self, session_id: str, *, tool: str | None = None) -> list[str]:
        return await self._call(calls.forget_allowed_tools(session_id, tool))

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        settings: Mapping[str, Any] | None = None,
        autochat: Mapping[str, Any] | None = None,
        agent: AgentName | str | None = None,
        model: str | None = None,
    ) -> SessionRecord:
        return await self._call(
            calls.update_session(
                session_id,
                title=title,
                settings=settings,
                autochat=autochat,
                agent=agent,
                model=model,
            )
        )

    async def delete_session(self, session_id: str) -> None:
        await self._call(calls.delete_session(session_id))

    async def export_session(self, session_id: str, *, allow_unimportable: bool = False) -> bytes:
        return await self._call(calls.export_session(session_id, allow_unimportable))

    async def import_session(self, document: bytes | str | Mapping[str, Any]) -> ImportAnswer:
        return await self._call(calls.import_session(document))

    async def replay_export(self, document: bytes | str | Mapping[str, Any]) -> ReplayAnswer:
        return await self._call(calls.replay_export(document))

    # -- a conversation ----------------------------------------------------------------------

    async def send_message(
        self,
        session_id: str,
        text: str,
        *,
        images: Sequence[ImagePart] = (),
        agent: AgentName | str | None = None,
    ) -> MessageAccepted:
        return await self._call(calls.send_message(session_id, text, images, agent))

    async def stop(self, session_id: str) -> bool:
        return await self._call(calls.stop(session_id))

    async def answer_approval(
        self,
        session_id: str,
        approval_id: str,
        decision: ApprovalDecision | str,
        *,
        note: str | None = None,
    ) -> ApprovalAnswer:
        return await self._call(calls.answer_approval(session_id, approval_id, decision, note))

    async def retry(self, session_id: str, *, message_id: str | None = None) -> TurnStarted:
        return await self._call(calls.control(session_id, "retry", message_id=message_id))

    async def edit_last(
        self,
        session_id: str,
        text: str,
        *,
        images: Sequence[ImagePart] = (),
        message_id: str | None = None,
    ) -> TurnStarted:
        return await self._call(calls.control(session_id, "edit_last", text, images, message_id))

    async def clear(self, session_id: str) -> None:
        await self._call(calls.clear(session_id))

    def events(
        self, session_id: str, *, since: int | str | None = None, epoch: str | None = None
    ) -> AsyncEventStream:
        """The session's events (see the module's docstring for when it connects):
        `since` and `epoch` as for `GuiAgentClient.events`."""
        cursor = EventCursor.starting(session_id, since, epoch)
        return AsyncEventStream(self, cursor, wire.Reconnects(self.max_reconnects))

    def changes(self) -> AsyncChangeStream:
        """The caller's chats created, imported, renamed or deleted, from anywhere; not
        resumable (see `GuiAgentClient.changes`)."""
        return AsyncChangeStream(self, wire.ChangeCursor(), wire.Reconnects(0))

    # -- the wire ----------------------------------------------------------------------------

    async def _call(self, call: calls.Call[_R]) -> _R:
        """What the success answer to `call` says; the client's error for anything else."""
        request = call.request(self._http)
        try:
            response = await self._http.send(request)
        except httpx.HTTPError as exc:
            raise wire.request_failed(exc, request) from exc
        if not response.is_success:
            raise wire.error_from(response)
        return call.read(response.content)


# -- event streams -------------------------------------------------------------------------


class _AsyncStream(Generic[_T]):
    """A Server-Sent Events stream read through `cursor`, connected (and `hello` read) by
    `open()`, and connected again as `reconnects` allows when its connection breaks."""

    def __init__(
        self, client: AsyncGuiAgentClient, cursor: StreamCursor[_T], reconnects: wire.Reconnects
    ) -> None:
        self._client, self._cursor = client, cursor
        self._reading = wire.StreamReading(cursor, reconnects)
        self._response: httpx.Response | None = None
        self._lines: AsyncIterator[str] | None = None
        self._opened = False
        self._done = False

    @property
    def closed(self) -> ApiError | None:
        """Why the server ended the stream, when it said (`Unauthorized`: access ended;
        `NotFound`: the chat was deleted)."""
        return self._cursor.closed

    async def open(self) -> Self:
        """Connect and read the server's `hello` (once; later calls return at once)."""
        if self._opened or self._done:
            return self
        self._opened = True
        try:
            if await self._step() is not Step.HELLO:
                raise BadResponse(f"{self._cursor.path} did not begin with hello")
        except BaseException:
            await self.aclose()
            raise
        return self

    def __await__(self) -> Generator[Any, None, Self]:
        return self.open().__await__()

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> _T:
        await self.open()
        try:
            while not self._done:
                step = await self._step()
                if not isinstance(step, Step):
                    return step
        except BaseException:  # an error, or the task was cancelled
            await self.aclose()
            raise
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self._done = True
        await self._disconnect()

    async def _step(self) -> _T | Step:
        """What the next frame means; connects (again) first when needed."""
        while True:
            if self._lines is None:
                await self._connect()
            assert self._lines is not None
            try:
                line = await anext(self._lines)
            except StopAsyncIteration:  # the server ended the stream
                await self.aclose()
                return Step.END
            except httpx.TransportError as exc:  # the connection broke, or went silent
                await self._disconnect()
                self._reading.broke(exc)
                continue
            step = self._reading.line(line)
            if step is None:
                continue
            if step is Step.RECONNECT:
                await self._disconnect()
                continue
            if step is Step.END:
                await self.aclose()
            return step

    async def _connect(self) -> None:
        http = self._client._http
        while self._lines is None:
            if delay := self._reading.reconnects.delay():
                await asyncio.sleep(delay)
            request = stream_request(http, self._reading, self._client._stream_timeout)
            try:
                response = await http.send(request, stream=True)
            except httpx.TransportError as exc:
                self._reading.refused(exc)
                continue
            if not response.is_success:
                await response.aread()
                await response.aclose()
                raise wire.error_from(response)
            self._response, self._lines = response, response.aiter_lines()

    async def _disconnect(self) -> None:
        lines, self._lines = self._lines, None
        response, self._response = self._response, None
        if isinstance(lines, AsyncGenerator):
            await lines.aclose()
        if response is not None:
            await response.aclose()


class AsyncEventStream(_AsyncStream[Event]):
    """A session's events, typed, in order; resumed after a broken connection."""

    _cursor: EventCursor

    @property
    def hello(self) -> StreamHello | None:
        """What the last `hello` said (see `EventStream.hello`)."""
        return self._cursor.hello

    @property
    def last_event_id(self) -> str | None:
        """The id of the last event handed out (`<epoch>-<seq>`): `since` to go on later."""
        return self._cursor.last_event_id


class AsyncChangeStream(_AsyncStream[ChatChange]):
    """The caller's chats list as it changes (`AsyncGuiAgentClient.changes`)."""
