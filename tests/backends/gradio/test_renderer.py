"""The Gradio page's pure parts: events → chatbot messages, panels, Markdown safety, delta
coalescing, and the streaming driver's update count and cleanup (no browser needed)."""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from backends.gradio.assets import ASSETS_DIR, icon_file, load_assets
from backends.gradio.chat_entries import GAP
from backends.gradio.coalesce import (
    MAX_INTERVAL_S,
    Coalescer,
    merge_deltas,
    paced_interval,
)
from backends.gradio.layout import ELEM_IDS, build_page
from backends.gradio.markdown import escape_html, fence, image_markdown, json_or_text
from backends.gradio.message_text import user_text
from backends.gradio.panels import (
    MAX_TURNS_SHOWN,
    MemoryInfo,
    PanelState,
    badge_html,
    code_language,
    memory_markdown,
    usage_markdown,
)
from backends.gradio.renderer import (
    ERROR_MARK,
    INTERRUPTED_MARK,
    ChatView,
    agent_header,
    tool_step_id,
)
from backends.gradio.stream import PageView, stream_session
from backends.gradio.tool_steps import APPROVAL_POINTER, LIVE_SHOWN_CHARS, LIVE_TITLE
from connectors.scripted import ScriptedModel, call
from gui_agent.manager import INTERRUPTED_NOTE
from gui_agent.quick import create_interpreter
from gui_agent.wording import AUTOCHAT_STILL_ON
from schema import (
    AgentName,
    AgentSwitched,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    AutoChatStopped,
    AutoChatStopReason,
    AutoChatTurn,
    ErrorEvent,
    Event,
    ImagePart,
    InterpreterState,
    MemoryUpdated,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    MessageType,
    PermissionMode,
    Role,
    SessionUpdated,
    StateChanged,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    ToolCallOutput,
    ToolCallStarted,
    ToolResult,
    Usage,
    UsageReported,
)
from tests.backends.gradio.kit import make_page

ICONS = {agent.value: f"data:image/svg+xml;base64,{agent.value}" for agent in AgentName}
PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQAB"
    "pfZFQAAAAABJRU5ErkJggg=="
)


def text_of(message: dict[str, Any]) -> str:
    [content] = message["content"]
    assert content["type"] == "text"
    return str(content["text"])


def assistant(content: str = "", **fields: Any) -> Message:
    fields.setdefault("agent", AgentName.AGENT_EXECUTOR)
    return Message(role=Role.ASSISTANT, content=content, **fields)


def user(content: str, **fields: Any) -> Message:
    return Message(role=Role.USER, content=content, **fields)


# -- messages of every type ------------------------------------------------------------------


def test_user_message_is_a_user_bubble_with_its_text() -> None:
    view = ChatView.from_history([user("What is **2+2**?")], icons=ICONS)
    [message] = view.messages()
    assert message["role"] == "user"
    assert text_of(message) == "What is **2+2**?"
    assert message["metadata"] is None


def test_assistant_message_shows_agent_name_and_icon() -> None:
    view = ChatView.from_history([assistant("Four.", agent=AgentName.THOUGHT)], icons=ICONS)
    [message] = view.messages()
    assert message["role"] == "assistant"
    text = text_of(message)
    assert 'data-agent="THOUGHT"' in text
    assert ">Thought</span>" in text
    assert ICONS["THOUGHT"] in text
    assert text.endswith("Four.")


def test_every_role_has_an_icon_file_and_the_header_embeds_it() -> None:
    assets = load_assets()
    for agent in AgentName:
        assert icon_file(agent).is_file(), agent
        assert assets.icons[agent.value].startswith("data:image/svg+xml;base64,")
        assert assets.icons[agent.value] in agent_header(agent, assets.icons)
    assert icon_file(AgentName.CREW).parent == ASSETS_DIR
    assert "__GUI_AGENT_CSS__" not in assets.page_js
    assert "Escape" in assets.page_js


def test_code_message_is_fenced_with_its_language() -> None:
    code = "def f():\n    return '<b>'\n"
    view = ChatView.from_history(
        [assistant(code, type=MessageType.CODE, language="python")], icons=ICONS
    )
    text = text_of(view.messages()[0])
    assert "```python\ndef f():\n    return '<b>'\n```" in text


def test_console_message_is_fenced_as_output() -> None:
    view = ChatView.from_history([assistant("42\n<done>", type=MessageType.CONSOLE)], icons=ICONS)
    assert "```output\n42\n<done>\n```" in text_of(view.messages()[0])


def test_image_message_shows_the_image_inline_as_a_data_url() -> None:
    image = ImagePart(media_type="image/png", data=PNG)
    view = ChatView.from_history(
        [assistant("A plot:", type=MessageType.IMAGE, images=(image,))], icons=ICONS
    )
    text = text_of(view.messages()[0])
    assert "A plot:" in text
    assert f"](data:image/png;base64,{PNG})" in text


def test_function_message_is_shown_as_json() -> None:
    view = ChatView.from_history(
        [assistant('{"a": 1, "b": [2]}', type=MessageType.FUNCTION)], icons=ICONS
    )
    text = text_of(view.messages()[0])
    assert '```json\n{\n  "a": 1,\n  "b": [\n    2\n  ]\n}\n```' in text


