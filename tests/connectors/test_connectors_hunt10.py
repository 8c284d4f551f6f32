"""Defects users of real servers hit, found in the tenth connector hunt.

- No setting said how long to wait for a model: a server that stayed silent cost four
  attempts of 60 s each before the person heard anything, and a model that legitimately
  needs longer (a long prompt read on a CPU) could not be given more time. Now
  ``GUI_AGENT_MODEL_TIMEOUT`` (environment or ``.env``) sets it, the error names it, and
  silence is asked again once, not three times (a slow local server would start the long
  prompt over each time).
- The probe of a local server took an embedding model whose name does not say "embed"
  (Ollama's bge-m3, all-minilm, paraphrase-multilingual; BAAI/bge-*, intfloat/e5-*,
  thenlper/gte-* on vLLM) for the default chat model: every message failed.
- A model whose chat template opens ``<think>`` itself (Qwen3-Thinking-2507, the
  DeepSeek-R1 distills, QwQ on vLLM or llama.cpp without a reasoning parser) sends its
  thinking with no opening tag: ``Let me see…\n</think>\n\nIt is 4.``. It was shown, kept
  and sent back as the answer, tag and all. Now the reply is split at that tag, and the
  provider, having seen it, streams the next replies' thinking as reasoning from the start.
- A 429 or 503 whose Retry-After is a date already past (a server whose clock is behind)
  was asked again at once, every attempt within milliseconds, and said "retry after 0 s";
  now it is backed off like one that gave no time.
- A model without vision on a compatible server (llama.cpp without ``--mmproj``, a text
  model on LM Studio, Ollama, vLLM or OpenRouter) refused every request once the history
  held an image (a plot a tool returned, a screenshot the person attached): the session was
  stuck for good, and llama.cpp's refusal (a 500) was even retried four times. Now the
  images are left out, with a note in their place, and the provider remembers.
- A compatible server that reported usage as zeros (a placeholder, never filled in) made
  replies cost nothing, so AutoChat's token budget was never reached; a server that
  reports none was already counted here, and so is this one now (as for Claude-compatible
  servers).
- A temperature set for the session made every request to OpenAI's reasoning models
  (o3, o4-mini, gpt-5) fail: they refuse any temperature but their default ("Unsupported
  value: 'temperature' does not support 0.2 with this model"). Now the request is sent
  again without it, and the provider remembers.
- A session that switched to a Mistral model (Mistral's API, or vLLM serving one with the
  mistral tokenizer) after tool calls by another model was refused at every message: its
  validator takes only call ids of 9 letters or digits ("Tool call id was call_… but must
  be a-z, A-Z, 0-9, with a length of 9."). Now the ids are rewritten to fit, the same way
  in each call and its result, and the provider remembers.
- Gemini's OpenAI-compatible API puts a thought signature on each tool call
  (``extra_content.google.thought_signature``) and refuses the next request of the tool
  loop when the call comes back without it: every tool call of Gemini 3 failed. Now the
  call's ``extra_content`` is kept with the reply and sent back with the call, to the
  model that wrote it only.
- Thinking models that call tools through an OpenAI-compatible API (Kimi K2 thinking,
  DeepSeek's thinking mode, GLM, MiMo) refuse the next request of the tool loop when the
  assistant's tool-call message comes back without its ``reasoning_content`` ("thinking
  is enabled but reasoning_content is missing in assistant tool call message at index
  1"): every turn that used a tool failed. Now the request is sent again with it, and
  the provider remembers.
- The scripted and function models (the fakes users test their agents and front ends
  with) dropped a reply's reasoning from the stream: it appeared only once the reply was
  complete, never as reasoning deltas as a real reasoning model's does.
- A reply Mistral cut off at the model's context (finish reason ``model_length``), or
  Claude at its context window (stop reason ``model_context_window_exceeded``), got no
  cut-off note, and a tool call it cut off was run with half its arguments.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from connectors.anthropic import AnthropicProvider
from connectors.function import FunctionModel
from connectors.openai import OpenAIProvider
from connectors.openai_mapping import StreamAccumulator
from connectors.registry import (
    MODEL_TIMEOUT_ENV,
    LocalServer,
    probe_local_servers,
    resolve_models,
)
from connectors.resilience import RetryPolicy, parse_retry_after
from connectors.scripted import ScriptedModel
from gui_agent.exceptions import ConfigError, ModelTimeout
from gui_agent.quick import create_interpreter
from gui_agent.tools import tool
from schema import ImagePart, Message, ModelResponse, ModelSettings, Role, ToolCall
from tests.connectors.peers import (
    OPENAI_DONE,
    Reply,
    ScriptedPeer,
    Sleeps,
    anthropic_end,
    anthropic_start,
    anthropic_text_block,
    consume,
    openai_chunk,
    openai_error,
    openai_text_stream,
)
from tests.gui_agent.helpers import of_type

HI = [Message(role=Role.USER, content="hi")]


def compatible(
    peer: ScriptedPeer, retry: RetryPolicy | None = None, **kwargs: object
) -> OpenAIProvider:
    return OpenAIProvider(
        "m",
        base_url=peer.url + "/v1",
        retry=retry or RetryPolicy(max_attempts=1),
        **kwargs,  # type: ignore[arg-type]
    )


# --- a length stop under another vendor's word -----------------------------------------------


@pytest.mark.parametrize("said", ["model_length", "max_tokens", "MAX_TOKENS", "LENGTH"])
async def test_a_reply_cut_off_under_another_word_for_length_is_marked_cut_off(
    peer: ScriptedPeer, said: str
) -> None:
    """Mistral ends a reply that filled the model's context with ``model_length``; proxies
    for Claude and Gemini pass ``max_tokens`` / ``MAX_TOKENS`` through. Only ``length`` was
    understood: the reply looked complete, with no note that it was cut off."""
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant", "content": "The first half of"}),
            openai_chunk({}, finish_reason=said),
            OPENAI_DONE,
        )
    )
    async with compatible(peer) as model:
        final = (await consume(model.stream(HI))).response
    assert final.finish_reason == "length"
    assert final.text == "The first half of"


async def test_a_mistral_reply_cut_off_at_the_context_is_noted_as_cut_off(
    peer: ScriptedPeer, tmp_path: Path
) -> None:
    interpreter = create_interpreter(compatible(peer), builtin_tools=False, workdir=tmp_path)
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant", "content": "The first half of"}),
            openai_chunk({}, finish_reason="model_length"),
            OPENAI_DONE,
        )
    )
    [e async for e in interpreter.chat("write a lot")]
    reply = interpreter.session.history[-1]
    assert reply.content == "The first half of"
    assert reply.metadata.get("cut_off") is True


async def test_a_claude_reply_cut_off_at_the_context_window_is_marked_cut_off(
    peer: ScriptedPeer,
) -> None:
    """Claude (Sonnet 4.5 and later) stops with ``model_context_window_exceeded`` when the
    reply fills the context window: as much a cut-off reply as ``max_tokens``."""
    peer.script(
        Reply.sse(
            anthropic_start(),
            *anthropic_text_block(0, ["The first half of"]),
            *anthropic_end("model_context_window_exceeded"),
        )
    )
    retry = RetryPolicy(max_attempts=1)
    async with AnthropicProvider(
        "claude-test", api_key="k", base_url=peer.url, retry=retry
    ) as model:
        final = (await consume(model.stream(HI))).response
    assert (final.finish_reason, final.text) == ("length", "The first half of")


# --- how long to wait for a model ----------------------------------------------------------


async def test_the_model_timeout_setting_bounds_the_wait_for_a_silent_server(
    peer: ScriptedPeer, tmp_path: Path
) -> None:
    """A server that accepts the request and says nothing: the person waits the timeout they
    set, asked at most twice, and the error names the setting that gives the model longer."""
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"{MODEL_TIMEOUT_ENV}=0.4\n")
    registry = await resolve_models(
        explicit=[f"openai-compatible:{peer.url}/v1#m"],
        env={},
        dotenv_path=dotenv,
        probe_local=False,
        embedded=False,
    )
    peer.script(*[Reply.silent()] * 4)
    model = registry.get()
    started = time.monotonic()
    outcome = await asyncio.wait_for(consume(model.stream(HI)), 20)
    waited = time.monotonic() - started
    assert isinstance(outcome.error, ModelTimeout)
    assert "no answer from the server within 0.4 s" in str(outcome.error)
    assert MODEL_TIMEOUT_ENV in str(outcome.error)
    assert peer.request_count == 2
    assert waited < 5


async def test_the_model_timeout_given_in_code_wins_over_the_environment(
    peer: ScriptedPeer,
) -> None:
    registry = await resolve_models(
        explicit=["anthropic:claude-test", f"openai-compatible:{peer.url}/v1#m"],
        env={"ANTHROPIC_API_KEY": "sk-ant-test", MODEL_TIMEOUT_ENV: "900"},
        dotenv_path=None,
        probe_local=False,
        embedded=False,
        model_timeout_s=12.5,
    )
    timeouts = {getattr(registry.get(n), "timeout_s", None) for n in registry.names()}
    assert len(registry.names()) == 3 and timeouts == {12.5}


@pytest.mark.parametrize("value", ["soon", "0", "-5", "inf", "nan"])
async def test_a_model_timeout_that_is_no_positive_number_is_refused_naming_it(value: str) -> None:
    with pytest.raises(ConfigError) as refused:
        await resolve_models(
            env={MODEL_TIMEOUT_ENV: value}, dotenv_path=None, probe_local=False, embedded=False
        )
    assert MODEL_TIMEOUT_ENV in str(refused.value)
    assert repr(value) in str(refused.value)


async def test_without_the_setting_models_wait_the_default() -> None:
    registry = await resolve_models(
        env={"OPENAI_API_KEY": "sk-test"}, dotenv_path=None, probe_local=False, embedded=False
    )
    assert getattr(registry.get(), "timeout_s", None) == 60.0


# --- probing: embedding models under other names -------------------------------------------


@pytest.mark.parametrize(
    "embedding",
    [
        "bge-m3:latest",
        "all-minilm:l6-v2",
        "paraphrase-multilingual:latest",
        "BAAI/bge-large-en-v1.5",
        "intfloat/multilingual-e5-large",
        "thenlper/gte-base",
        "sentence-transformers/all-MiniLM-L6-v2",
        "Qwen/Qwen3-Reranker-0.6B",
    ],
)
async def test_probing_passes_over_embedding_models_named_without_embed(
    peer: ScriptedPeer, embedding: str
) -> None:
    """Ollama lists the newest pull first: a person who pulled bge-m3 for retrieval after
    their chat model got bge-m3 as the default, and every message failed."""
    listed = [embedding, "llama3.2:3b"]
    peer.script(Reply.json(200, {"object": "list", "data": [{"id": m} for m in listed]}))
    found = await probe_local_servers([LocalServer("Ollama", peer.port)], timeout_s=2.0)
    assert [spec.model for spec in found] == ["llama3.2:3b"]


@pytest.mark.parametrize(
    "chat", ["qwen2.5:7b", "deepseek-r1:8b", "phi3.5", "gemma3:4b", "mistral-nemo", "gpt-oss:20b"]
)
async def test_chat_models_are_still_taken(peer: ScriptedPeer, chat: str) -> None:
    peer.script(Reply.json(200, {"object": "list", "data": [{"id": chat}]}))
    found = await probe_local_servers([LocalServer("Ollama", peer.port)], timeout_s=2.0)
    assert [spec.model for spec in found] == [chat]


# --- thinking opened by the chat template ----------------------------------------------------


def template_thinking(*pieces: str) -> Reply:
    return Reply.sse(
        openai_chunk({"role": "assistant", "content": ""}),
        *[openai_chunk({"content": p}) for p in pieces],
        openai_chunk({}, finish_reason="stop"),
        OPENAI_DONE,
    )


async def test_thinking_the_chat_template_opened_is_reasoning_not_the_answer(
    peer: ScriptedPeer, tmp_path: Path
) -> None:
    """The first reply streams before anyone can know; the finished reply (what is kept,
    shown when complete, and sent back) is split. The next reply streams as reasoning."""
    interpreter = create_interpreter(compatible(peer), builtin_tools=False, workdir=tmp_path)
    peer.script(
        template_thinking("They ask 2+2.", "\n</think>", "\n\n", "It is 4."),
        template_thinking("Polite", " thanks.\n</", "think>\n\nYou're welcome."),
        Reply.sse(*openai_text_stream(["Bye."])),
    )
    [e async for e in interpreter.chat("2+2?")]
    first = interpreter.session.history[-1]
    assert (first.content, first.reasoning) == ("It is 4.", "They ask 2+2.")

    events = [e async for e in interpreter.chat("thanks")]
    deltas = of_type(events, "text_delta")
    answer = "".join(e.delta for e in deltas if e.channel == "content")
    thinking = "".join(e.delta for e in deltas if e.channel == "reasoning")
    assert (thinking, answer) == ("Polite thanks.\n", "You're welcome.")
    second = interpreter.session.history[-1]
    assert (second.content, second.reasoning) == ("You're welcome.", "Polite thanks.")

    [e async for e in interpreter.chat("bye")]
    sent = peer.requests[-1].body["messages"]
    assert {"role": "assistant", "content": "It is 4."} in sent
    assert {"role": "assistant", "content": "You're welcome."} in sent
    assert "think>" not in str(sent) and "They ask" not in str(sent)


async def test_a_reply_without_thinking_after_one_with_is_still_the_answer(
    peer: ScriptedPeer,
) -> None:
    """A model that stops thinking (a hybrid with thinking turned off) is not taken for one
    that thinks forever: the reply is the answer, and the provider stops expecting it."""
    peer.script(
        template_thinking("Hm.\n</think>\n\nFour."),
        template_thinking("Just ", "five."),
        Reply.sse(*openai_text_stream(["Six."])),
    )
    async with compatible(peer) as model:
        await consume(model.stream(HI))
        plain = await consume(model.stream(HI))
        after = await consume(model.stream(HI))
    assert (plain.response.text, plain.response.reasoning) == ("Just five.", None)
    assert (after.texts, after.thoughts) == (["Six."], [])


@pytest.mark.parametrize(
    "text",
    [
        "Models end their reasoning with </think> when done.",
        "Write `</think>`\n to close it.",
        "<think>a</think>\n\nb",
    ],
    ids=["tag-in-a-sentence", "tag-in-code", "opened-by-the-model"],
)
def test_a_close_tag_that_ends_no_template_thinking_is_left_alone(text: str) -> None:
    accumulator = StreamAccumulator()
    accumulator.feed({"choices": [{"index": 0, "delta": {"content": text}}]})
    final = accumulator.response()
    if text.startswith("<think>"):
        assert (final.text, final.reasoning) == ("b", "a")
    else:
        assert (final.text, final.reasoning) == (text, None)
    assert not accumulator.template_opened_think


# --- a Retry-After already past ----------------------------------------------------------


def test_a_retry_after_date_already_past_says_no_time() -> None:
    now = datetime(2026, 11, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"retry-after": "Sun, 01 Nov 2026 11:59:00 GMT"}, now=now) is None
    assert parse_retry_after({"retry-after": "Sun, 01 Nov 2026 12:00:00 GMT"}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "0"}) == 0.0


async def test_a_rate_limit_until_a_past_date_is_backed_off_not_hammered(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    past = format_datetime(datetime.now(UTC) - timedelta(minutes=5), usegmt=True)
    limited = Reply.json(
        429, openai_error(429, "Slow down", "rate_limit_error"), {"retry-after": past}
    )
    peer.script(limited, limited, Reply.sse(*openai_text_stream(["Hi."])))
    async with compatible(peer, retry=fast_retry) as model:
        outcome = await consume(model.stream(HI))
    assert outcome.response.text == "Hi."
    assert sleeps.delays == [0.5, 1.0]


# --- the fakes stream reasoning as reasoning ---------------------------------------------------


async def test_the_scripted_and_function_models_stream_a_replys_reasoning_first() -> None:
    reply = ModelResponse(text="It is 4.", reasoning="Two and two.", finish_reason="stop")
    for model in (ScriptedModel([reply]), FunctionModel(lambda messages, info: reply)):
        outcome = await consume(model.stream(HI))
        kinds = [type(part).__name__ for part in outcome.parts]
        assert kinds[: kinds.index("ModelTextDelta")] == ["ModelReasoningDelta"] * 3
        assert ("".join(outcome.thoughts), "".join(outcome.texts)) == ("Two and two.", "It is 4.")
        assert outcome.response.reasoning == "Two and two."


# --- a model that cannot take images ---------------------------------------------------------

PLOT = ImagePart(media_type="image/png", data="iVBORw0KGgo=")


def image_parts(request_body: dict[str, Any]) -> int:
    return sum(
        part.get("type") == "image_url"
        for message in request_body["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
    )


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (
            500,
            "image input is not supported - hint: if this is unexpected, you may need to "
            "provide the mmproj",
        ),
        (400, "Model does not support images. Please use a model that does."),
        (404, "No endpoints found that support image input"),
        (400, "Invalid content type. image_url is only supported by certain models."),
        (400, "At most 0 image(s) may be provided in one request."),
    ],
    ids=["llama.cpp", "lm-studio", "openrouter", "openai-style", "vllm"],
)
async def test_a_model_that_cannot_see_images_still_answers_without_them(
    peer: ScriptedPeer, status: int, said: str
) -> None:
    history = [
        Message(role=Role.USER, content="What does this plot show?", images=(PLOT,)),
    ]
    peer.script(
        Reply.json(status, {"error": {"message": said, "type": "invalid_request_error"}}),
        Reply.sse(*openai_text_stream(["I cannot see images."])),
        Reply.sse(*openai_text_stream(["Still cannot."])),
    )
    async with compatible(peer) as model:
        first = await consume(model.stream(history))
        again = await consume(model.stream(history))
    assert first.response.text == "I cannot see images."
    assert again.response.text == "Still cannot."
    asked, retried, later = (r.body for r in peer.requests)
    assert image_parts(asked) == 1
    assert image_parts(retried) == image_parts(later) == 0
    assert retried["messages"] == [
        {
            "role": "user",
            "content": "What does this plot show?\n\n[an image was left out: this model "
            "cannot take images]",
        }
    ]
    assert later["messages"] == retried["messages"]


async def test_an_error_about_something_else_keeps_the_images(peer: ScriptedPeer) -> None:
    history = [Message(role=Role.USER, content="Look", images=(PLOT,))]
    refused = Reply.json(400, {"error": {"message": "Invalid image: cannot decode"}})
    peer.script(refused, refused)  # the second: asked again without stream_options
    async with compatible(peer) as model:
        outcome = await consume(model.stream(history))
    assert outcome.error is not None and "cannot decode" in str(outcome.error)
    assert [image_parts(r.body) for r in peer.requests] == [1, 1]


# --- usage reported as zeros -----------------------------------------------------------------


async def test_usage_reported_as_zeros_is_counted_here(peer: ScriptedPeer) -> None:
    peer.script(Reply.sse(*openai_text_stream(["A reply of some words."], usage=(0, 0))))
    async with compatible(peer) as model:
        final = (await consume(model.stream(HI))).response
    assert final.usage.estimated
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0


# --- a model that takes no temperature ----------------------------------------------------------

NO_TEMPERATURE = {
    "error": {
        "message": "Unsupported value: 'temperature' does not support 0.2 with this model. "
        "Only the default (1) value is supported.",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "unsupported_value",
    }
}


async def test_a_model_that_takes_no_temperature_is_asked_again_without_it(
    peer: ScriptedPeer,
) -> None:
    warm = ModelSettings(temperature=0.2)
    peer.script(
        Reply.json(400, NO_TEMPERATURE),
        Reply.sse(*openai_text_stream(["Hello."])),
        Reply.sse(*openai_text_stream(["Again."])),
    )
    async with compatible(peer) as model:
        first = await consume(model.stream(HI, settings=warm))
        second = await consume(model.stream(HI, settings=warm))
    assert (first.response.text, second.response.text) == ("Hello.", "Again.")
    asked, retried, later = (r.body for r in peer.requests)
    assert asked["temperature"] == 0.2
    assert "temperature" not in retried and "temperature" not in later
    assert "stream_options" in retried  # only what was refused is left out


async def test_another_refusal_keeps_the_temperature(peer: ScriptedPeer) -> None:
    refused = Reply.json(400, openai_error(400, "'messages' must contain the word json"))
    peer.script(refused, refused)
    async with compatible(peer) as model:
        outcome = await consume(model.stream(HI, settings=ModelSettings(temperature=0.2)))
    assert outcome.error is not None
    assert [r.body.get("temperature") for r in peer.requests] == [0.2, 0.2]


# --- call ids a Mistral model takes ----------------------------------------------------------


def tool_history() -> list[Message]:
    calls = (
        ToolCall(id="call_Xy12ab34CD56ef78GH90ij12", name="read", arguments='{"p": "a"}'),
        ToolCall(id="toolu_01A", name="read", arguments='{"p": "b"}'),
        ToolCall(id="Ab3dE6gH9", name="read", arguments='{"p": "c"}'),
    )
    return [
        Message(role=Role.USER, content="read a, b and c"),
        Message(role=Role.ASSISTANT, content="", tool_calls=calls),
        *[
            Message(role=Role.TOOL, content=f"text {n}", tool_call_id=c.id, name="read")
            for n, c in enumerate(calls)
        ],
    ]


def call_ids(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the ids of the calls, the ids the results answer) of a request."""
    messages = body["messages"]
    called = [c["id"] for m in messages for c in m.get("tool_calls") or ()]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    return called, answered


