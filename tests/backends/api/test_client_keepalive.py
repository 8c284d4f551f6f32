"""The API clients never send a request on a connection that has been idle for as long as a
server keeps one open: httpx kept one for 5 s, as long as uvicorn does, so a request made
after about 5 s of quiet could go out as the server closed that connection, and fail.

The server here is a raw socket that answers the first request, then resets that connection
when the next request comes on it (what a server closing an idle connection does to a
request that arrives at that moment), and answers any request on a new connection."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from backends.api.async_client import AsyncGuiAgentClient
from backends.api.client import GuiAgentClient
from backends.api.client_http import KEEPALIVE_EXPIRY_S
from backends.server import KEEP_ALIVE_S
from schema import PROTOCOL_VERSION

HEALTH = json.dumps({"status": "ok", "protocol_version": PROTOCOL_VERSION, "auth": "none"})
ANSWER = (
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    f"Content-Length: {len(HEALTH)}\r\n\r\n{HEALTH}"
).encode()


def _read_request(connection: socket.socket) -> bool:
    """Read one request's head (these have no body); False when the client closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(4096)
        if not chunk:
            return False
        data += chunk
    return True


def _serve(connection: socket.socket, connections: list[int]) -> None:
    with connection:
        connections.append(1)
        if not _read_request(connection):
            return
        connection.sendall(ANSWER)
        if not _read_request(connection):
            return  # the client closed this idle connection itself: as it should
        # A second request on this connection, after the quiet: reset it unanswered.
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@contextmanager
def closing_server() -> Iterator[tuple[str, list[int]]]:
    """The server's address, and one entry per connection it accepted."""
    listener = socket.create_server(("127.0.0.1", 0))
    connections: list[int] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # closed: the test is over
            threading.Thread(target=_serve, args=(connection, connections), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", connections
    finally:
        listener.close()


def test_the_client_opens_a_new_connection_after_a_quiet_spell() -> None:
    with closing_server() as (url, connections), GuiAgentClient(url) as client:
        assert client.health().status == "ok"
        time.sleep(KEEPALIVE_EXPIRY_S + 0.5)
        assert client.health().status == "ok"  # was: ConnectionFailed (connection reset)
        assert len(connections) == 2


def test_the_async_client_opens_a_new_connection_after_a_quiet_spell() -> None:
    async def twice(url: str) -> None:
        async with AsyncGuiAgentClient(url) as client:
            assert (await client.health()).status == "ok"
            await asyncio.sleep(KEEPALIVE_EXPIRY_S + 0.5)
            assert (await client.health()).status == "ok"

    with closing_server() as (url, connections):
        asyncio.run(twice(url))
        assert len(connections) == 2


def test_an_idle_connection_is_let_go_well_before_the_server_closes_it() -> None:
    assert KEEPALIVE_EXPIRY_S <= KEEP_ALIVE_S / 2