@pytest.mark.parametrize(
    ("decision", "label"),
    [("allow_once", "✓ **Allowed once**"), ("deny", "✗ **Denied**")],
)
def test_confirmation_has_its_own_look(decision: str, label: str) -> None:
    message = Message(
        role=Role.ASSISTANT,
        type=MessageType.CONFIRMATION,
        content=f"Run Python code: {decision}",
        metadata={"approval_id": "a1", "decision": decision, "by": "user"},
    )
    [rendered] = ChatView.from_history([message], icons=ICONS).messages()
    text = text_of(rendered)
    assert label in text
    assert text.endswith("· Run Python code")  # the decision is said once, in words
    assert 'class="ga-confirmation"' in text
    assert "data-agent" not in text  # a confirmation is the app speaking, not an agent


def test_html_in_messages_is_shown_as_text_and_code_is_left_alone() -> None:
    hostile = "<script>alert(1)</script> <img src=x onerror=alert(2)> `<b>ok</b>`"
    view = ChatView.from_history([user(hostile), assistant(hostile)], icons=ICONS)
    for message in view.messages():
        text = text_of(message)
        assert "<script>" not in text
        assert "<img src=x" not in text
        assert "&lt;script>alert(1)&lt;/script>" in text
        assert "`<b>ok</b>`" in text


def test_autochat_continuation_is_labelled() -> None:
    prompt = user("Continue.", metadata={"autochat": True, "autochat_turn": 2})
    assert "AutoChat turn 2:" in text_of(ChatView.from_history([prompt]).messages()[0])


def test_reasoning_is_a_collapsible_step_before_the_reply() -> None:
    view = ChatView.from_history([assistant("Yes.", reasoning="Because <x>.")], icons=ICONS)
    reasoning, reply = view.messages()
    assert reasoning["metadata"]["title"] == "Reasoning"
    assert reasoning["metadata"]["status"] == "done"
    assert text_of(reasoning) == "Because &lt;x>."
    assert text_of(reply).endswith("Yes.")


# -- streaming ------------------------------------------------------------------------------


def test_deltas_append_to_the_streaming_reply_and_completion_finalises_it() -> None:
    view = ChatView(icons=ICONS)
    assert view.apply(MessageStarted(message_id="m1", agent=AgentName.AGENT_EXECUTOR))
    for piece in ("Hel", "lo ", "<world>"):
        assert view.apply(TextDelta(message_id="m1", delta=piece))
    text = text_of(view.messages()[0])
    assert text.endswith("Hello &lt;world>")
    assert ">Executor</span>" in text
    final = assistant("Hello <world>", id="m1")
    assert view.apply(MessageCompleted(message=final))
    assert len(view.messages()) == 1
    assert view.history_ids == ("m1",)


def test_interrupted_reply_keeps_its_partial_text_and_is_marked() -> None:
    view = ChatView(icons=ICONS)
    view.apply(MessageStarted(message_id="m1", agent=AgentName.AGENT_EXECUTOR))
    view.apply(TextDelta(message_id="m1", delta="Half a thou"))
    partial = assistant("Half a thou", id="m1", status=MessageStatus.INTERRUPTED)
    view.apply(MessageCompleted(message=partial))
    text = text_of(view.messages()[0])
    assert "Half a thou" in text
    assert text.endswith(INTERRUPTED_MARK)


def test_failed_reply_is_marked_as_an_error() -> None:
    view = ChatView.from_history([assistant("Partial", status=MessageStatus.ERROR)])
    assert text_of(view.messages()[0]).endswith(ERROR_MARK)


def test_reasoning_deltas_stream_into_a_pending_step() -> None:
    view = ChatView(icons=ICONS)
    view.apply(MessageStarted(message_id="m1", agent=AgentName.THOUGHT))
    view.apply(TextDelta(message_id="m1", delta="Let me think", channel="reasoning"))
    reasoning, _reply = view.messages()
    assert reasoning["metadata"] == {"title": "Reasoning", "status": "pending"}
    assert text_of(reasoning) == "Let me think"
    view.apply(MessageCompleted(message=assistant("Done", id="m1", reasoning="Let me think")))
    assert view.messages()[0]["metadata"]["status"] == "done"


def test_deltas_of_unknown_messages_are_ignored() -> None:
    view = ChatView()
    assert not view.apply(TextDelta(message_id="nope", delta="x"))
    assert view.messages() == []


# -- tool calls and approvals ----------------------------------------------------------------


def _tool_call_messages() -> tuple[ToolCall, Message, Message]:
    tool_call = ToolCall(id="c1", name="run_python", arguments=json.dumps({"code": "print(42)"}))
    asking = assistant("Let me compute.", id="m1", tool_calls=(tool_call,))
    result = Message(
        role=Role.TOOL,
        type=MessageType.CONSOLE,
        content="42\nexit code 0",
        tool_call_id="c1",
        name="run_python",
        agent=AgentName.AGENT_EXECUTOR,
        metadata={"is_error": False, "duration_ms": 1234.5, "arguments": tool_call.arguments},
    )
    return tool_call, asking, result


def test_tool_call_is_a_pending_step_under_the_message_that_asked() -> None:
    tool_call, asking, _ = _tool_call_messages()
    view = ChatView(icons=ICONS)
    view.apply(MessageCompleted(message=asking))
    view.apply(ToolCallStarted(call=tool_call, parent_message_id="m1"))
    reply, step = view.messages()
    assert text_of(reply).endswith("Let me compute.")
    assert step["role"] == "assistant"
    assert step["metadata"] == {
        "title": "run_python",
        "id": tool_step_id("c1"),
        "status": "pending",
    }
    assert "```python\nprint(42)\n```" in text_of(step)