async def test_call_ids_a_mistral_model_refuses_are_rewritten_to_fit(peer: ScriptedPeer) -> None:
    said = (
        "Tool call id was call_Xy12ab34CD56ef78GH90ij12 but must be a-z, A-Z, 0-9, with a "
        "length of 9."
    )
    peer.script(
        Reply.json(400, {"object": "error", "message": said, "type": "BadRequestError"}),
        Reply.sse(*openai_text_stream(["a, b and c say text."])),
        Reply.sse(*openai_text_stream(["Again."])),
    )
    async with compatible(peer) as model:
        first = await consume(model.stream(tool_history()))
        again = await consume(model.stream(tool_history()))
    assert (first.response.text, again.response.text) == ("a, b and c say text.", "Again.")
    asked, retried, later = (r.body for r in peer.requests)
    called, answered = call_ids(retried)
    assert called == answered and len(set(called)) == 3
    assert all(len(i) == 9 and i.isascii() and i.isalnum() for i in called)
    assert called[2] == "Ab3dE6gH9"  # an id that fits goes as it is
    assert call_ids(later) == call_ids(retried)
    assert call_ids(asked)[0][0] == "call_Xy12ab34CD56ef78GH90ij12"


# --- what a tool call carries that the server wants back (Gemini's thought signatures) -------

