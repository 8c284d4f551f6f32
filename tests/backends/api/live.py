"""A real API server for tests: uvicorn on a free loopback port, in a thread with its own
event loop, over a SessionManager with offline models and a SQLite store in tmp_path; and
an httpx client that speaks the API and reads its event stream, as a front end would."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp

from backends.api import create_api
from backends.api.client import GuiAgentClient
from backends.api.client_http import pool_limits
from connectors.function import FunctionInfo, FunctionModel
from connectors.scripted import ScriptedModel
from gui_agent.auth import TokenService, UserDB
from gui_agent.config import AppConfig
from gui_agent.llm import LLMProvider, StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import DB_FILE_NAME, SQLiteStore
from gui_agent.tokens import EstimateCounter
from schema import EVENT_ADAPTER, Event, Message, MessageCompleted, TextDelta

SECRET = "test-signing-secret-" + "k" * 40


def free_port() -> int:
    """A loopback port nobody listens on (for a server started as its own process)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SLOW_CHUNKS = 3000
"""The slow model streams this many pieces, 10 ms apart: long enough to stop it midway."""

_T = TypeVar("_T")


class _Server(uvicorn.Server):
    """uvicorn that signals a threading.Event once it is accepting connections."""

    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self._ready.set()


class ServerThread:
    """Builds an app inside its own event loop (so the manager's tasks live there) and
    serves it on an already bound loopback socket until `stop()`."""

    def __init__(
        self,
        factory: Callable[[], Awaitable[tuple[FastAPI, Callable[[], Awaitable[None]]]]],
        *,
        port: int = 0,
    ) -> None:
        self._factory = factory
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._server: _Server | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (a restart)
        self._socket.bind(("127.0.0.1", port))
        self.base_url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._thread = threading.Thread(target=self._run, name="api-server", daemon=True)

    def start(self) -> ServerThread:
        self._thread.start()
        if not self._ready.wait(timeout=30):
            raise RuntimeError("the API server did not start within 30 s")
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        cleanup: Callable[[], Awaitable[None]] | None = None
        try:
            app, cleanup = await self._factory()
            self.loop = asyncio.get_running_loop()
            config = uvicorn.Config(
                app, log_level="warning", lifespan="on", timeout_graceful_shutdown=3
            )
            self._server = _Server(config, self._ready)
            await self._server.serve(sockets=[self._socket])
        except BaseException as exc:
            self._error = exc
            raise
        finally:
            self._ready.set()
            if cleanup is not None:
                await cleanup()

    def call(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run a coroutine on the server's loop and return its result."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=30)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(timeout=30)
        self._socket.close()
        assert not self._thread.is_alive(), "the API server did not shut down"


@contextmanager
def serving(config: AppConfig) -> Iterator[ServerThread]:
    """What `gui-agent serve` builds from `config` (no look for local model servers), served
    on a thread of its own until the block ends."""
    from backends.server import build_server  # (the page too: import it only when needed)

    server = ServerThread(lambda: build_server(config, probe_local=False)).start()
    try:
        yield server
    finally:
        server.stop()


# -- SSE ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SSE:
    event: str
    id: str | None
    data: str

    def parsed(self) -> Event:
        return EVENT_ADAPTER.validate_json(self.data)


def iter_sse(response: httpx.Response, *, comments: bool = False) -> Iterator[SSE]:
    """Parse `text/event-stream` lines into events (comments too, when asked)."""
    name: str | None = None
    event_id: str | None = None
    data: list[str] = []
    for line in response.iter_lines():
        if not line:
            if data:
                yield SSE(name or "message", event_id, "\n".join(data))
            name, event_id, data = None, None, []
            continue
        if line.startswith(":"):
            if comments:
                yield SSE("comment", None, line[1:].strip())
            continue
        key, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if key == "event":
            name = value
        elif key == "id":
            event_id = value
        elif key == "data":
            data.append(value)


@dataclass
class EventReader:
    """An open event stream: the `hello` data, then `until(...)` reads events."""

    sse: Iterator[SSE]
    hello: dict[str, Any]
    seen: list[Event] = field(default_factory=list)

    def next(self) -> Event:
        item = next(self.sse)
        assert item.id == f"{self.hello['epoch']}-{item.parsed().seq}"
        event = item.parsed()
        self.seen.append(event)
        return event

    def until(self, predicate: Callable[[Event], bool]) -> list[Event]:
        """Events up to and including the first one matching `predicate`."""
        out: list[Event] = []
        while True:
            event = self.next()
            out.append(event)
            if predicate(event):
                return out


ALICE, BOB = ("alice", "alice-password-1"), ("bob", "bob-password-12")
"""The users of the `two_users` fixture (conftest.py)."""


def client_of(backend: Backend, user: tuple[str, str]) -> GuiAgentClient:
    """The Python client, logged in as `user`."""
    client = GuiAgentClient(backend.base_url)
    client.login(*user)
    return client


def is_idle(event: Event) -> bool:
    return event.type == "state_changed" and event.to_state.value == "STOP"


def tick(n: int) -> Callable[[Event], bool]:
    """The slow model's delta number `n`."""
    return lambda event: isinstance(event, TextDelta) and event.delta == f"tick{n} "


def completed(events: Sequence[Event]) -> list[MessageCompleted]:
    return [event for event in events if isinstance(event, MessageCompleted)]


# -- the client ----------------------------------------------------------------------------


class Api:
    """A thin httpx client speaking the API, with one user's token."""

    def __init__(self, base_url: str, token: str | None = None) -> None:
        # (as the API clients do, so a request after a quiet spell never meets a connection
        # the server is closing: client_http.KEEPALIVE_EXPIRY_S)
        self.http = httpx.Client(
            base_url=base_url, timeout=httpx.Timeout(20.0), limits=pool_limits()
        )
        self.token = token

    def close(self) -> None:
        self.http.close()

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def login(self, username: str | None = None, password: str | None = None) -> Api:
        body = {"username": username, "password": password} if username else None
        response = self.http.post("/api/login", json=body)
        assert response.status_code == 200, response.text
        self.token = response.json()["token"]
        return self

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        return self.http.request(method, url, headers=headers, **kwargs)

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def create_session(self, **body: Any) -> str:
        response = self.post("/api/sessions", json=body)
        assert response.status_code == 201, response.text
        return str(response.json()["session"]["id"])

    def send(self, session_id: str, text: str) -> str:
        response = self.post(f"/api/sessions/{session_id}/messages", json={"text": text})
        assert response.status_code == 202, response.text
        return str(response.json()["message_id"])

    def session(self, session_id: str) -> dict[str, Any]:
        response = self.get(f"/api/sessions/{session_id}")
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    def messages(self, session_id: str) -> list[Message]:
        return [Message.model_validate(m) for m in self.session(session_id)["messages"]]

    @contextmanager
    def events(
        self,
        session_id: str,
        *,
        since: int | None = None,
        last_event_id: int | str | None = None,
        epoch: str | None = None,
    ) -> Iterator[EventReader]:
        params = {"since": str(since)} if since is not None else {}
        if epoch is not None:
            params["epoch"] = epoch
        headers = {**self.headers, "Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        url = f"/api/sessions/{session_id}/events"
        with self.http.stream("GET", url, params=params, headers=headers) as response:
            assert response.status_code == 200, response.read().decode()
            assert response.headers["content-type"].startswith("text/event-stream")
            sse = iter_sse(response)
            first = next(sse)
            assert first.event == "hello" and first.id is None
            yield EventReader(sse, json.loads(first.data))


# -- fixtures ------------------------------------------------------------------------------


async def _slow(messages: list[Message], info: FunctionInfo) -> AsyncIterator[str]:
    for index in range(SLOW_CHUNKS):
        await asyncio.sleep(0.01)
        yield f"tick{index} "


@dataclass
class Backend:
    """What a test can reach: the server, its models and a client per user."""

    server: ServerThread
    scripted: ScriptedModel
    tokens: TokenService
    users: UserDB | None
    data_dir: Path
    manager: SessionManager
    """The server's sessions (touch them only through `server.call`, on its loop)."""
    clients: list[Api] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def client(self, token: str | None = None) -> Api:
        api = Api(self.base_url, token)
        self.clients.append(api)
        return api


def make_backend(
    tmp_path: Path,
    *,
    users: Sequence[tuple[str, str]] = (),
    page: ASGIApp | None = None,
    models: Sequence[LLMProvider] = (),
    port: int = 0,
    **api_options: Any,
) -> Backend:
    """The API over offline models (`models` too, after "scripted" and "slow"); `page` is
    mounted at "/" after it, where the server mounts the Gradio page. On `port` (a free one
    by default): the same port and folder again is the same server restarted."""
    scripted = ScriptedModel(name="scripted", default="Hello from the scripted model.")
    slow = FunctionModel(_slow, name="slow")
    tokens = TokenService(SECRET)
    user_db: UserDB | None = None
    if users:
        user_db = UserDB(tmp_path / "users.json")
        known = user_db.names()  # (the same folder again: the server restarted)
        for name, password in users:
            if name not in known:
                user_db.add(name, password)
    data_dir = tmp_path / "data"
    managers: list[SessionManager] = []

    async def factory() -> tuple[FastAPI, Callable[[], Awaitable[None]]]:
        manager = SessionManager(
            models=StaticCatalog(scripted, slow, *models),
            store=SQLiteStore(data_dir / DB_FILE_NAME),
            workspace_root=data_dir / "workspaces",
            counter_factory=lambda _name: EstimateCounter(),
        )
        await manager.start()
        managers.append(manager)
        app = create_api(manager, tokens, users=user_db, **api_options)
        if page is not None:
            app.mount("/", page)
        return app, manager.close

    server = ServerThread(factory, port=port).start()
    return Backend(server, scripted, tokens, user_db, data_dir, managers[0])


@contextmanager
def running_backend(tmp_path: Path, **options: Any) -> Iterator[Backend]:
    backend = make_backend(tmp_path, **options)
    try:
        yield backend
    finally:
        for api in backend.clients:
            api.close()
        backend.server.stop()
