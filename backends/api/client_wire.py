"""What `backends.api.client` reads and writes, without I/O: request bodies and paths, the
API's errors as exceptions, and Server-Sent Events as frames, then as typed events, with the
resume state of a session's event stream (`StreamReading`: what each line of a stream
means across its connections). Plain functions and small objects, tested without a socket;
the clients (`GuiAgentClient`, `AsyncGuiAgentClient`) only move bytes. The errors they
raise:

    ClientError               anything the client raises on purpose
    ├── ApiError              the server answered with an error: status, code, message
    │   ├── Unauthorized      401: no token, a bad or expired one, a wrong password
    │   ├── NotFound          404: no such session (someone else's reads the same), approval
    │   ├── Conflict          409: fine, but not now (a turn runs; answered already)
    │   └── RateLimited       429: too many failed logins; `retry_after` seconds
    ├── ConnectionFailed      the server could not be reached, or the connection broke
    ├── BadResponse           an answer the API does not send (not JSON, another shape)
    └── ResyncRequired        an event stream cannot go on without a gap: reload the session
"""

from __future__ import annotations

import enum
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, get_args
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from connectors.resilience import parse_retry_after
from gui_agent.changes import ChatChange, ChatChangeKind
from gui_agent.log_text import loggable
from schema import (
    EVENT_ADAPTER,
    PROTOCOL_VERSION,
    ApprovalRequested,
    Event,
    InterpreterState,
    StreamingReply,
    ToolCallOutput,
)

logger = logging.getLogger(__name__)

_M = TypeVar("_M", bound=BaseModel)
_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)

NOT_THE_API = "unexpected_response"
"""`ApiError.code` of an error answer that is not in the API's shape (a proxy's page)."""
EVENT_TYPES = frozenset(
    member.model_fields["type"].default for member in get_args(get_args(Event)[0])
)


# -- errors ------------------------------------------------------------------------------


class ClientError(Exception):
    """Base of every error `GuiAgentClient` (and `AsyncGuiAgentClient`) raises on purpose."""