SIGNED = {"google": {"thought_signature": "CsoBAXLI2nx"}}


def gemini_call(call_id: str, name: str, arguments: str, *, extra: bool = True) -> bytes:
    """A tool call as Gemini streams it: whole, without an index, with its signature."""
    call: dict[str, Any] = {"id": call_id, "type": "function"}
    call["function"] = {"name": name, "arguments": arguments}
    if extra:
        call["extra_content"] = SIGNED
    return openai_chunk({"role": "assistant", "tool_calls": [call]}, model="gemini-3-flash")


async def test_a_tool_calls_thought_signature_goes_back_with_it(
    peer: ScriptedPeer, tmp_path: Path
) -> None:
    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"18 degrees in {city}"

    peer.script(
        Reply.sse(
            gemini_call("function-call-1", "get_weather", '{"city": "Paris"}'),
            gemini_call("function-call-2", "get_weather", '{"city": "Rome"}', extra=False),
            openai_chunk({}, finish_reason="stop"),
            OPENAI_DONE,
        ),
        Reply.sse(*openai_text_stream(["Sunny in both."])),
    )
    model = OpenAIProvider(
        "gemini-3-flash", base_url=peer.url + "/v1", retry=RetryPolicy(max_attempts=1)
    )
    interpreter = create_interpreter(
        model, tools=[get_weather], builtin_tools=False, workdir=tmp_path
    )
    async with model:
        [e async for e in interpreter.chat("weather in Paris and Rome?")]
    assert interpreter.session.history[-1].content == "Sunny in both."
    sent = peer.requests[1].body["messages"]
    assistant = next(m for m in sent if m.get("tool_calls"))
    first, second = assistant["tool_calls"]
    assert first["extra_content"] == SIGNED
    assert "extra_content" not in second