def test_tool_result_finishes_the_step_and_nests_the_output_under_it() -> None:
    tool_call, asking, result_message = _tool_call_messages()
    view = ChatView(icons=ICONS)
    view.apply(MessageCompleted(message=asking))
    view.apply(ToolCallStarted(call=tool_call, parent_message_id="m1"))
    result = ToolResult(
        call_id="c1",
        name="run_python",
        content="42\nexit code 0",
        duration_ms=1234.5,
        message_type=MessageType.CONSOLE,
    )
    view.apply(ToolCallFinished(result=result, parent_message_id="m1"))
    view.apply(MessageCompleted(message=result_message))
    _, step, output = view.messages()
    assert step["metadata"]["status"] == "done"
    assert step["metadata"]["duration"] == pytest.approx(1.2345, abs=1e-3)
    assert output["metadata"]["parent_id"] == step["metadata"]["id"]
    assert output["metadata"]["title"] == "Output"
    assert text_of(output) == "```output\n42\nexit code 0\n```"


def test_a_running_call_shows_its_output_so_far_until_its_result_replaces_it() -> None:
    tool_call, asking, result_message = _tool_call_messages()
    view = ChatView(icons=ICONS)
    view.apply(MessageCompleted(message=asking))
    view.apply(ToolCallStarted(call=tool_call, parent_message_id="m1"))
    assert view.apply(ToolCallOutput(call_id="c1", text="tick 0\n"))
    assert view.apply(ToolCallOutput(call_id="c1", text="tick 1\n", omitted=5))
    _, step, output = view.messages()
    assert step["metadata"]["status"] == "pending"
    assert output["metadata"]["title"] == LIVE_TITLE
    assert output["metadata"]["status"] == "pending"
    assert output["metadata"]["parent_id"] == step["metadata"]["id"]
    assert text_of(output) == "```output\n…[12 earlier characters not shown]…\ntick 1\n```"
    result = ToolResult(
        call_id="c1",
        name="run_python",
        content="tick 0\ntick 1\nexit code 0",
        message_type=MessageType.CONSOLE,
    )
    view.apply(ToolCallFinished(result=result, parent_message_id="m1"))
    view.apply(MessageCompleted(message=result_message))
    _, step, output = view.messages()
    assert output["metadata"]["title"] == "Output"
    assert "status" not in output["metadata"]  # a finished step starts closed
    assert text_of(output) == "```output\n42\nexit code 0\n```"
    # output that comes late (a page catching up from the session's events) changes nothing
    assert not view.apply(ToolCallOutput(call_id="c1", text="late"))
    assert not view.apply(ToolCallOutput(call_id="other", text="no such call"))


def test_a_progress_bar_drawn_with_carriage_returns_shows_its_last_drawing() -> None:
    tool_call, asking, _ = _tool_call_messages()
    view = ChatView.from_history([asking])
    view.apply(ToolCallStarted(call=tool_call, parent_message_id="m1"))
    for frame in ("start\nProgress 0%", "\rProgress 50%", "\rProgress 100%\r\n", "done\r\n"):
        view.apply(ToolCallOutput(call_id="c1", text=frame))
    assert text_of(view.messages()[-1]) == "```output\nstart\nProgress 100%\ndone\n```"


def test_a_running_call_shows_only_its_latest_output() -> None:
    tool_call, asking, _ = _tool_call_messages()
    view = ChatView.from_history([asking])
    view.apply(ToolCallStarted(call=tool_call, parent_message_id="m1"))
    for i in range(3):
        view.apply(ToolCallOutput(call_id="c1", text=str(i) * LIVE_SHOWN_CHARS))
    shown = text_of(view.messages()[-1])
    assert shown.startswith(f"```output\n…[{2 * LIVE_SHOWN_CHARS:,} earlier characters not shown]…")
    assert shown.endswith("\n" + "2" * LIVE_SHOWN_CHARS + "\n```") and "1" * 100 not in shown


def test_failed_and_unrun_tool_calls_say_so() -> None:
    _, asking, _ = _tool_call_messages()
    not_run = Message(
        role=Role.TOOL,
        content="Not run: the turn ended (stopped by the user).",
        tool_call_id="c1",
        name="run_python",
        status=MessageStatus.INTERRUPTED,
        metadata={"is_error": True},
    )
    _, step, output = ChatView.from_history([asking, not_run]).messages()
    assert step["metadata"]["log"] == "interrupted"
    assert output["metadata"]["title"] == "Not run"
    cut_short = not_run.model_copy(
        update={"content": "Interrupted while running", "metadata": {"was_running": True}}
    )
    _, step, output = ChatView.from_history([asking, cut_short]).messages()
    assert step["metadata"]["log"] == "interrupted"
    assert output["metadata"]["title"] == "Interrupted"
    error = ToolResult(call_id="c1", name="run_python", content="Boom", is_error=True)
    view = ChatView.from_history([asking])
    view.apply(ToolCallFinished(result=error))
    _, step, output = view.messages()
    assert step["metadata"]["log"] == "error"
    assert output["metadata"]["title"] == "Error"


