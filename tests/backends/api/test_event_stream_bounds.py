"""An event stream whose client stops reading (a frozen tab, a network gone dead before TCP
noticed) does not make the server keep every later event: the session ends the stream's
subscription past a bound, the turns go on, and the client, when it reads again, is told it
fell behind and can resume with its Last-Event-ID."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from gui_agent.events import CHECK_EVERY, MAX_BEHIND, Subscription
from gui_agent.manager import SessionManager
from schema import Role, TextDelta
from tests.backends.api.live import Api, Backend, is_idle

WORDS_PER_REPLY = 2_000
"""Well under the bound: the reading client takes each turn in full before the next one, so
it never falls behind, however slowly this process parses."""
MAX_TURNS = 40
"""Far more than it takes to fill the socket buffers and pass the bound."""
RAW_TIMEOUT_S = 30.0


class RawStream:
    """GET .../events on a plain socket with a small receive buffer: it reads the response
    head and `hello`, then nothing until `read_to_end`."""

    def __init__(self, base_url: str, token: str, session_id: str) -> None:
        address = urlsplit(base_url)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(RAW_TIMEOUT_S)
        self.sock.connect((address.hostname or "127.0.0.1", address.port or 80))
        self.sock.sendall(
            (
                f"GET /api/sessions/{session_id}/events HTTP/1.1\r\n"
                f"Host: {address.netloc}\r\nAuthorization: Bearer {token}\r\n"
                "Accept: text/event-stream\r\n\r\n"
            ).encode()
        )
        self.received = b""
        while b"event: hello" not in self.received:
            self.received += self._recv()

    def _recv(self) -> bytes:
        data = self.sock.recv(4096)
        assert data, "the server closed the stream early"
        return data

    def read_to_end(self) -> list[dict[str, str]]:
        """Everything the server wrote until the response's last chunk, as SSE events."""
        while not self.received.endswith(b"\r\n0\r\n\r\n"):
            self.received += self._recv()
        head, _, body = self.received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        assert b"transfer-encoding: chunked" in head.lower(), head
        return _events(_unchunk(body).decode())

    def close(self) -> None:
        self.sock.close()


def _unchunk(body: bytes) -> bytes:
    out = b""
    while True:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return out
        out += rest[:size]
        body = rest[size + 2 :]


def _events(text: str) -> list[dict[str, str]]:
    events = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line.startswith(":"):
                continue
            key, _, value = line.partition(": ")
            fields[key] = value
        if fields:
            events.append(fields)
    return events


@contextmanager
def raw_stream(backend: Backend, api: Api, session_id: str) -> Iterator[RawStream]:
    stream = RawStream(backend.base_url, api.token or "", session_id)
    try:
        yield stream
    finally:
        stream.close()


async def _subscriptions(manager: SessionManager, session_id: str) -> list[Subscription]:
    interpreter = await manager.get(session_id, "local")
    return list(interpreter._hub._subscribers)


def test_a_client_that_stops_reading_is_ended_past_the_bound_and_resumes(
    backend: Backend, api: Api
) -> None:
    session_id = api.create_session()
    server, manager = backend.server, backend.manager
    with raw_stream(backend, api, session_id) as stalled:
        (subscription,) = server.call(_subscriptions(manager, session_id))
        held: list[int] = []
        with api.events(session_id) as reader:  # another client, reading all along
            for turn in range(MAX_TURNS):
                backend.scripted.push(" ".join(f"w{turn}.{n}" for n in range(WORDS_PER_REPLY)))
                api.send(session_id, f"turn {turn}")
                reader.until(is_idle)
                held.append(len(subscription._items))
                if subscription.fell_behind:
                    break
            assert subscription.fell_behind, held
            assert max(held) <= MAX_BEHIND + CHECK_EVERY, held
            assert len(subscription._items) == 1  # what it held was dropped: only the end
            assert server.call(_subscriptions(manager, session_id)) != [subscription]
            # The turns were not affected: the reader got every event, in order, no gap.
            seqs = [event.seq for event in reader.seen]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
            deltas = sum(isinstance(event, TextDelta) for event in reader.seen)
            assert deltas == (turn + 1) * WORDS_PER_REPLY
        replies = [m for m in api.messages(session_id) if m.role is Role.ASSISTANT]
        assert [len(m.content.split()) for m in replies] == [WORDS_PER_REPLY] * (turn + 1)

        # The client reads again: what the server still had to write, then why it ended.
        events = stalled.read_to_end()
    last = events[-1]
    assert last["event"] == "fell_behind" and "id" not in last
    data = json.loads(last["data"])
    assert data["error"]["code"] == "fell_behind"
    assert f"{MAX_BEHIND:,} events behind" in data["error"]["message"]
    written = [event["id"] for event in events if "id" in event]
    assert written and data["last_event_id"] == written[-1]

    # What an EventSource does next: reconnect with that id. The buffer no longer holds
    # every event after it, so hello says to reload, and the stream follows live from here.
    last_seq = api.session(session_id)["last_seq"]
    with api.events(session_id, last_event_id=data["last_event_id"]) as resumed:
        assert resumed.hello["resync"] is True and resumed.hello["last_seq"] == last_seq
        backend.scripted.push("after the reload")
        api.send(session_id, "one more")
        live = resumed.until(lambda event: is_idle(event) and event.seq > last_seq)
    assert [e.delta for e in live if isinstance(e, TextDelta)][-3:] == ["after ", "the ", "reload"]
