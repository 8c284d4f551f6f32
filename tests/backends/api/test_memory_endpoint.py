"""GET /api/sessions/{id}/memory, through the Python client against the real server: what
the next model call would be sent of the history (the same window the model then gets),
what slid out, AutoChat's goal, and nobody else's chat."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from backends.api.client import AsyncGuiAgentClient, GuiAgentClient, NotFound
from schema import AutoChatStopped, Event
from tests.backends.api.live import ALICE, BOB, Backend, client_of, is_idle


@pytest.fixture
def backend(two_users: Backend) -> Backend:
    return two_users


def turn(
    client: GuiAgentClient, session_id: str, text: str, until: Callable[[Event], bool] = is_idle
) -> None:
    with client.events(session_id) as stream:
        client.send_message(session_id, text)
        for event in stream:
            if until(event):
                return


def test_the_window_is_what_the_model_is_sent_next_and_says_what_slid_out(
    backend: Backend,
) -> None:
    with client_of(backend, ALICE) as alice:
        session_id = alice.create_session(settings={"memory_exchanges": 1}).id
        empty = alice.memory(session_id)
        assert empty.message_ids == [] and empty.dropped == 0 and empty.goal is None
        assert empty.token_count > 0  # the system prompt counts
        turn(alice, session_id, "first question")
        turn(alice, session_id, "second question")
        history = [m.id for m in alice.get_session(session_id).messages]
        window = alice.memory(session_id)
        assert window.message_ids == history[2:]  # one exchange kept
        assert window.dropped == 2 and window.token_count > empty.token_count
        # what the model is then sent: the system prompt, then those messages
        turn(alice, session_id, "third question")
        sent = backend.scripted.requests[-1].messages
        assert [m.content for m in sent[1:]] == ["third question"]
        assert alice.memory(session_id).message_ids == [
            m.id for m in alice.get_session(session_id).messages[-2:]
        ]


def autochat_ended(event: Event) -> bool:
    return isinstance(event, AutoChatStopped)


def test_autochats_goal_is_shown_and_nobody_elses_chat_is(backend: Backend) -> None:
    with client_of(backend, ALICE) as alice, client_of(backend, BOB) as bob:
        autochat = {"enabled": True, "max_turns": 1}
        session_id = alice.create_session(settings={"memory_exchanges": 1}).id
        alice.update_session(session_id, autochat=autochat)
        turn(alice, session_id, "keep the garden watered", until=autochat_ended)
        window = alice.memory(session_id)
        assert window.goal == "keep the garden watered"
        assert window.goal_pinned  # slid out after the automatic turn: put back in
        with pytest.raises(NotFound):
            bob.memory(session_id)


async def test_the_asyncio_client_reads_it_too(backend: Backend) -> None:
    async with AsyncGuiAgentClient(backend.base_url) as client:
        await client.login(*ALICE)
        session = await client.create_session()
        window = await client.memory(session.id)
        assert window.message_ids == [] and window.token_count > 0