def test_file_tools_show_the_path_and_the_content() -> None:
    arguments = json.dumps({"path": "notes/a.md", "content": "# Hi"})
    tool_call = ToolCall(id="c2", name="write_file", arguments=arguments)
    view = ChatView.from_history([assistant("", tool_calls=(tool_call,))])
    step = view.messages()[1]
    assert "**File:** ` notes/a.md `" in text_of(step)
    assert "```\n# Hi\n```" in text_of(step)


def test_history_and_live_events_give_the_same_tool_steps() -> None:
    tool_call, asking, result_message = _tool_call_messages()
    live = ChatView(icons=ICONS)
    live.apply(MessageCompleted(message=asking))
    live.apply(ToolCallStarted(call=tool_call, parent_message_id="m1"))
    live.apply(MessageCompleted(message=result_message))
    rebuilt = ChatView.from_history([asking, result_message], icons=ICONS)
    assert live.messages() == rebuilt.messages()


def test_a_pending_approval_points_to_the_panel_and_leaves_when_answered() -> None:
    """What will run is in the call's step and in the approval panel; the chat's pending
    entry says where to answer instead of showing the code a third time."""
    view = ChatView(icons=ICONS)
    request = ApprovalRequested(
        approval_id="a1",
        call=ToolCall(id="c1", name="run_python", arguments="{}"),
        summary="Run Python code",
        detail="import os\nos.remove('x')",
        language="python",
    )
    view.apply(request)
    [pending] = view.messages()
    assert pending["metadata"]["status"] == "pending"
    assert pending["metadata"]["title"] == "Waiting for your approval: Run Python code"
    assert text_of(pending) == APPROVAL_POINTER
    assert "os.remove" not in text_of(pending)
    view.apply(ApprovalResolved(approval_id="a1", decision=ApprovalDecision.DENY))
    assert view.messages() == []


def test_code_waiting_for_approval_shows_once_in_the_chat() -> None:
    tool_call, asking, _ = _tool_call_messages()
    view = ChatView(icons=ICONS)
    view.apply(MessageCompleted(message=asking))
    view.apply(
        ApprovalRequested(
            approval_id="a1", call=tool_call, summary="Run Python code", detail="print(42)"
        )
    )
    texts = [text_of(m) for m in view.messages()]
    assert sum(t.count("print(42)") for t in texts) == 1  # in the call's step
    assert texts[-1] == APPROVAL_POINTER


# -- speakers, notes, errors, history edits --------------------------------------------------


def test_agent_switch_event_shows_a_visible_switch() -> None:
    view = ChatView.from_history([user("hi"), assistant("Hello")], icons=ICONS)
    view.apply(
        AgentSwitched(
            from_agent=AgentName.AGENT_EXECUTOR, to_agent=AgentName.THOUGHT, reason="picked"
        )
    )
    marker = text_of(view.messages()[-1])
    assert "Switched to Thought from Executor (picked)" in marker
    assert ICONS["THOUGHT"] in marker
    view.apply(MessageStarted(message_id="m2", agent=AgentName.THOUGHT))
    assert sum("Switched to" in text_of(m) for m in view.messages()) == 1


def test_a_change_of_speaker_in_the_history_is_marked_before_the_new_speaker() -> None:
    history = [
        user("a"),
        assistant("from executor"),
        user("b"),
        assistant("from thought", agent=AgentName.THOUGHT),
    ]
    shown = [text_of(m) for m in ChatView.from_history(history, icons=ICONS).messages()]
    texts = [text for text in shown if text != GAP]  # (what parts bubbles is not drawn)
    assert len(texts) == 5
    assert "Switched to Thought from Executor" in texts[3]
    assert texts[4].endswith("from thought")


async def test_a_crews_members_speak_without_role_switches_between_them(tmp_path: Path) -> None:
    model = ScriptedModel(["Done.", "Checked.", "Done again.", "Checked again.", "Thought."])
    interpreter = create_interpreter(model, workdir=tmp_path)
    await interpreter.set_agent(AgentName.CREW)
    live = ChatView(icons=ICONS)
    for text in ("do it", "once more"):
        async for event in interpreter.chat(text):
            live.apply(event)
    for view in (live, ChatView.from_history(interpreter.session.history, icons=ICONS)):
        texts = [text_of(m) for m in view.messages()]
        switches = [t for t in texts if "ga-switch" in t]
        assert len(switches) == 1 and "Switched to Crew from Executor" in switches[0], switches
        assert sum("Crew, over to the reviewer:" in t for t in texts) == 2
    await interpreter.set_agent(AgentName.THOUGHT)  # a role picked after the crew shows
    _ = [event async for event in interpreter.chat("think")]
    rebuilt = ChatView.from_history(interpreter.session.history, icons=ICONS)
    assert "Switched to Thought from Crew" in " ".join(text_of(m) for m in rebuilt.messages())


def test_the_note_of_a_turn_a_restart_interrupted_is_the_apps_word_not_code() -> None:
    for kind in (MessageType.MESSAGE, MessageType.CONSOLE):  # (a note kept by an older server)
        note = Message(
            role=Role.ASSISTANT,
            type=kind,
            content=INTERRUPTED_NOTE,
            metadata={"display_only": True, "note": "interrupted"},
        )
        (shown,) = ChatView.from_history([note], icons=ICONS).messages()
        assert text_of(shown) == f'<span class="ga-note">{INTERRUPTED_NOTE}</span>'


