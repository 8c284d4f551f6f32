"""A model call that ends before its usage arrives (Stop mid-reply, a connection lost
mid-stream) still counts: the window it read and what it streamed, marked estimated, in the
turn's and the session's usage and in a `usage` event before the turn's end."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from connectors.scripted import call
from gui_agent.exceptions import ModelConnectionError
from gui_agent.tools import tool
from schema import (
    Message,
    MessageStatus,
    ModelSettings,
    ModelStreamPart,
    ModelTextDelta,
    RunFinished,
    RunOutcome,
    TextDelta,
    ToolSchema,
    UsageReported,
)
from tests.gui_agent.helpers import make, next_event


@tool
def look() -> str:
    """Look around."""
    return "a quiet room"


async def test_a_reply_stopped_mid_stream_counts_what_it_read_and_wrote(tmp_path: Path) -> None:
    long_reply = " ".join(f"word{i}" for i in range(2000))
    interpreter, _ = make(
        tmp_path, [call("look"), long_reply, "glad to help"], tools=[look], delay_s=0.005
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("look, then write a lot")
        first = await next_event(sub, lambda e: isinstance(e, UsageReported))
        assert isinstance(first, UsageReported) and first.turn.requests == 1  # the tool step
        for _ in range(3):
            await next_event(sub, lambda e: isinstance(e, TextDelta))
        assert await interpreter.stop() is True
        after = sub.pending()
    partial = interpreter.session.history[-1]
    assert partial.status is MessageStatus.INTERRUPTED and partial.content
    usages = [e for e in after if isinstance(e, UsageReported)]
    ends = [e for e in after if isinstance(e, RunFinished)]
    assert len(usages) == 1 and ends and usages[0].seq < ends[0].seq
    said = usages[0]
    # both calls of the turn: the finished tool step and the stopped reply, estimated
    assert said.turn.requests == 2 and said.turn.estimated
    assert said.turn.output_tokens >= first.turn.output_tokens + len(partial.content) // 4
    assert said.turn.input_tokens > first.turn.input_tokens
    assert said.total == interpreter.session.usage
    assert interpreter.session.unreported_usage is None
    # the next turn adds to that total
    events = [e async for e in interpreter.chat("thanks")]
    last = [e for e in events if isinstance(e, UsageReported)][-1]
    assert last.total.requests == 3 and last.total.input_tokens > said.total.input_tokens


class _DropsMidReply:
    """A server whose connection is lost after a few words."""

    name = "drops"

    async def generate(self, *args: object, **kwargs: object) -> object:
        raise NotImplementedError

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelStreamPart]:
        for word in ("The ", "answer ", "is "):
            yield ModelTextDelta(text=word)
        raise ModelConnectionError("drops: the connection was lost mid-reply")


async def test_a_reply_cut_by_a_lost_connection_counts_what_streamed(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, _DropsMidReply())  # type: ignore[arg-type]
    events = [e async for e in interpreter.chat("what is it?")]
    ends = [e for e in events if isinstance(e, RunFinished)]
    assert ends and ends[0].outcome is RunOutcome.ERROR
    usages = [e for e in events if isinstance(e, UsageReported)]
    assert len(usages) == 1 and usages[0].seq < ends[0].seq
    assert usages[0].turn.requests == 1 and usages[0].turn.estimated
    assert usages[0].turn.output_tokens == len("The answer is ") // 4 + 1
    assert usages[0].turn.input_tokens > 0
    assert interpreter.session.usage == usages[0].total
    assert interpreter.session.history[-1].content == "The answer is "


async def test_a_call_refused_before_any_answer_costs_nothing(tmp_path: Path) -> None:
    class Refuses(_DropsMidReply):
        async def stream(
            self,
            messages: Sequence[Message],
            *,
            tools: Sequence[ToolSchema] = (),
            settings: ModelSettings | None = None,
        ) -> AsyncIterator[ModelStreamPart]:
            raise ModelConnectionError("refuses: connection refused")
            yield ModelTextDelta(text="")  # an async generator that never streams

    interpreter, _ = make(tmp_path, Refuses())  # type: ignore[arg-type]
    events = [e async for e in interpreter.chat("hello?")]
    assert not [e for e in events if isinstance(e, UsageReported)]
    assert interpreter.session.usage.requests == 0