async def test_a_thought_signature_goes_to_the_model_that_wrote_it_only(
    peer: ScriptedPeer,
) -> None:
    """After a switch of model (to OpenAI, which refuses fields it does not know in a
    message), what Gemini asked to get back is left out."""
    peer.script(
        Reply.sse(
            gemini_call("function-call-1", "get_weather", '{"city": "Paris"}'),
            openai_chunk({}, finish_reason="stop"),
            OPENAI_DONE,
        ),
        *[Reply.sse(*openai_text_stream(["Sunny."]))] * 2,
    )
    async with compatible(peer) as gemini:
        gemini.model = "gemini-3-flash"
        reply = (await consume(gemini.stream(HI))).response
        history = [
            *HI,
            Message(
                role=Role.ASSISTANT,
                tool_calls=reply.tool_calls,
                metadata={"provider_data": reply.provider_data},
            ),
            Message(role=Role.TOOL, content="18", tool_call_id=reply.tool_calls[0].id),
        ]
        await consume(gemini.stream(history))
        gemini.model = "gpt-4o"
        await consume(gemini.stream(history))
    same, other = (r.body["messages"][1]["tool_calls"][0] for r in peer.requests[1:])
    assert same["extra_content"] == SIGNED
    assert "extra_content" not in other


# --- reasoning a thinking model wants back with its tool calls -------------------------------