def test_errors_and_autochat_stops_are_noted_in_the_chat() -> None:
    view = ChatView()
    view.apply(ErrorEvent(code="model_error", message="rate <limited>"))
    view.apply(AutoChatStopped(reason=AutoChatStopReason.MAX_TURNS, turns=3))
    error, stopped = (text_of(m) for m in view.messages())
    assert error == (
        '<strong class="ga-error" data-code="model_error">Error:</strong> rate &lt;limited>'
    )
    assert (
        stopped
        == "_AutoChat stopped after 3 automatic turns: it reached its limit of automatic turns_"
    )


def _moved(source: InterpreterState, to: InterpreterState) -> StateChanged:
    return StateChanged(from_state=source, to_state=to)


@pytest.mark.parametrize(
    ("ran", "said"), [(False, "0 automatic turns"), (True, "1 automatic turn")]
)
def test_the_autochat_note_counts_the_turns_that_ran_as_the_status_line_does(
    ran: bool, said: str
) -> None:
    running, stop = InterpreterState.RUNNING, InterpreterState.STOP
    events: list[Any] = [
        SessionUpdated(fields={"autochat": {"enabled": True}}),
        _moved(InterpreterState.INIT, running),  # the person's message
        _moved(running, stop),
        AutoChatTurn(turn=1, max_turns=3, remaining=2),  # announced: its delay begins
    ]
    if ran:
        events.append(_moved(stop, running))
    # Stop, during the delay or during the turn: the session counts the turns that ran
    events.append(AutoChatStopped(reason=AutoChatStopReason.STOPPED, turns=int(ran)))
    view, panels = ChatView(), PanelState()
    for event in events:
        view.apply(event)
        panels.apply(event)
    [note] = (text_of(m) for m in view.messages())
    assert note == f"_AutoChat stopped after {said}: it was stopped_"
    assert panels.autochat == f"AutoChat stopped after {said}: it was stopped. {AUTOCHAT_STILL_ON}"
    view.apply(AutoChatTurn(turn=1, max_turns=3, remaining=2))  # a new run starts afresh
    view.apply(_moved(stop, running))
    view.apply(AutoChatStopped(reason=AutoChatStopReason.MAX_TURNS, turns=2))
    assert text_of(view.messages()[-1]) == (
        "_AutoChat stopped after 2 automatic turns: it reached its limit of automatic turns_"
    )


def test_history_truncation_drops_what_came_after() -> None:
    _, asking, result_message = _tool_call_messages()
    view = ChatView.from_history([user("first"), assistant("one"), user("again"), asking])
    view.apply(MessageCompleted(message=result_message))
    view.apply(ErrorEvent(code="x", message="late"))
    view.apply(SessionUpdated(fields={"history_length": 2}))
    assert [text_of(m).split("\n")[-1] for m in view.messages()] == ["first", "one"]
    view.apply(SessionUpdated(fields={"history_length": 0}))
    assert view.messages() == []


def test_unchanged_messages_are_reused_between_updates() -> None:
    view = ChatView.from_history([user("a"), assistant("b")])
    view.apply(MessageStarted(message_id="m3", agent=AgentName.AGENT_EXECUTOR))
    first = view.messages()
    view.apply(TextDelta(message_id="m3", delta="more"))
    second = view.messages()
    assert first[0] is second[0] and first[1] is second[1]
    assert first[2] is not second[2]


async def test_messages_are_already_in_the_form_the_browser_receives(tmp_path: Path) -> None:
    """Streaming handlers skip Gradio's postprocessing; that is safe only if it changes
    nothing."""
    _, asking, result_message = _tool_call_messages()
    history = [user("hi <b>"), asking, result_message, assistant("done", reasoning="hmm")]
    messages = ChatView.from_history(history, icons=ICONS).messages()
    assert gr.Chatbot().postprocess(messages).model_dump() == messages  # type: ignore[arg-type]


async def test_a_real_run_renders_the_same_live_as_from_its_history(tmp_path: Path) -> None:
    model = ScriptedModel([call("list_files"), "All <done>."])
    interpreter = create_interpreter(model, workdir=tmp_path)
    live = ChatView(icons=ICONS)
    async for event in interpreter.chat("Finish it"):
        live.apply(event)
    rebuilt = ChatView.from_history(interpreter.session.history, icons=ICONS)
    assert live.messages() == rebuilt.messages()
    roles = [m["role"] for m in live.messages()]
    assert roles == ["user", "assistant", "assistant", "assistant", "assistant"]


async def test_a_refused_call_says_not_run_live_and_from_its_history(tmp_path: Path) -> None:
    """A call the session does not allow never ran: its step says "not run", not "error"
    (the model is still told, as an error, why)."""
    model = ScriptedModel([call("run_python", code="print(1)"), "Understood."])
    interpreter = create_interpreter(
        model, workdir=tmp_path, permissions={"run_python": PermissionMode.DENY}
    )
    live = ChatView(icons=ICONS)
    async for event in interpreter.chat("run it"):
        live.apply(event)
    rebuilt = ChatView.from_history(interpreter.session.history, icons=ICONS)
    assert live.messages() == rebuilt.messages()
    titled = [m for m in live.messages() if (m.get("metadata") or {}).get("title")]
    step, output = [m for m in titled if m["metadata"]["title"] in ("run_python", "Not run")]
    assert step["metadata"]["log"] == "not run"
    assert output["metadata"]["title"] == "Not run"
    assert "is not allowed in this chat" in text_of(output)


