"""The offline models that ship as product code: scripted, function and echo."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.function import FunctionInfo, FunctionModel
from connectors.scripted import EchoModel, ScriptedModel, call, calls, split_tokens
from gui_agent.exceptions import ModelResponseError, ModelServerError
from gui_agent.hooks import AgentHooks
from gui_agent.llm import LLMProvider
from gui_agent.quick import create_interpreter
from gui_agent.session import Session
from schema import (
    Message,
    ModelReasoningDelta,
    ModelResponse,
    ModelTextDelta,
    Role,
    ToolCall,
    ToolResult,
)


async def collect(model: LLMProvider, text: str = "hi") -> list[object]:
    return [p async for p in model.stream([Message(role=Role.USER, content=text)])]


async def test_scripted_model_streams_words_records_requests_and_raises_queued_errors() -> None:
    model = ScriptedModel(["one two three", call("add", a=1), ModelServerError("boom")])
    parts = await collect(model, "first")
    assert [p.text for p in parts if isinstance(p, ModelTextDelta)] == ["one ", "two ", "three"]
    final = parts[-1]
    assert isinstance(final, ModelResponse) and final.usage.requests == 1
    response = await model.generate([Message(role=Role.USER, content="second")])
    assert response.tool_calls[0].name == "add"
    assert response.tool_calls[0].parsed_arguments() == {"a": 1}
    with pytest.raises(ModelServerError):
        await collect(model)
    with pytest.raises(ModelResponseError, match="no more replies"):
        await collect(model)
    assert [r.messages[-1].content for r in model.requests[:2]] == ["first", "second"]
    assert isinstance(model, LLMProvider)


def test_calls_builds_parallel_tool_calls_with_ids() -> None:
    response = calls(("a", {"x": 1}, "id1"), ("b", {}))
    assert [c.name for c in response.tool_calls] == ["a", "b"]
    assert response.tool_calls[0].id == "id1" and response.tool_calls[1].id.startswith("call_")


def test_split_tokens_keeps_every_character() -> None:
    text = "  a  b\n\nc "
    assert "".join(split_tokens(text)) == text


async def test_function_model_gets_messages_and_can_stream_reasoning() -> None:
    seen: list[FunctionInfo] = []

    async def think(messages: list[Message], info: FunctionInfo):  # type: ignore[no-untyped-def]
        seen.append(info)
        yield ModelReasoningDelta(text="hmm")
        yield "answer: "
        yield messages[-1].content.upper()

    model = FunctionModel(think)
    parts = await collect(model, "shout")
    assert isinstance(parts[0], ModelReasoningDelta)
    final = parts[-1]
    assert isinstance(final, ModelResponse)
    assert final.text == "answer: SHOUT" and final.reasoning == "hmm"
    assert seen[0].call_number == 1


async def test_echo_model_answers_with_what_was_said() -> None:
    response = await EchoModel(delay_s=0).generate([Message(role=Role.USER, content="ping")])
    assert "ping" in response.text and "echo" in response.text


class Recorder(AgentHooks):
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def on_start(self, session: Session, prompt: Message) -> None:
        self.calls.append("start")

    async def on_end(self, session: Session, outcome: str) -> None:
        self.calls.append(f"end:{outcome}")

    async def on_error(self, session: Session, error: BaseException) -> None:
        self.calls.append(f"error:{type(error).__name__}")

    async def on_llm_start(self, session: Session, messages: list[Message]) -> None:
        self.calls.append("llm_start")

    async def on_llm_end(self, session: Session, response: ModelResponse) -> None:
        self.calls.append("llm_end")

    async def on_tool_start(self, session: Session, call: ToolCall) -> None:
        self.calls.append(f"tool_start:{call.name}")

    async def on_tool_end(self, session: Session, result: ToolResult) -> None:
        self.calls.append(f"tool_end:{result.name}")


async def test_lifecycle_hooks_are_called_in_order(tmp_path: Path) -> None:
    hooks = Recorder()
    interpreter = create_interpreter(
        ScriptedModel([call("list_files"), "done"]), workdir=tmp_path, hooks=hooks
    )
    _ = [e async for e in interpreter.chat("go")]
    assert hooks.calls == [
        "start",
        "llm_start",
        "llm_end",
        "tool_start:list_files",
        "tool_end:list_files",
        "llm_start",
        "llm_end",
        "end:completed",
    ]


async def test_errors_reach_on_error_and_a_failing_hook_does_not_break_the_turn(
    tmp_path: Path,
) -> None:
    class Broken(Recorder):
        async def on_llm_start(self, session: Session, messages: list[Message]) -> None:
            raise RuntimeError("hook bug")

    hooks = Broken()
    interpreter = create_interpreter(
        ScriptedModel(["fine", ModelServerError("down")]), workdir=tmp_path, hooks=hooks
    )
    _ = [e async for e in interpreter.chat("one")]
    assert interpreter.session.history[-1].content == "fine"
    _ = [e async for e in interpreter.chat("two")]
    assert "error:ModelServerError" in hooks.calls and hooks.calls[-1] == "end:error"


@pytest.mark.parametrize("returned", [None, 42], ids=["forgot to return", "a number"])
async def test_a_model_function_returning_nothing_usable_says_what_to_return(
    returned: object,
) -> None:
    model = FunctionModel(lambda messages, info: returned)  # type: ignore[arg-type,return-value]
    with pytest.raises(ModelResponseError, match="return a str, a ModelResponse"):
        await collect(model)