def thinking_tool_history() -> list[Message]:
    read = ToolCall(id="call_1", name="read", arguments='{"p": "a"}')
    again = ToolCall(id="call_2", name="read", arguments='{"p": "b"}')
    return [
        Message(role=Role.USER, content="read a, then b"),
        Message(role=Role.ASSISTANT, tool_calls=(read,), reasoning="I should read a."),
        Message(role=Role.TOOL, content="text a", tool_call_id="call_1", name="read"),
        Message(role=Role.ASSISTANT, tool_calls=(again,)),  # written by another model
        Message(role=Role.TOOL, content="text b", tool_call_id="call_2", name="read"),
    ]


async def test_reasoning_a_thinking_model_wants_back_goes_with_its_tool_calls(
    peer: ScriptedPeer,
) -> None:
    said = (
        "thinking is enabled but reasoning_content is missing in assistant tool call "
        "message at index 1"
    )
    peer.script(
        Reply.json(400, openai_error(400, said)),
        Reply.sse(*openai_text_stream(["a and b say text."])),
        Reply.sse(*openai_text_stream(["Again."])),
    )
    async with compatible(peer) as model:
        first = await consume(model.stream(thinking_tool_history()))
        again = await consume(model.stream(thinking_tool_history()))
    assert (first.response.text, again.response.text) == ("a and b say text.", "Again.")
    asked, retried, later = (r.body["messages"] for r in peer.requests)
    assert all("reasoning_content" not in m for m in asked)
    for sent in (retried, later):
        calling = [m for m in sent if m.get("tool_calls")]
        assert [m["reasoning_content"] for m in calling] == ["I should read a.", ""]
        assert all("reasoning_content" not in m for m in sent if not m.get("tool_calls"))