# -- Markdown safety -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a < b & c", "a &lt; b &amp; c"),
        ("`<x>` and <y>", "`<x>` and &lt;y>"),
        ("``a ` <b>`` <c>", "``a ` <b>`` &lt;c>"),
        ("unmatched ` <b>", "unmatched ` &lt;b>"),
        ("```html\n<b>\n```\n<i>", "```html\n<b>\n```\n&lt;i>"),
        ("~~~\n<b>\n~~~", "~~~\n<b>\n~~~"),
        ("```\n<open fence while streaming", "```\n<open fence while streaming"),
        ("text\n\n    <indented code>\n\n<p>", "text\n\n    <indented code>\n\n&lt;p>"),
        ("para\n    <continued>", "para\n    &lt;continued>"),
        ("no markup at all", "no markup at all"),
    ],
)
def test_escape_html_escapes_markup_outside_code(text: str, expected: str) -> None:
    assert escape_html(text) == expected


def test_fence_outgrows_backticks_inside() -> None:
    assert fence("a ``` b", "py") == "````py\na ``` b\n````"
    assert fence("x", "bad lang<>") == "```badlang\nx\n```"


def test_json_or_text() -> None:
    assert json_or_text("[1]") == "```json\n[\n  1\n]\n```"
    assert json_or_text("plain") == "```text\nplain\n```"


def test_unsafe_images_are_not_shown() -> None:
    assert image_markdown(ImagePart(media_type="image/svg+xml", data="PHN2Zz4=")) is not None
    assert image_markdown(ImagePart(media_type="text/html", data="PGI+")) is None
    assert image_markdown(ImagePart(url="javascript:alert(1)")) is None
    assert image_markdown(ImagePart(url="file:///etc/passwd")) is None
    shown = image_markdown(ImagePart(url="https://example.org/a (1).png"))
    assert (
        shown == "[image from example.org (not loaded here)](https://example.org/a%20%281%29.png)"
    )


# -- panels ----------------------------------------------------------------------------------


def test_panel_state_follows_events() -> None:
    panels = PanelState()
    call_ = ToolCall(id="c1", name="run_python", arguments="{}")
    panels.apply(StateChanged(from_state=InterpreterState.INIT, to_state=InterpreterState.RUNNING))
    panels.apply(ApprovalRequested(approval_id="a1", call=call_, summary="Run"))
    panels.apply(ApprovalRequested(approval_id="a2", call=call_, summary="Run"))
    assert panels.state is InterpreterState.RUNNING
    assert panels.approval is not None and panels.approval.approval_id == "a1"
    panels.apply(ApprovalResolved(approval_id="a1", decision=ApprovalDecision.ALLOW_ONCE))
    assert panels.approval is not None and panels.approval.approval_id == "a2"
    panels.apply(AutoChatTurn(turn=1, max_turns=3, remaining=2))
    assert panels.autochat == "AutoChat: automatic turn 1 of 3 starts shortly."
    panels.apply(StateChanged(from_state=InterpreterState.STOP, to_state=InterpreterState.RUNNING))
    assert panels.autochat == "AutoChat running: automatic turn 1 of 3, 2 remaining."
    panels.apply(AgentSwitched(from_agent=None, to_agent=AgentName.THOUGHT))
    assert panels.agent is AgentName.THOUGHT
    panels.apply(SessionUpdated(fields={"title": "New title"}))
    assert panels.title == "New title" and panels.sessions_changed


def test_memory_panel_lists_the_window_and_says_when_tokens_are_estimated() -> None:
    view = ChatView.from_history([user("hello <there>", id="u1"), assistant("hi", id="a1")])
    memory = MemoryInfo.of(
        MemoryUpdated(
            message_ids=("u1", "a1"),
            token_count=1234,
            token_estimated=True,
            goal="Build <it>",
            goal_pinned=True,
            dropped=3,
        )
    )
    text = memory_markdown(memory, view.preview)
    assert "2 messages, 1,234 tokens (estimated)" in text
    assert "3 older messages slid out" in text
    assert "**Goal** (pinned (re-inserted)): Build &lt;it>" in text
    assert "1. *user*: hello &lt;there>" in text
    assert "2. *assistant*: hi" in text
    exact = memory_markdown(MemoryInfo(("u1",), 10), view.preview)
    assert "10 tokens." in exact and "estimated" not in exact


def test_memory_panel_names_a_reply_that_failed_or_stopped_before_any_text() -> None:
    """Not a bare "…": the person sees why that reply in the window says nothing."""
    view = ChatView.from_history(
        [
            user("fail", id="u1"),
            assistant("", id="a1", status=MessageStatus.ERROR),
            user("again", id="u2"),
            assistant("", id="a2", status=MessageStatus.INTERRUPTED),
        ]
    )
    text = memory_markdown(MemoryInfo(("u1", "a1", "u2", "a2"), 10), view.preview)
    assert "2. *assistant*: [error: no text]" in text
    assert "4. *assistant*: [interrupted: no text]" in text
    assert "…" not in text


