"""OpenTelemetry tracing through the lifecycle hooks: a span per turn, model call and tool call.

Off unless asked for: pass `TracingHooks()` as the hooks of a SessionManager or interpreter,
with a tracer provider of your own, or call `tracing_from_env()` (the CLI does), which sets
one up when `GUI_AGENT_TRACE=console` (spans printed to stderr). Nothing is sent anywhere
by default.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace import Span, Status, StatusCode

from gui_agent.hooks import AgentHooks
from gui_agent.log_text import loggable
from schema import Message, ModelResponse, ToolCall, ToolResult

if TYPE_CHECKING:
    from gui_agent.session import Session

logger = logging.getLogger(__name__)

TRACER_NAME = "gui_agent"


class TracingHooks(AgentHooks):
    """Opens and closes spans as a turn runs. Spans of one session nest: turn > llm | tool."""

    def __init__(self, provider: trace.TracerProvider | None = None) -> None:
        self._tracer = (provider or trace.get_tracer_provider()).get_tracer(TRACER_NAME)
        self._turns: dict[str, Span] = {}
        self._llm: dict[str, Span] = {}
        self._tools: dict[tuple[str, str], Span] = {}

    def _child(self, session: Session, name: str) -> Span:
        parent = self._turns.get(session.id)
        context = trace.set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(name, context=context)

    async def on_start(self, session: Session, prompt: Message) -> None:
        span = self._tracer.start_span("gui_agent.turn")
        span.set_attribute("gui_agent.session_id", session.id)
        span.set_attribute("gui_agent.agent", session.agent.value)
        span.set_attribute("gui_agent.autochat", bool(prompt.metadata.get("autochat")))
        self._turns[session.id] = span

    async def on_llm_start(self, session: Session, messages: list[Message]) -> None:
        span = self._child(session, "gui_agent.llm")
        span.set_attribute("gui_agent.messages", len(messages))
        self._llm[session.id] = span

    async def on_llm_end(self, session: Session, response: ModelResponse) -> None:
        span = self._llm.pop(session.id, None)
        if span is not None:
            span.set_attribute("gen_ai.usage.input_tokens", response.usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", response.usage.output_tokens)
            span.set_attribute("gui_agent.tool_calls", len(response.tool_calls))
            if response.model:
                span.set_attribute("gen_ai.response.model", response.model)
            span.end()

    async def on_tool_start(self, session: Session, call: ToolCall) -> None:
        span = self._child(session, f"gui_agent.tool {call.name}")
        span.set_attribute("gui_agent.tool", call.name)
        self._tools[(session.id, call.id)] = span

    async def on_tool_end(self, session: Session, result: ToolResult) -> None:
        span = self._tools.pop((session.id, result.call_id), None)
        if span is not None:
            span.set_attribute("gui_agent.tool.duration_ms", result.duration_ms)
            if result.is_error:
                span.set_status(Status(StatusCode.ERROR, result.content[:200]))
            span.end()

    async def on_error(self, session: Session, error: BaseException) -> None:
        span = self._turns.get(session.id)
        if span is not None:
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, str(error)[:200]))

    async def on_end(self, session: Session, outcome: str) -> None:
        for key in [k for k in self._tools if k[0] == session.id]:
            self._tools.pop(key).end()
        llm = self._llm.pop(session.id, None)
        if llm is not None:
            llm.end()
        span = self._turns.pop(session.id, None)
        if span is not None:
            span.set_attribute("gui_agent.outcome", outcome)
            span.end()


def tracing_from_env(env: Mapping[str, str]) -> AgentHooks:
    """TracingHooks printing spans to stderr when GUI_AGENT_TRACE=console, else no-op hooks."""
    mode = env.get("GUI_AGENT_TRACE", "").strip().lower()
    if not mode:
        return AgentHooks()
    if mode != "console":
        logger.warning(
            "GUI_AGENT_TRACE=%s is not supported (use 'console'); tracing off", loggable(mode)
        )
        return AgentHooks()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    return TracingHooks(provider)
