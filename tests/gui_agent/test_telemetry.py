"""Tracing: a span per turn, with model and tool calls nested under it."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from connectors.scripted import ScriptedModel, call
from gui_agent.exceptions import ModelServerError
from gui_agent.hooks import AgentHooks
from gui_agent.quick import create_interpreter
from gui_agent.telemetry import TracingHooks, tracing_from_env


def tracer() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def test_a_turn_with_a_tool_produces_nested_spans(tmp_path: Path) -> None:
    provider, exporter = tracer()
    interpreter = create_interpreter(
        ScriptedModel([call("list_files"), "done"]),
        workdir=tmp_path,
        hooks=TracingHooks(provider),
    )
    _ = [e async for e in interpreter.chat("go")]
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"gui_agent.turn", "gui_agent.llm", "gui_agent.tool list_files"}
    turn = spans["gui_agent.turn"]
    assert turn.attributes is not None and turn.attributes["gui_agent.outcome"] == "completed"
    for name in ("gui_agent.llm", "gui_agent.tool list_files"):
        parent = spans[name].parent
        assert parent is not None and parent.span_id == turn.context.span_id
    llm_spans = [s for s in exporter.get_finished_spans() if s.name == "gui_agent.llm"]
    assert len(llm_spans) == 2


async def test_a_failed_turn_is_marked_as_an_error(tmp_path: Path) -> None:
    provider, exporter = tracer()
    interpreter = create_interpreter(
        ScriptedModel([ModelServerError("down")]), workdir=tmp_path, hooks=TracingHooks(provider)
    )
    _ = [e async for e in interpreter.chat("go")]
    turn = next(s for s in exporter.get_finished_spans() if s.name == "gui_agent.turn")
    assert not turn.status.is_ok and turn.events[0].name == "exception"


def test_tracing_is_off_unless_asked_for() -> None:
    assert type(tracing_from_env({})) is AgentHooks
    assert type(tracing_from_env({"GUI_AGENT_TRACE": "bogus"})) is AgentHooks
    assert isinstance(tracing_from_env({"GUI_AGENT_TRACE": "console"}), TracingHooks)