def test_usage_panel_shows_each_turn_and_the_session_total() -> None:
    panels = PanelState()
    panels.apply(
        UsageReported(run_id="r1", turn=Usage(input_tokens=10, output_tokens=5), total=Usage())
    )
    panels.apply(
        UsageReported(
            run_id="r2",
            turn=Usage(input_tokens=20, output_tokens=7, estimated=True),
            total=Usage(input_tokens=30, output_tokens=12, requests=2, estimated=True),
        )
    )
    text = usage_markdown(panels.turns, panels.total)
    assert "**This chat:** 30 in · 12 out · 2 model calls (estimated)" in text
    assert "| 1 | 10 | 5 |" in text and "| 2 | 20 | 7 |" in text
    assert usage_markdown(OrderedDict(), Usage()).startswith("**This chat:** 0 in")
    assert "0 out · 0 model calls" in usage_markdown(OrderedDict(), Usage())
    one = usage_markdown(OrderedDict(), Usage(input_tokens=3, output_tokens=1, requests=1))
    assert "**This chat:** 3 in · 1 out · 1 model call" in one and "calls" not in one


def test_usage_panel_numbers_turns_past_the_tenth_as_they_ran() -> None:
    """The panel lists the last ten turns: after twelve, they are turns 3 to 12."""
    panels = PanelState()
    for number in range(1, 13):
        usage = Usage(input_tokens=number * 100, output_tokens=number)
        panels.apply(UsageReported(run_id=f"r{number}", turn=usage, total=usage))
    text = usage_markdown(panels.turns, panels.total, newest=panels.turns_seen)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "Turn" not in line]
    assert len(rows) == MAX_TURNS_SHOWN
    assert rows[0] == "| 3 | 300 | 3 |"
    assert rows[-1] == "| 12 | 1,200 | 12 |"
    # a turn that reports again (another model call) is not a new turn
    again = Usage(input_tokens=1_250, output_tokens=13)
    panels.apply(UsageReported(run_id="r12", turn=again, total=again))
    text = usage_markdown(panels.turns, panels.total, newest=panels.turns_seen)
    assert text.splitlines()[-1] == "| 12 | 1,250 | 13 |"


def test_code_language_maps_to_what_the_viewer_knows() -> None:
    known = ["python", "shell", "json", None]
    assert code_language("Python", known) == "python"
    assert code_language("bash", known) == "shell"
    assert code_language("cobol", known) is None
    assert code_language(None, known) is None


# -- coalescing ------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_deltas_within_an_interval_are_merged_into_one_update() -> None:
    clock = FakeClock()
    coalescer = Coalescer(0.04, clock=clock)
    assert coalescer.timeout() is None
    assert coalescer.offer(TextDelta(message_id="m", delta="a"))  # the first shows at once
    assert [e.delta for e in coalescer.take() if isinstance(e, TextDelta)] == ["a"]
    clock.now += 0.01
    for piece in ("b", "c", "d"):
        assert not coalescer.offer(TextDelta(message_id="m", delta=piece, seq=5))
    assert coalescer.timeout() == pytest.approx(0.03)
    clock.now += 0.03
    assert coalescer.due()
    [merged] = coalescer.take()
    assert isinstance(merged, TextDelta) and merged.delta == "bcd" and merged.seq == 5


def test_structural_events_flush_at_once() -> None:
    clock = FakeClock()
    coalescer = Coalescer(0.04, clock=clock)
    coalescer.offer(TextDelta(message_id="m", delta="a"))
    coalescer.take()
    assert not coalescer.offer(TextDelta(message_id="m", delta="b"))
    change = StateChanged(from_state=InterpreterState.RUNNING, to_state=InterpreterState.STOP)
    assert coalescer.offer(change)
    assert coalescer.timeout() == 0.0
    assert [e.type for e in coalescer.take()] == ["text_delta", "state_changed"]
    assert coalescer.pending == 0


def test_a_long_chat_is_updated_less_often_in_proportion_up_to_once_a_second() -> None:
    assert paced_interval(0.1, 0) == paced_interval(0.1, 80) == 0.1
    assert paced_interval(0.1, 160) == pytest.approx(0.2)
    assert paced_interval(0.1, 400) == pytest.approx(0.5)
    assert paced_interval(0.1, 100_000) == MAX_INTERVAL_S == 1.0
    assert paced_interval(0.0, 100_000) == 0.0  # an immediate stream (a replay) stays so
    assert paced_interval(2.0, 10) == 2.0  # a slower base is never sped up


def test_a_long_chat_paces_structural_events_too_and_a_short_one_does_not() -> None:
    clock = FakeClock()
    coalescer = Coalescer(0.1, clock=clock)
    change = StateChanged(from_state=InterpreterState.RUNNING, to_state=InterpreterState.STOP)
    coalescer.pace(400)  # 0.5 s between updates; 0.4 s of it for a structural event
    assert coalescer.offer(TextDelta(message_id="m", delta="a"))  # the first shows at once
    coalescer.take()
    clock.now += 0.2
    assert not coalescer.offer(TextDelta(message_id="m", delta="b"))
    assert not coalescer.offer(change)
    assert coalescer.timeout() == pytest.approx(0.2)
    clock.now += 0.2
    assert coalescer.due()
    assert [e.type for e in coalescer.take()] == ["text_delta", "state_changed"]
    clock.now += 0.45
    assert not coalescer.offer(TextDelta(message_id="m", delta="c"))
    assert coalescer.timeout() == pytest.approx(0.05)
    coalescer.pace(10)  # the chat was cleared: back to the base pace
    assert coalescer.due()
    coalescer.take()
    assert coalescer.offer(change)  # structural: at once again
    assert coalescer.timeout() == 0.0


