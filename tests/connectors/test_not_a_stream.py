"""Servers that answer a streamed request with an HTML page or other text, status 200.

A base URL that leads to a web UI or misses ``/v1`` usually lands on a page the server
answers with 200: the SDKs find no events in it, and the person used to read only that the
stream was empty. They must read what came instead (the page, with its title; the start of
the text) and what to check. A real event stream under the wrong label still arrives, and
the session goes on after such an answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from connectors.anthropic import AnthropicProvider
from connectors.openai import OpenAIProvider
from connectors.resilience import RetryPolicy
from connectors.stream_bodies import QUOTED_CHARS
from gui_agent.exceptions import ModelServerError, ModelTimeout
from gui_agent.quick import create_interpreter
from schema import Message, Role, RunOutcome
from tests.connectors.peers import (
    Reply,
    ScriptedPeer,
    Stall,
    anthropic_text_stream,
    consume,
    openai_text_stream,
    sse_data,
)
from tests.gui_agent.helpers import of_type

WEB_UI = (
    b"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
    b"<title>Open WebUI &amp; friends</title></head><body><div id='app'></div></body></html>"
)


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


def answer(body: bytes, content_type: str) -> Reply:
    return Reply(headers={"content-type": content_type}, parts=(body,), chunked=False)


@pytest.fixture
async def openai_model(
    peer: ScriptedPeer, fast_retry: RetryPolicy
) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider("qwen3", base_url=peer.url, api_key="k", retry=fast_retry)
    yield provider
    await provider.aclose()


@pytest.fixture
async def anthropic_model(
    peer: ScriptedPeer, fast_retry: RetryPolicy
) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider("claude-test", base_url=peer.url, api_key="k", retry=fast_retry)
    yield provider
    await provider.aclose()


async def test_an_html_page_is_named_as_such_with_the_url_to_check(
    openai_model: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(answer(WEB_UI, "text/html; charset=utf-8"))
    outcome = await consume(openai_model.stream([user("hi")]))
    said = str(outcome.error)
    assert f"{peer.url}/chat/completions answered with an HTML page" in said
    assert "titled 'Open WebUI & friends' (text/html)" in said
    assert "check the base URL (for OpenAI-compatible servers it usually ends in /v1)" in said
    assert "without any stream data" not in said
    assert peer.request_count == 1  # a wrong address does not get right by asking again


async def test_anthropic_an_html_page_is_named_with_its_own_base_url_advice(
    anthropic_model: AnthropicProvider, peer: ScriptedPeer
) -> None:
    peer.script(answer(b"<html><body>Not here</body></html>", "text/html"))
    outcome = await consume(anthropic_model.stream([user("hi")]))
    said = str(outcome.error)
    assert f"{peer.url}/v1/messages answered with an HTML page (text/html)" in said
    assert "the client adds /v1/messages" in said
    assert "without any stream events" not in said
    assert peer.request_count == 1


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_other_text_is_quoted_from_its_start_and_no_further(
    openai_model: OpenAIProvider,
    anthropic_model: AnthropicProvider,
    peer: ScriptedPeer,
    vendor: str,
) -> None:
    body = b"404 page not found. " + b"x" * 5000
    peer.script(answer(body, "text/plain; charset=utf-8"))
    model = openai_model if vendor == "openai" else anthropic_model
    outcome = await consume(model.stream([user("hi")]))
    said = str(outcome.error)
    assert (
        "answered with text (text/plain) instead of an event stream: '404 page not found." in said
    )
    assert "check the base URL" in said
    assert len(said) < QUOTED_CHARS + 400


async def test_plain_text_labelled_as_a_page_is_quoted(
    openai_model: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(answer(b"Model is still loading, try later", "text/html"))
    outcome = await consume(openai_model.stream([user("hi")]))
    said = str(outcome.error)
    assert "answered with text (text/html) instead of an event stream: 'Model is still" in said


async def test_an_empty_answer_says_so(openai_model: OpenAIProvider, peer: ScriptedPeer) -> None:
    peer.script(answer(b"", "text/html"))
    outcome = await consume(openai_model.stream([user("hi")]))
    assert "answered with an empty body (text/html) instead of an event stream" in str(
        outcome.error
    )


@pytest.mark.parametrize("label", ["text/html; charset=utf-8", "text/plain"])
async def test_an_event_stream_under_another_label_still_arrives(
    openai_model: OpenAIProvider,
    anthropic_model: AnthropicProvider,
    peer: ScriptedPeer,
    label: str,
) -> None:
    peer.script(
        Reply(headers={"content-type": label}, parts=openai_text_stream(["Hel", "lo"])),
        Reply(headers={"content-type": label}, parts=anthropic_text_stream(["Hi", "!"])),
    )
    from_openai = await consume(openai_model.stream([user("hi")]))
    from_anthropic = await consume(anthropic_model.stream([user("hi")]))
    assert from_openai.response.text == "Hello"
    assert from_anthropic.response.text == "Hi!"


@pytest.mark.parametrize("label", ["application/json", "text/html"])
async def test_text_under_another_label_is_shown_as_it_comes(
    peer: ScriptedPeer, label: str
) -> None:
    provider = OpenAIProvider(
        "qwen3", base_url=peer.url, api_key="k", retry=RetryPolicy(1), timeout_s=0.5
    )
    first = openai_text_stream(["Half"])[:2]  # the role, then the first words; then silence
    peer.script(Reply(headers={"content-type": label}, parts=(*first, Stall())))
    try:
        outcome = await asyncio.wait_for(consume(provider.stream([user("hi")])), 10)
    finally:
        await provider.aclose()
    assert outcome.texts == ["Half"]
    assert isinstance(outcome.error, ModelTimeout)


async def test_an_error_object_in_a_relabelled_stream_is_raised_with_its_words(
    openai_model: OpenAIProvider, peer: ScriptedPeer
) -> None:
    failing = sse_data({"error": {"message": "model crashed", "type": "server_error"}})
    parts = (*openai_text_stream(["Hi"])[:2], failing)
    peer.script(Reply(headers={"content-type": "text/plain"}, parts=parts))
    outcome = await consume(openai_model.stream([user("hi")]))
    assert outcome.texts == ["Hi"]
    assert isinstance(outcome.error, ModelServerError)
    assert "model crashed" in str(outcome.error)


NGINX_404 = (
    b"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
    b"<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n" + b"<!-- a padding to disable MSIE's friendly error page -->\r\n" * 6
)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [404, 502])
async def test_an_error_status_with_a_web_page_names_the_page_not_its_markup(
    openai_model: OpenAIProvider,
    anthropic_model: AnthropicProvider,
    peer: ScriptedPeer,
    vendor: str,
    status: int,
) -> None:
    page = NGINX_404.replace(b"404 Not Found", f"{status} Proxy says no".encode())
    failing = Reply(status=status, headers={"content-type": "text/html"}, parts=(page,))
    peer.script(*[failing] * 4)  # a 502 is retried
    model = openai_model if vendor == "openai" else anthropic_model
    outcome = await consume(model.stream([user("hi")]))
    said = str(outcome.error)
    assert f"(HTTP {status})" in said
    assert f"server said: an HTML page titled '{status} Proxy says no'" in said
    assert "<" not in said
    if status == 404:
        assert "check the base URL" in said


async def test_the_session_goes_on_after_a_page_instead_of_a_stream(
    openai_model: OpenAIProvider, peer: ScriptedPeer, tmp_path: Path
) -> None:
    interpreter = create_interpreter(openai_model, builtin_tools=False, workdir=tmp_path)
    peer.script(answer(WEB_UI, "text/html"), Reply.sse(*openai_text_stream(["Hello!"])))
    failed = [e async for e in interpreter.chat("hi")]
    assert [e.outcome for e in of_type(failed, "run_finished")] == [RunOutcome.ERROR]
    (error,) = of_type(failed, "error")
    assert "HTML page titled 'Open WebUI & friends'" in error.message
    again = [e async for e in interpreter.chat("hi again")]
    assert [e.outcome for e in of_type(again, "run_finished")] == [RunOutcome.COMPLETED]
    assert interpreter.session.history[-1].content == "Hello!"
