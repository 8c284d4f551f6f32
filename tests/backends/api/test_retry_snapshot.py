"""A front end that opens a chat while its model is asked again (a rate limit's wait) is
told so by the session detail and by the event stream's `hello`: the reply being written
carries the latest `model_retrying` (`retrying`, with the wait left) until its text
begins. A reader follows on from `last_seq`, which already covers the notice: without it
there, the reply stood blank until the next notice, or for good when one retry worked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backends.api.client import GuiAgentClient
from gui_agent.retry_words import retry_words
from schema import ModelRetrying, StreamingReply, TextDelta
from tests.backends.api.live import Api, Backend, is_idle, running_backend
from tests.backends.retried import FIRST, RETRY, RetriedModel


@pytest.fixture
def retried() -> RetriedModel:
    return RetriedModel()


@pytest.fixture
def backend(tmp_path: Path, retried: RetriedModel) -> Iterator[Backend]:
    with running_backend(tmp_path, models=[retried.provider]) as running:
        try:
            yield running
        finally:  # a reply left waiting would hold the server's shutdown
            running.server.call(retried.release(whole=True))


def asked_again(entry: StreamingReply) -> ModelRetrying:
    retrying = entry.retrying
    assert retrying is not None, entry
    assert (retrying.attempt, retrying.max_attempts, retrying.reason) == (
        RETRY.attempt,
        RETRY.max_attempts,
        RETRY.reason,
    )
    assert 0 < retrying.wait_s <= RETRY.wait_s  # the wait left, not more
    return retrying


def test_the_detail_and_hello_say_the_model_is_asked_again_until_the_reply_begins(
    backend: Backend, retried: RetriedModel
) -> None:
    api = backend.client().login()
    with GuiAgentClient(backend.base_url) as client:
        client.login()
        follow_a_retried_reply(api, client, backend, retried)


def follow_a_retried_reply(
    api: Api, client: GuiAgentClient, backend: Backend, retried: RetriedModel
) -> None:
    session_id = api.create_session(model="retried")
    with api.events(session_id) as first:
        api.send(session_id, "hi")
        notice = first.until(lambda e: isinstance(e, ModelRetrying))[-1]

        # The detail, as a front end reads it right after sending: past the notice.
        detail = client.get_session(session_id)
        assert detail.busy and detail.last_seq >= notice.seq
        (entry,) = detail.streaming
        assert isinstance(notice, ModelRetrying) and entry.id == notice.message_id
        assert entry.content == ""
        retrying = asked_again(entry)
        assert retry_words(retrying).startswith("Rate limited (HTTP 429): asking again in ")
        assert retry_words(retrying).endswith("(attempt 2 of 4)…")
        raw = api.session(session_id)["streaming"][0]["retrying"]  # as a browser reads it
        assert raw["type"] == "model_retrying" and raw["attempt"] == 2

        # A stream opened now says it in its hello, typed for the Python client too.
        with client.events(session_id) as second:
            hello = second.hello
            assert hello is not None and hello.last_seq >= notice.seq
            (opened,) = hello.streaming
            assert opened.id == entry.id
            asked_again(opened)

        # Once the reply has begun, it is the text that is shown: no notice.
        backend.server.call(retried.release())
        first.until(lambda e: isinstance(e, TextDelta))
        (writing,) = client.get_session(session_id).streaming
        assert writing.content == FIRST and writing.retrying is None
        with api.events(session_id) as third:
            assert [m["retrying"] for m in third.hello["streaming"]] == [None]

        backend.server.call(retried.release(whole=True))
        first.until(is_idle)
    assert client.get_session(session_id).streaming == []


def test_a_reply_never_asked_again_carries_no_notice(api: Api) -> None:
    """(`retrying` is null, not absent: the field is there for every reply being written.)"""
    session_id = api.create_session(model="slow")
    with api.events(session_id) as events:
        api.send(session_id, "write")
        events.until(lambda e: isinstance(e, TextDelta))
        (entry,) = api.session(session_id)["streaming"]
        assert entry["retrying"] is None and entry["content"]
        api.post(f"/api/sessions/{session_id}/stop")
        events.until(is_idle)
