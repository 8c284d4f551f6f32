"""One model call of a turn, streamed, and what the turn's model calls cost.

`model_step` windows the history (the memory), streams the model's reply as events, keeps
the reply in the history (repaired first, see `gui_agent.agents.replies`) and counts its
usage against the turn and the session. Every role makes its model calls through it; the
calls of one turn share a `Turn`. `budget_spent` says when the session's token budget ends
the turn, and `charge_unfinished` counts a call that ended before its usage came.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from gui_agent.agents.base import AgentDeps
from gui_agent.agents.replies import distinct_calls, valid_response, without_calls
from gui_agent.autochat import goal_to_pin
from gui_agent.exceptions import ModelResponseError
from gui_agent.hooks import call_hook
from gui_agent.session import Session
from schema import (
    AgentName,
    Event,
    MemoryUpdated,
    Message,
    MessageCompleted,
    MessageStarted,
    ModelResponse,
    ModelRetrying,
    ModelRetryNotice,
    ModelSettings,
    ModelTextDelta,
    Role,
    RunFinished,
    RunOutcome,
    SessionSettings,
    TextDelta,
    Usage,
    UsageReported,
    new_id,
    valid_text,
)
from schema.builders import builder

# The events and the reply every model call builds (see `schema.builders`).
_memory_updated = builder(MemoryUpdated)
_message_started = builder(MessageStarted)
_text_delta = builder(TextDelta)
_message = builder(Message)
_message_completed = builder(MessageCompleted)
_usage_reported = builder(UsageReported)

__all__ = [
    "Turn",
    "budget_spent",
    "charge_unfinished",
    "memory_event",
    "model_step",
    "reply_metadata",
]


FILTERED = "filtered"
"""Metadata key (True) of a reply the provider's content filter stopped, or the model
refused (finish reason `content_filter`): front ends say so beside it, as the reply may be
cut short or empty with no other word why."""


def reply_metadata(final: ModelResponse, deps: AgentDeps) -> dict[str, object]:
    """What a reply message records about its model call."""
    metadata: dict[str, object] = {"model": final.model or deps.provider.name}
    if final.finish_reason == "length":  # the model hit its output limit mid-reply
        metadata["cut_off"] = True
    elif final.finish_reason == "content_filter":  # (an Anthropic refusal maps to it too)
        metadata[FILTERED] = True
    if final.provider_data:
        metadata["provider_data"] = final.provider_data
    return metadata


def memory_event(session: Session, deps: AgentDeps) -> tuple[list[Message], MemoryUpdated]:
    """The context window for the next model call, and the event that shows it."""
    window = deps.memory.window(
        session.history,
        system_prompt=session.settings.system_prompt,
        goal=goal_to_pin(session) if session.autochat.enabled else None,
        exchanges=session.settings.memory_exchanges,
        token_budget=session.settings.memory_token_budget,
    )
    event = _memory_updated(
        {
            "message_ids": window.message_ids,
            "token_count": window.token_count,
            "token_estimated": window.token_estimated,
            "goal": window.goal,
            "goal_pinned": window.goal_pinned,
            "dropped": window.dropped,
        }
    )
    return list(window.messages), event


@dataclass(slots=True, eq=False)
class Turn:
    """What the model calls of one turn share, whichever roles make them: the usage so far
    (reported as the turn's usage) and the last model response, to act on."""

    usage: Usage = field(default_factory=Usage)
    response: ModelResponse | None = None
    _settings: tuple[SessionSettings, ModelSettings] | None = None

    def last_response(self) -> ModelResponse:
        assert self.response is not None, "no model call in this turn yet"
        return self.response

    def model_settings(self, session: Session) -> ModelSettings:
        """What the session's settings ask of the model, built again only when they change."""
        known = self._settings
        if known is None or known[0] is not session.settings:
            settings = session.settings
            known = self._settings = (
                settings,
                ModelSettings(temperature=settings.temperature, max_tokens=settings.max_tokens),
            )
        return known[1]


async def model_step(
    session: Session,
    deps: AgentDeps,
    *,
    agent: AgentName,
    turn: Turn,
    use_tools: bool = True,
    instruction: str | None = None,
) -> AsyncIterator[Event]:
    """One model call on the memory window, streamed: memory_updated, message_started,
    model_retrying for each retry the provider announces before the reply begins, deltas,
    message_completed (the reply, appended to the history), usage. The response
    (for its tool calls) is left in `turn.response`, and its usage added to `turn.usage`.

    `instruction` goes to the model as a SYSTEM message after the window, for this call
    only (it is not kept in the history)."""
    messages, memory = memory_event(session, deps)
    if instruction:
        messages.append(Message(role=Role.SYSTEM, content=instruction))
    yield memory
    message_id = new_id()
    yield _message_started({"message_id": message_id, "agent": agent})
    if deps.hooked:
        await call_hook(deps.hooks.on_llm_start(session, messages))
    tools = deps.tools.schemas() if use_tools else ()
    final: ModelResponse | None = None
    settings = turn.model_settings(session)
    streamed = 0  # characters of text and reasoning so far
    try:
        async for part in deps.provider.stream(messages, tools=tools, settings=settings):
            if isinstance(part, ModelTextDelta):
                text = part.text
                streamed += len(text)
                yield _text_delta(
                    {
                        "message_id": message_id,
                        "delta": text if text.isascii() else valid_text(text),
                    }
                )
            elif isinstance(part, ModelResponse):
                final = part
            elif isinstance(part, ModelRetryNotice):  # (rare: after the common parts)
                yield ModelRetrying(
                    message_id=message_id,
                    agent=agent,
                    attempt=part.attempt,
                    max_attempts=part.max_attempts,
                    wait_s=part.wait_s,
                    reason=part.reason,
                )
            else:
                streamed += len(part.text)
                yield TextDelta(
                    message_id=message_id, delta=valid_text(part.text), channel="reasoning"
                )
    except BaseException:  # Stop, or an error after the model began to answer
        if streamed:
            charge_unfinished(session, turn, memory.token_count, streamed)
        raise
    if final is None:  # the person saw what streamed: an empty reply would lose it
        raise ModelResponseError(
            f"the model stream of {deps.provider.name!r} ended without its final response "
            "(an LLMProvider's stream must end with a ModelResponse)",
            provider=deps.provider.name,
        )
    final = valid_response(final)
    ignored: list[str] = []
    if final.tool_calls:
        if use_tools:
            final = distinct_calls(final)
        else:  # asked for no tools: calls nobody would answer go, and the reply says so
            final, ignored = without_calls(final, agent)
    if deps.hooked:
        await call_hook(deps.hooks.on_llm_end(session, final))
    metadata = reply_metadata(final, deps)
    if ignored:
        metadata["ignored_tool_calls"] = ignored
    reply = _message(
        {
            "id": message_id,
            "role": Role.ASSISTANT,
            "content": final.text,
            "reasoning": final.reasoning,
            "tool_calls": final.tool_calls,
            "agent": agent,
            "metadata": metadata,
        }
    )
    session.add(reply)
    yield _message_completed({"message": reply})
    session.usage = session.usage + final.usage
    turn.usage = turn.usage + final.usage
    turn.response = final
    yield _usage_reported({"turn": turn.usage, "total": session.usage})


def budget_spent(session: Session) -> RunFinished | None:
    """The end of the turn when the session's token budget is used up (AutoChat's, workers'
    calls included), or None while there is room."""
    limit = session.token_limit
    if limit is None or session.usage.total_tokens < limit:
        return None
    return RunFinished(
        outcome=RunOutcome.BUDGET,
        detail=f"token budget reached ({session.usage.total_tokens} tokens)",
    )


def charge_unfinished(session: Session, turn: Turn, input_tokens: int, streamed: int) -> None:
    """Count a model call that ended before its usage came (the server sends it last): the
    window it read (`input_tokens`, the memory's count) and about a token per 4 characters
    of what it streamed (`streamed`), marked estimated. Without this a long reply the person
    stopped cost nothing in the usage panel or against a token budget. The interpreter
    announces it (`Session.unreported_usage`) when the turn ends."""
    usage = Usage(
        input_tokens=input_tokens, output_tokens=-(-streamed // 4), requests=1, estimated=True
    )
    session.usage = session.usage + usage
    turn.usage = turn.usage + usage
    session.unreported_usage = UsageReported(turn=turn.usage, total=session.usage)
