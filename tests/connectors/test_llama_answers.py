"""The embedded SmolLM2 model answers in its own words when tools are on offer.

With tools, the model writes grammar-constrained JSON, and the system prompt shows it the
answer's form. A 135M model copies what it is shown: when the form held a stand-in
("<your answer>"), it was the whole reply to "hello" and to two of the questions below at
the app's own settings (temperature 0.2), for both seeds. The reply must not be a piece
of the instructions it was given, whatever they say.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from connectors.llama_local import LlamaLocalProvider
from connectors.llama_mapping import plan_tool_use, tool_instructions
from gui_agent.tools.builtin import default_tools
from schema import Message, ModelResponse, Role, SessionSettings
from tests.connectors.llama_kit import loaded_model

pytestmark = pytest.mark.llama
module_loop = pytest.mark.asyncio(loop_scope="module")

COPIED_BEFORE = (
    "hello",
    "Write a python function that reverses a string.",
    "Suggest a healthy breakfast.",
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider() -> LlamaLocalProvider:
    return await loaded_model()  # the app's settings (temperature 0.2); seeds below


@module_loop
@pytest.mark.parametrize("seed", [7, 11])
async def test_the_reply_is_no_copy_of_the_answer_form_it_was_shown(
    provider: LlamaLocalProvider, seed: int
) -> None:
    provider.seed = seed
    tools = default_tools().schemas()
    system = Message(role=Role.SYSTEM, content=SessionSettings().system_prompt)
    answered = 0
    for question in COPIED_BEFORE:
        messages = [system, Message(role=Role.USER, content=question)]
        plan = plan_tool_use(messages, tools, "auto")
        assert plan is not None and plan.allow_answer
        shown = f"{system.content}\n{tool_instructions(plan)}"
        final = None
        async for part in provider.stream(messages, tools=tools):
            if isinstance(part, ModelResponse):
                final = part
        assert final is not None
        if final.tool_calls:  # a call is no copied stand-in (the grammar names the tool)
            continue
        reply = final.text.strip()
        assert reply, f"an empty answer to {question!r}"
        assert reply not in shown, f"{question!r} was answered with {reply!r}, from the prompt"
        answered += 1
    assert answered, "every question got a tool call: no answer was checked"
