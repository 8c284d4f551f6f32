"""A session's detail and its event stream's hello say whether an AutoChat run is going on
(`autochat_active`), so a client that opens the chat while AutoChat waits between two turns
(state STOP, yet a turn is coming) says so rather than "your turn"; a Stop ends it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from backends.api.client import GuiAgentClient
from schema import AutoChatStopped, AutoChatTurn, InterpreterState
from tests.backends.api.live import Backend


@pytest.fixture
def client(backend: Backend) -> Iterator[GuiAgentClient]:
    with GuiAgentClient(backend.base_url) as logged_in:
        logged_in.login()
        yield logged_in


def test_the_detail_and_the_hello_say_autochat_waits_between_turns(
    client: GuiAgentClient,
) -> None:
    chat = client.create_session()
    assert client.get_session(chat.id).autochat_active is False
    client.update_session(chat.id, autochat={"enabled": True, "max_turns": 3, "delay_s": 30})
    with client.events(chat.id) as events:
        client.send_message(chat.id, "keep going")
        next(e for e in events if isinstance(e, AutoChatTurn))  # announced: its delay runs
    detail = client.get_session(chat.id)
    assert detail.state is InterpreterState.STOP and detail.autochat_active is True
    with client.events(chat.id, since=detail.last_seq) as events:
        assert events.hello is not None
        assert events.hello.state is InterpreterState.STOP and events.hello.autochat_active
        assert client.stop(chat.id)
        next(e for e in events if isinstance(e, AutoChatStopped))
    assert client.get_session(chat.id).autochat_active is False
