"""The memory window keeps the model's latest tool calls with their results, even when a
result alone is bigger than the session's token budget."""

from __future__ import annotations

from pathlib import Path

from connectors.function import FunctionInfo, FunctionModel
from gui_agent.memory import SlidingWindowMemory
from gui_agent.quick import create_interpreter
from gui_agent.tools import tool
from schema import Message, ModelResponse, Role, ToolCall

BIG = "word " * 20_000  # about 20,000 tokens


@tool(max_output_chars=200_000)
def fetch_report() -> str:
    """Fetch the (very long) report."""
    return BIG


async def test_a_tool_result_over_the_budget_still_reaches_the_model(tmp_path: Path) -> None:
    sent: list[list[Message]] = []

    def model(messages: list[Message], info: FunctionInfo) -> str | ModelResponse:
        sent.append(messages)
        if any(m.role is Role.TOOL for m in messages):
            return "The report is long."
        if info.call_number > 3:  # never shown its result: it would ask again and again
            return "I never got the report."
        call = ToolCall(id=f"call_{info.call_number}", name="fetch_report", arguments="{}")
        return ModelResponse(tool_calls=(call,))

    interpreter = create_interpreter(FunctionModel(model), tools=[fetch_report], workdir=tmp_path)
    settings = interpreter.session.settings.model_copy(update={"memory_token_budget": 2_000})
    await interpreter.update(settings=settings)

    events = [event async for event in interpreter.chat("Summarise the report.")]

    assert len(sent) == 2  # one call, then the answer: not the same call again
    second = sent[1]
    assert [m.role for m in second] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL]
    assert second[-1].content == BIG and second[-1].tool_call_id == "call_1"
    assert interpreter.session.history[-1].content == "The report is long."
    assert [e.outcome.value for e in events if e.type == "run_finished"] == ["completed"]
    # The memory panel tells the truth: the window is over the budget.
    memory = [e for e in events if e.type == "memory_updated"][-1]
    assert memory.token_count > 2_000


def test_only_the_newest_calls_are_kept_over_the_budget() -> None:
    def exchange(n: int, size: int) -> list[Message]:
        call = ToolCall(id=f"c{n}", name="fetch_report", arguments="{}")
        return [
            Message(role=Role.ASSISTANT, content="", tool_calls=(call,)),
            Message(role=Role.TOOL, content="word " * size, tool_call_id=call.id),
        ]

    question = Message(role=Role.USER, content="go")
    history = [question, *exchange(1, 5_000), *exchange(2, 5_000)]

    window = SlidingWindowMemory().window(history, token_budget=1_000)

    # the question and the latest call with its result; the older call slid out whole
    assert [m.id for m in window.messages] == [question.id, history[3].id, history[4].id]
    assert window.dropped == 2