def test_merge_keeps_messages_channels_and_order_apart() -> None:
    events: list[Event] = [
        TextDelta(message_id="m1", delta="a"),
        TextDelta(message_id="m1", delta="b"),
        TextDelta(message_id="m1", delta="x", channel="reasoning"),
        TextDelta(message_id="m2", delta="c"),
        StateChanged(from_state=InterpreterState.RUNNING, to_state=InterpreterState.STOP),
        TextDelta(message_id="m2", delta="d"),
    ]
    merged = merge_deltas(events)
    summary = [(e.type, getattr(e, "delta", "")) for e in merged]
    assert summary == [
        ("text_delta", "ab"),
        ("text_delta", "x"),
        ("text_delta", "c"),
        ("state_changed", ""),
        ("text_delta", "d"),
    ]


# -- the streaming driver (real interpreter, no server) --------------------------------------


async def test_layout_carries_every_stable_handle() -> None:
    with gr.Blocks() as demo:
        build_page(
            title="t",
            notice="n",
            agents=[AgentName.AGENT_EXECUTOR],
            models=[],
            default_model=None,
            model_note="",
        )
    ids = {block.elem_id for block in demo.blocks.values() if getattr(block, "elem_id", None)}
    assert set(ELEM_IDS) <= ids


async def test_a_long_reply_streams_in_few_updates_and_the_subscription_closes(
    tmp_path: Path,
) -> None:
    page = make_page()
    reply = " ".join(f"word{i}" for i in range(2000))
    interpreter = create_interpreter(ScriptedModel([reply]), workdir=tmp_path)
    updates = [
        update
        async for update in stream_session(
            interpreter,
            lambda: PageView.of(page, interpreter, icons=ICONS),
            action=lambda: interpreter.send("go"),
        )
    ]
    assert 2 <= len(updates) < 60  # 2,000 deltas, a handful of UI updates
    final: dict[Any, Any] = {}
    for update in updates:
        final.update(update)
    assert final[page.badge] == badge_html(InterpreterState.STOP)
    last_text = text_of(final[page.chatbot][-1])
    assert last_text.endswith("word1999")
    assert interpreter._hub.subscriber_count == 0


async def test_closing_the_stream_mid_reply_closes_the_subscription(tmp_path: Path) -> None:
    page = make_page()
    interpreter = create_interpreter(ScriptedModel(["slow " * 200], delay_s=0.01), workdir=tmp_path)
    stream = stream_session(
        interpreter,
        lambda: PageView.of(page, interpreter, icons=ICONS),
        action=lambda: interpreter.send("go"),
    )
    seen = 0
    async for update in stream:
        seen += 1
        if page.chatbot in update and seen >= 3:
            break
    await stream.aclose()
    assert interpreter._hub.subscriber_count == 0
    tasks = {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}
    assert all(t.get_name().startswith("session-") for t in tasks)  # only the run itself
    await interpreter.stop()
    assert interpreter.state is InterpreterState.STOP


async def test_the_server_refuses_blank_and_oversized_messages(tmp_path: Path) -> None:
    """The page's own guard aside, the send handler checks again (API clients, old pages)."""
    from backends.gradio.handlers import Handlers
    from gui_agent.llm import StaticCatalog
    from gui_agent.manager import SessionManager
    from gui_agent.store import MemoryStore

    page = make_page()
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(default="hi")),
        store=MemoryStore(),
        workspace_root=tmp_path,
    )
    await manager.start()
    handlers = Handlers(manager, page, icons=ICONS, languages=(), models=())
    try:
        for text in ("", "  \n\t "):
            updates = [u async for u in handlers.send({page.chat_input: text}, None)]  # type: ignore[arg-type]
            assert updates == [{"__type__": "update"}]  # one "no change", nothing sent
        with pytest.warns(UserWarning, match="the limit is 200,000"):
            oversized = {page.chat_input: "x" * 200_001}
            updates = [u async for u in handlers.send(oversized, None)]  # type: ignore[arg-type]
        assert updates == [{"__type__": "update"}]
        assert await manager.list("local") == []  # no session was even created
    finally:
        await manager.close()


def test_the_package_exports_exactly_create_app() -> None:
    import types

    import backends
    import backends.gradio

    public = {
        name
        for name in dir(backends.gradio)
        if not name.startswith("_")
        and name != "annotations"
        and not isinstance(getattr(backends.gradio, name), types.ModuleType)
    }
    assert backends.gradio.__all__ == ["create_app"] == sorted(public)
    assert backends.__all__ == []


def test_a_supervisors_task_names_its_worker_as_people_read_roles_and_escapes_other_names() -> None:
    def task_for(worker: str) -> str:
        metadata = {"delegated_by": "call-1", "worker": worker}
        return user_text(Message(role=Role.USER, content="count", metadata=metadata))

    assert '<span class="ga-autochat">Task for Thought:</span> count' in task_for("THOUGHT")
    assert f"Task for {escape_html('<b>helper</b>')}:" in task_for("<b>helper</b>")