class ApiError(ClientError):
    """The server answered `status` with `{"error": {"code", "message"}}` (or, for an
    answer that is not the API's, `code` is `NOT_THE_API`)."""

    def __init__(
        self, status: int, code: str, message: str, *, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{message} (HTTP {status} {code})")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
        """Seconds the server asked to wait before trying again (`Retry-After`), if any."""


class Unauthorized(ApiError):
    """401: log in (again)."""


class NotFound(ApiError):
    """404: no such session, approval or endpoint for this user."""


class Conflict(ApiError):
    """409: the request clashes with what the session is doing now; it may work later."""


class RateLimited(ApiError):
    """429: too many failed logins; `retry_after` says for how long."""


class ConnectionFailed(ClientError):
    """The server could not be reached, did not answer in time, or the connection broke."""


class BadResponse(ClientError):
    """The server sent something the API never sends: check `base_url` and the versions."""


class ResyncRequired(ClientError):
    """The event stream cannot go on without a gap (the server restarted, or no longer holds
    the events after the last one seen): load the session again (`get_session`), then open
    its events `since` that detail's `last_seq` and `epoch`. `hello` is what the server
    said, None for the chats-list stream (read the list again)."""

    def __init__(self, message: str, hello: StreamHello | None = None) -> None:
        super().__init__(message)
        self.hello = hello


_ERROR_CLASSES: dict[int, type[ApiError]] = {
    401: Unauthorized,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
}
_STATUS_OF_CODE = {"unauthorized": 401, "login_unavailable": 503, "not_found": 404}
"""The status a `closed` event's code stands for: the one a new request would get."""


def api_error(status: int, code: str, message: str, retry_after: float | None = None) -> ApiError:
    return _ERROR_CLASSES.get(status, ApiError)(status, code, message, retry_after=retry_after)


def error_from(response: httpx.Response) -> ApiError:
    """The error an answer that is not a success stands for. Its body must have been read."""
    status = response.status_code
    retry_after = parse_retry_after(response.headers)
    try:
        error = json.loads(response.content)["error"]
        code, message = error["code"], error["message"]
    except (ValueError, KeyError, TypeError):
        code = message = None
    if isinstance(code, str) and isinstance(message, str):
        return api_error(status, code, message, retry_after)
    if response.is_redirect:
        where = response.headers.get("location", "?")
        text = f"redirected to {where}; the client follows no redirects: check base_url"
    else:
        kind = response.headers.get("content-type", "no content type")
        text = f"{response.reason_phrase or 'error'} ({kind}): {response.text[:200]!r}"
    return api_error(status, NOT_THE_API, text, retry_after)


def request_failed(exc: httpx.HTTPError, request: httpx.Request) -> ClientError:
    """The client's error for a request that got no answer it could read."""
    where = f"{request.method} {request.url.copy_with(query=None)}"
    if isinstance(exc, httpx.DecodingError):
        return BadResponse(f"{where}: the answer could not be decoded: {exc}")
    return ConnectionFailed(f"{where}: {describe(exc)}")


# -- requests and answers ----------------------------------------------------------------


def segment(value: str) -> str:
    """`value` as exactly one path segment: `/`, `?`, `#` and dots cannot move the request
    to another endpoint (`..` would be taken as "up one level" by URL normalisation)."""
    return quote(value, safe="").replace(".", "%2E")


def session_path(session_id: str, *rest: str) -> str:
    """A session's endpoint, relative to the base URL (so a path prefix there is kept)."""
    return "/".join(("api/sessions", segment(session_id), *rest))


def json_body(**fields: Any) -> bytes:
    """A JSON object of the fields that are not None (pydantic models as their JSON)."""

    def plain(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", exclude_none=True)
        if isinstance(value, tuple | list):
            return [plain(item) for item in value]
        return value

    return json.dumps({k: plain(v) for k, v in fields.items() if v is not None}).encode()


def parse(model: type[_M], data: bytes | str) -> _M:
    """A success answer (or an event's data) as `model`; BadResponse when it is not one."""
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        raise BadResponse(f"the server's answer is not a {model.__name__}: {exc}") from None


# -- Server-Sent Events ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    """One dispatched SSE event: its name, its data lines joined, its own id (None when it
    carried none) and the `retry:` it set, in milliseconds."""

    event: str
    data: str
    id: str | None = None
    retry_ms: int | None = None


@dataclass(slots=True)
class FrameParser:
    """`text/event-stream` lines (without their line ending) in, frames out."""

    _event: str = ""
    _data: list[str] = field(default_factory=list)
    _id: str | None = None
    _retry: int | None = None

    def feed(self, line: str) -> Frame | None:
        if not line:
            frame = None
            if self._data:
                data = "\n".join(self._data)
                frame = Frame(self._event or "message", data, self._id, self._retry)
            self.reset()
            return frame
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def reset(self) -> None:
        """Forget a frame half read (the connection broke in the middle of it)."""
        self._event, self._data, self._id, self._retry = "", [], None, None


class Step(enum.Enum):
    """What a frame means for the stream, other than an item to hand out."""

    SKIP = "skip"
    HELLO = "hello"
    END = "end"
    RECONNECT = "reconnect"


class StreamHello(BaseModel):
    """The `hello` that opens a session's event stream (see `backends.api.sse`)."""

    model_config = ConfigDict(frozen=True)

    protocol_version: str
    session_id: str
    epoch: str
    state: InterpreterState
    busy: bool
    autochat_active: bool = False
    """As in `SessionDetail.autochat_active` (AutoChat between two turns: STOP, yet going)."""
    last_seq: int
    replayed: int
    resync: bool
    pending_approvals: list[ApprovalRequested]
    streaming: list[StreamingReply]
    """The replies being written, as in `SessionDetail.streaming` (`retrying` included)."""
    running_calls: list[ToolCallOutput] = []
    """The tool calls running, as in `SessionDetail.running_calls` (what each printed)."""


def _load(frame: Frame) -> dict[str, Any]:
    try:
        data = json.loads(frame.data)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise BadResponse(f"the data of {frame.event!r} is not a JSON object: {frame.data!r}")
    return data


def _closed(frame: Frame) -> ApiError:
    """The error a `closed` event (its data in the API's error shape) stands for."""
    error = _load(frame).get("error")
    error = error if isinstance(error, dict) else {}
    code = str(error.get("code", "unauthorized"))
    message = str(error.get("message", "the server ended the stream"))
    return api_error(_STATUS_OF_CODE.get(code, 401), code, message)


@dataclass(slots=True)
class EventCursor:
    """Where a client is in one session's event stream, and what each frame means: typed
    events out, the last event id kept for `Last-Event-ID` when the stream is opened again.

    `since` is a seq (with `epoch`, the run of numbers it belongs to, when known) or a whole
    event id (`<epoch>-<seq>`); None means live events only."""

    session_id: str
    last_event_id: str | None = None
    hello: StreamHello | None = None
    closed: ApiError | None = None
    """Why the server ended the stream (`event: closed`): `Unauthorized` when the caller's
    access ended, `NotFound` when the chat was deleted."""
    _greeted: bool = False

    @classmethod
    def starting(cls, session_id: str, since: int | str | None, epoch: str | None) -> EventCursor:
        resume = None if since is None else str(since)
        if resume is not None and epoch is not None and "-" not in resume:
            resume = f"{epoch}-{resume}"
        return cls(session_id, resume)

    @property
    def path(self) -> str:
        return session_path(self.session_id, "events")

    def opening(self) -> dict[str, str]:
        """The headers that open the stream (again); the answer must begin with hello."""
        self._greeted = False
        headers = {"Accept": "text/event-stream"}
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = self.last_event_id
        return headers

    @property
    def last_seq(self) -> int | None:
        if self.last_event_id is None:
            return None
        return int(self.last_event_id.rpartition("-")[2])

    def feed(self, frame: Frame) -> Event | Step:
        if frame.event == "hello":
            return self._hello(frame.data)
        if not self._greeted:
            raise BadResponse(f"the event stream began with {frame.event!r}, not hello")
        if frame.event == "closed":
            self.closed = _closed(frame)
            return Step.END
        if frame.event == "fell_behind":
            return Step.RECONNECT  # resumes after the last event taken, as the server says
        if frame.id is None:
            logger.debug("session %s: skipping %r without an id", self.session_id, frame.event)
            return Step.SKIP
        seq = frame.id.rpartition("-")[2]
        last = self.last_seq
        if not seq.isdigit() or (last is not None and int(seq) <= last):
            return Step.SKIP  # (a repeat: never handed out twice)
        self.last_event_id = frame.id
        if frame.event not in EVENT_TYPES:  # `unencodable`, or a type newer than ours
            logger.warning(
                "session %s: event %s (%s) skipped: %s",
                loggable(self.session_id),
                loggable(frame.id),
                loggable(frame.event),
                loggable(frame.data[:200]),
            )
            return Step.SKIP
        try:
            return EVENT_ADAPTER.validate_json(frame.data)
        except ValidationError as exc:
            theirs = self.hello.protocol_version if self.hello else "?"
            raise BadResponse(
                f"event {frame.id} ({frame.event}) does not fit this client's schema "
                f"(protocol {PROTOCOL_VERSION}, the server's {theirs}): {exc}"
            ) from None

    def _hello(self, data: str) -> Step:
        hello = parse(StreamHello, data)
        if hello.resync:
            raise ResyncRequired(
                f"session {self.session_id}: the server no longer holds every event after "
                f"{self.last_event_id}; load the session again",
                hello,
            )
        self.hello, self._greeted = hello, True
        if self.last_event_id is None or "-" not in self.last_event_id:
            # From here on, ids carry the epoch: a restart meanwhile is then told apart.
            seq = self.last_event_id or str(hello.last_seq)
            self.last_event_id = f"{hello.epoch}-{seq}"
        return Step.HELLO


@dataclass(slots=True)
class ChangeCursor:
    """What each frame of `GET /api/sessions/changes` means: `ChatChange`s out. Changes
    are not numbered, so the stream is not resumed: a drop is a `ConnectionFailed`."""

    user: str | None = None
    closed: ApiError | None = None
    path: str = "api/sessions/changes"

    def opening(self) -> dict[str, str]:
        return {"Accept": "text/event-stream"}

    def feed(self, frame: Frame) -> ChatChange | Step:
        data = _load(frame)
        if frame.event == "hello":
            self.user = str(data.get("user", ""))
            return Step.HELLO
        if frame.event == "closed":
            self.closed = _closed(frame)
            return Step.END
        if frame.event == "fell_behind":
            raise ResyncRequired("the chats-list stream fell behind; read the list again")
        try:
            kind = ChatChangeKind(frame.event)
        except ValueError:
            return Step.SKIP
        title = str(data.get("title", ""))
        return ChatChange(kind, self.user or "", str(data.get("session_id", "")), title)


@dataclass(slots=True)
class Reconnects:
    """When a stream is opened again after its connection broke: at once the first time,
    then after the server's `retry:` interval; after `limit` failures in a row (no `hello`
    in between), or a first connection that fails, `ConnectionFailed`."""

    limit: int
    retry_s: float = 2.0
    failures: int = 0
    greeted: bool = False

    def failed(self, exc: Exception, what: str) -> None:
        self.failures += 1
        if not self.greeted or self.failures > self.limit:
            tries = f" ({self.failures} tries)" if self.greeted else ""
            raise ConnectionFailed(f"{what} failed{tries}: {describe(exc)}") from exc
        logger.info("%s broke (%s); opening it again", what, loggable(describe(exc)))

    def delay(self) -> float:
        return self.retry_s if self.failures > 1 else 0.0

    def hello(self) -> None:
        self.failures, self.greeted = 0, True


def describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class StreamCursor(Protocol[_T_co]):
    """What a stream's frames mean (`EventCursor`, `ChangeCursor`)."""

    @property
    def path(self) -> str: ...
    @property
    def closed(self) -> ApiError | None: ...
    def opening(self) -> dict[str, str]: ...
    def feed(self, frame: Frame) -> _T_co | Step: ...


@dataclass(slots=True)
class StreamReading(Generic[_T]):
    """What the lines of one Server-Sent Events stream mean, across all the connections
    it takes: frames parsed, handed to `cursor`, the server's `retry:` and each `hello`
    told to `reconnects`. The clients' streams feed it lines and act on its answers: an
    item to hand out, or a `Step` (RECONNECT: open it again; END: the server ended it)."""

    cursor: StreamCursor[_T]
    reconnects: Reconnects
    parser: FrameParser = field(default_factory=FrameParser)

    def opening(self) -> dict[str, str]:
        """The headers of a new connection (`Last-Event-ID` when there is one)."""
        self.parser.reset()
        return self.cursor.opening()

    def line(self, line: str) -> _T | Step | None:
        """What `line` means; None while a frame is still being read."""
        frame = self.parser.feed(line)
        if frame is None:
            return None
        if frame.retry_ms is not None:
            self.reconnects.retry_s = frame.retry_ms / 1000
        step = self.cursor.feed(frame)
        if step is Step.HELLO:
            self.reconnects.hello()
        return step

    def broke(self, exc: Exception) -> None:
        """The connection broke, or went silent: forget the frame half read, and raise
        `ConnectionFailed` unless it may be opened again."""
        self.parser.reset()
        self.reconnects.failed(exc, f"the stream {self.cursor.path}")

    def refused(self, exc: Exception) -> None:
        """Opening the stream failed: `ConnectionFailed` unless it may be tried again."""
        self.reconnects.failed(exc, f"opening {self.cursor.path}")
