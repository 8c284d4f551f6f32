"""What the Streamlit front end shows of a chat (`backends.streamlit.view`), without
Streamlit: every message type, tool results folded into their calls, notes, and a reply
built from its events (with what a running call prints), the usage line, and which message
Edit changes."""

from __future__ import annotations

import base64
import json

from backends.api.responses import MemoryAnswer
from backends.streamlit.actions import last_written
from backends.streamlit.view import (
    LIVE_OUTPUT_CHARS,
    LiveReply,
    entries_of,
    hidden_line,
    image_source,
    memory_lines,
    plain_markdown,
    pretty_arguments,
    safe_markdown,
    unanswered_calls,
    usage_line,
)
from schema import (
    AgentName,
    ImagePart,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    MessageType,
    Role,
    RunFinished,
    RunOutcome,
    StreamingReply,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    ToolCallOutput,
    ToolCallStarted,
    ToolResult,
    Usage,
)
from schema.messages import CREW_SPEAKER

CALL = ToolCall(id="c1", name="run_python", arguments=json.dumps({"code": "print(42)"}))


def conversation() -> list[Message]:
    return [
        Message(role=Role.SYSTEM, content="You are helpful."),
        Message(role=Role.USER, content="compute it"),
        Message(
            role=Role.ASSISTANT,
            content="Let me run it.",
            agent=AgentName.AGENT_EXECUTOR,
            tool_calls=(CALL,),
            reasoning="Python will do.",
        ),
        Message(
            role=Role.ASSISTANT,
            type=MessageType.CONFIRMATION,
            content="Allowed once",
            metadata={"display_only": True},
        ),
        Message(
            role=Role.TOOL,
            type=MessageType.CONSOLE,
            content="42\nexit code 0",
            tool_call_id="c1",
            name="run_python",
            metadata={"is_error": False},
        ),
        Message(role=Role.ASSISTANT, type=MessageType.CODE, content="x = 1", language="python"),
        Message(
            role=Role.ASSISTANT,
            type=MessageType.IMAGE,
            images=(ImagePart(data=base64.b64encode(b"png!").decode()),),
        ),
        Message(
            role=Role.ASSISTANT,
            content="The answer is 4",
            agent=AgentName.LLM_PLANNER,
            status=MessageStatus.INTERRUPTED,
            metadata={"cut_off": True},
        ),
    ]


def test_the_history_shows_every_kind_with_results_folded_into_their_calls() -> None:
    entries = entries_of(conversation())
    assert [(e.role, e.kind) for e in entries] == [
        ("user", MessageType.MESSAGE),
        ("assistant", MessageType.MESSAGE),
        ("assistant", MessageType.CODE),
        ("assistant", MessageType.IMAGE),
        ("assistant", MessageType.MESSAGE),
    ]  # the system prompt is not the conversation; the tool result is in its call
    asked = entries[1]
    assert asked.speaker == "Executor" and asked.reasoning == "Python will do."
    [view] = asked.calls
    assert view.name == "run_python" and json.loads(view.arguments) == {"code": "print(42)"}
    assert view.result == "42\nexit code 0" and view.label == "run_python"
    assert asked.notes == ["Allowed once"]  # the confirmation, under the reply it answered
    assert entries[2].language == "python"
    assert image_source(entries[3].images[0]) == b"png!"
    last = entries[4]
    assert last.speaker == "Planner"
    assert last.notes == [
        "Interrupted: the turn was stopped here.",
        'Cut off at the output limit (Max tokens): say "continue" for the rest.',
    ]


def test_what_an_approval_decided_is_said_in_words_for_this_chat() -> None:
    reply = Message(
        role=Role.ASSISTANT, content="", agent=AgentName.AGENT_EXECUTOR, tool_calls=(CALL,)
    )
    decided = Message(
        role=Role.ASSISTANT,
        type=MessageType.CONFIRMATION,
        content="Run Python code: allow_session (go ahead)",
        metadata={"decision": "allow_session", "by": "user"},
    )
    [entry] = entries_of([reply, decided])
    assert entry.notes == ["✓ Allowed for this chat · Run Python code (go ahead)"]


def test_calls_refused_failing_or_unanswered_are_labelled_so() -> None:
    refused = ToolCall(id="c2", name="write_file", arguments="{}")
    failed = ToolCall(id="c3", name="read_file", arguments="not json")
    waiting = ToolCall(id="c4", name="list_files", arguments="{}")
    history = [
        Message(role=Role.ASSISTANT, tool_calls=(refused, failed, waiting)),
        Message(
            role=Role.TOOL,
            content="denied",
            tool_call_id="c2",
            metadata={"is_error": True, "not_run": True},
        ),
        Message(
            role=Role.TOOL, content="no such file", tool_call_id="c3", metadata={"is_error": True}
        ),
        Message(role=Role.TOOL, content="orphan", tool_call_id="gone"),
    ]
    entries = entries_of(history)
    labels = [v.label for v in entries[0].calls]
    assert labels == ["write_file (not run)", "read_file (error)", "list_files (running)"]
    assert entries[0].calls[1].arguments == "not json"  # shown as sent
    assert entries[1].text == "orphan"  # a result whose call is not shown stands alone


def test_a_live_reply_follows_its_events() -> None:
    live = LiveReply()
    assert not live.apply(MessageStarted(message_id="m1"))
    assert live.apply(TextDelta(message_id="m1", delta="Let me "))
    assert live.apply(TextDelta(message_id="m1", delta="think", channel="reasoning"))
    assert live.apply(TextDelta(message_id="m1", delta="check."))
    assert live.apply(ToolCallStarted(call=CALL))
    assert live.calls[0].label == "run_python (running)"
    result = ToolResult(call_id="c1", name="run_python", content="42")
    assert live.apply(ToolCallFinished(result=result))
    assert live.calls[0].result == "42" and live.calls[0].label == "run_python"
    live.apply(MessageStarted(message_id="m2"))
    live.apply(TextDelta(message_id="m2", delta="It is 42."))
    assert live.text == "Let me check.\n\nIt is 42." and live.reasoning == "think"
    user = Message(role=Role.USER, content="hi")
    assert not live.apply(MessageCompleted(message=user))


def test_a_running_calls_output_grows_keeps_its_latest_part_and_gives_way_to_its_result() -> None:
    live = LiveReply()
    assert live.apply(ToolCallStarted(call=CALL))
    assert live.apply(ToolCallOutput(call_id="c1", text="tick 0\n"))
    assert live.apply(ToolCallOutput(call_id="c1", text="tick 1\n"))
    [view] = live.calls
    assert (view.label, view.output, view.hidden) == ("run_python (running)", "tick 0\ntick 1\n", 0)
    assert live.apply(ToolCallOutput(call_id="c1", text="x" * LIVE_OUTPUT_CHARS))
    assert view.output == "x" * LIVE_OUTPUT_CHARS and view.hidden == 14  # the oldest go
    assert hidden_line(view.hidden) == "… 14 characters not shown …"
    # output the server left out (too much, too fast): what was shown goes too, no gap shown
    assert live.apply(ToolCallOutput(call_id="c1", text="late", omitted=100))
    assert (view.output, view.hidden) == ("late", 8114)
    assert hidden_line(view.hidden) == "… 8,114 characters not shown …"
    assert not live.apply(ToolCallOutput(call_id="zz", text="no such call"))
    result = ToolResult(call_id="c1", name="run_python", content="tick 0\ntick 1\nexit code 0")
    assert live.apply(ToolCallFinished(result=result))
    assert (view.label, view.result, view.output, view.hidden) == (
        "run_python",
        result.content,
        "",
        0,
    )  # the result takes the live view's place
    assert not live.apply(ToolCallOutput(call_id="c1", text="after the end"))
    assert view.output == ""


def test_a_call_running_before_the_script_ran_again_shows_its_output() -> None:
    """The script runs again mid-call (a click): the call's start is in the past, known
    from the history's call without a result; a call with its result is not running."""
    done = ToolCall(id="c0", name="list_files", arguments="{}")
    history = [
        Message(role=Role.USER, content="count"),
        Message(role=Role.ASSISTANT, tool_calls=(done,)),
        Message(role=Role.TOOL, content="(empty)", tool_call_id="c0"),
        Message(role=Role.ASSISTANT, tool_calls=(CALL,)),
    ]
    live = LiveReply.following([], history)
    assert [v.label for v in live.calls] == ["run_python (running)"]  # shown before it prints
    assert not live.apply(ToolCallStarted(call=CALL))  # (its start read late: still once)
    assert not live.apply(ToolCallOutput(call_id="c0", text="finished long ago"))
    assert live.apply(ToolCallOutput(call_id="c1", text="tick 3\n"))
    [view] = live.calls
    assert (view.label, view.output) == ("run_python (running)", "tick 3\n")
    assert live.apply(ToolCallOutput(call_id="c1", text="tick 4\n"))
    assert live.calls == [view] and view.output == "tick 3\ntick 4\n"
    assert live.apply(RunFinished(outcome=RunOutcome.INTERRUPTED))  # nothing runs now
    assert view.output == ""
    # the history, drawn above the live view, leaves the running call to it: shown once
    shown = [call.call_id for entry in entries_of(history, live=["c1"]) for call in entry.calls]
    assert shown == ["c0"]
    assert [c.call_id for e in entries_of(history) for c in e.calls] == ["c0", "c1"]
    assert [v.call_id for v in unanswered_calls(history)] == ["c1"]
    # a tab opened mid-call begins with what the call printed up to the detail's last_seq
    printed = ToolCallOutput(call_id="c1", text="tick 1\ntick 2\n", omitted=14)
    [opened] = LiveReply.following([], history, [printed]).calls
    assert (opened.output, opened.hidden) == ("tick 1\ntick 2\n", 14)


def test_arguments_and_images_never_fail_the_page() -> None:
    assert pretty_arguments('{"a": 1}') == '{\n  "a": 1\n}'
    assert pretty_arguments("{broken") == "{broken"
    assert pretty_arguments("") == "{}"
    assert image_source(ImagePart(url="https://example.org/a.png")) == (
        "(an image at https://example.org/a.png, not loaded)"
    )
    assert image_source(ImagePart(data="not base64!")) == "(an image whose data could not be read)"


def test_markdown_fetches_no_picture_a_model_names() -> None:
    text = "Look: ![pixel](https://tracker.example/p.png) and [a link](https://example.org)"
    shown = safe_markdown(text)
    assert "![" not in shown and "!\\[pixel](https://tracker.example/p.png)" in shown
    assert "[a link](https://example.org)" in shown  # links stay links (a click is a choice)
    assert safe_markdown("no images") == "no images"


def test_titles_labels_and_captions_are_shown_as_written() -> None:
    title = "![x](https://tracker.example/p.png) **bold** :red[red] $x^2$ <b>"
    shown = plain_markdown(title)
    # every sign Markdown (or Streamlit's :color[] and $math$) reads is escaped
    assert "![" not in shown and "**" not in shown and ":red[" not in shown
    assert shown.replace("\\", "") == title  # and nothing else changed
    assert plain_markdown("Run Python code") == "Run Python code"


def test_the_usage_line_says_tokens_calls_and_estimates() -> None:
    assert usage_line(Usage()) == "No model calls yet."
    measured = Usage(input_tokens=12_345, output_tokens=678, requests=1)
    assert usage_line(measured) == "Tokens so far: 12,345 in · 678 out · 1 model call"
    guessed = Usage(input_tokens=10, output_tokens=3, requests=2, estimated=True)
    assert usage_line(guessed) == "Tokens so far: 10 in · 3 out · 2 model calls (estimated)"


def test_edit_changes_the_persons_own_last_message_only() -> None:
    mine = Message(role=Role.USER, content="first try")
    reply = Message(role=Role.ASSISTANT, content="ok")
    automatic = Message(role=Role.USER, content="continue", metadata={"autochat": True})
    assert last_written([mine, reply, automatic, reply]) is mine
    assert last_written([reply]) is None and last_written([]) is None


def test_a_workers_steps_are_shown_whole_and_agents_messages_labelled() -> None:
    worker = {"display_only": True, "delegated_by": "d1", "worker": "AGENT_EXECUTOR"}
    delegate = ToolCall(id="d1", name="delegate", arguments='{"task": "add 2 and 3"}')
    add = ToolCall(id="c1", name="add", arguments='{"a": 2, "b": 3}')
    history = [
        Message(role=Role.USER, content="sum it"),
        Message(role=Role.ASSISTANT, agent=AgentName.SUPERVISOR, tool_calls=(delegate,)),
        Message(role=Role.USER, content="add 2 and 3", metadata=worker),
        Message(
            role=Role.ASSISTANT, agent=AgentName.AGENT_EXECUTOR, tool_calls=(add,), metadata=worker
        ),
        Message(role=Role.TOOL, content="5", tool_call_id="c1", metadata=worker),
        Message(role=Role.ASSISTANT, agent=AgentName.AGENT_EXECUTOR, content="5", metadata=worker),
        Message(role=Role.TOOL, content="5", tool_call_id="d1"),
        Message(
            role=Role.USER, content="continue", metadata={"autochat": True, "autochat_turn": 2}
        ),
        Message(role=Role.USER, content="check it", metadata={"crew_member": "reviewer"}),
    ]
    entries = entries_of(history)
    assert [(e.role, e.speaker, e.text) for e in entries] == [
        ("user", "", "sum it"),
        ("assistant", "Supervisor", ""),
        ("user", "Task for Executor", "add 2 and 3"),
        ("assistant", "Executor", ""),
        ("assistant", "Executor", "5"),
        ("user", "AutoChat turn 2", "continue"),
        ("user", "Crew, over to the reviewer", "check it"),
    ]
    assert [(c.name, c.result) for c in entries[1].calls] == [("delegate", "5")]
    assert [(c.name, c.result) for c in entries[3].calls] == [("add", "5")]  # folded, not a note
    assert all(not e.notes for e in entries)


def test_the_memory_panel_says_what_the_model_is_sent() -> None:
    asked = Message(role=Role.USER, content="a   question\nover two lines " + "x" * 100)
    reply = Message(role=Role.ASSISTANT, content="")
    memory = MemoryAnswer(
        message_ids=[asked.id, reply.id, "gone"],
        token_count=1234,
        token_estimated=True,
        goal="keep going",
        goal_pinned=False,
        dropped=2,
    )
    lines = memory_lines(memory, [asked, reply])
    assert lines[:3] == [
        "Context window: 3 messages, 1,234 tokens (estimated).",
        "2 older messages slid out of the window.",
        "Goal (in the window): keep going",
    ]
    assert lines[3].startswith("1. user: a question over two lines xxx") and lines[3].endswith("…")
    assert lines[4:] == ["2. assistant: …", "3. ?: …"]
    bare = MemoryAnswer(
        message_ids=[],
        token_count=9,
        token_estimated=False,
        goal=None,
        goal_pinned=False,
        dropped=0,
    )
    assert memory_lines(bare, []) == ["Context window: 0 messages, 9 tokens.", "Goal: none pinned."]


def test_a_turn_that_failed_before_its_reply_shows_the_error_kept_in_its_note() -> None:
    failed = Message(
        role=Role.ASSISTANT,
        status=MessageStatus.ERROR,
        metadata={
            "display_only": True,
            "error": {"code": "agent_failed", "message": "ValueError: no key"},
        },
    )
    entries = entries_of([Message(role=Role.USER, content="hello"), failed])
    assert [(e.role, e.text) for e in entries] == [
        ("user", "hello"),
        ("assistant", "Error: ValueError: no key"),  # (not the bare word "message")
    ]


def test_each_reply_being_written_is_headed_by_who_writes_it() -> None:
    """As the history heads it once kept: a crew member by name (the server names it as the
    reply starts, and in the snapshot a tab opening mid-reply is given), else its role."""
    live = LiveReply()
    live.apply(MessageStarted(message_id="a1", agent=AgentName.AGENT_EXECUTOR, speaker="doer"))
    live.apply(TextDelta(message_id="a1", delta="Done."))
    live.apply(MessageStarted(message_id="a2", agent=AgentName.THOUGHT, speaker="reviewer"))
    live.apply(MessageStarted(message_id="a3", agent=AgentName.THOUGHT))
    live.apply(TextDelta(message_id="a3", delta="Hm."))
    assert [(p.speaker, p.text) for p in live.parts] == [
        ("Crew · doer", "Done."),
        ("Crew · reviewer", ""),
        ("Thought", "Hm."),
    ]
    assert live.text == "Done.\n\nHm."  # (no blank reply in between)
    kept = {CREW_SPEAKER: "reviewer"}
    writing = StreamingReply(
        id="r1", role=Role.ASSISTANT, agent=AgentName.THOUGHT, content="So f", metadata=kept
    )
    plain = writing.model_copy(update={"metadata": {}})
    assert [p.speaker for p in LiveReply.following([writing, plain]).parts] == [
        "Crew · reviewer",
        "Thought",
    ]
    late = LiveReply()  # (its start came before the events read: no heading known)
    late.apply(TextDelta(message_id="a9", delta="…and so on"))
    assert [(p.speaker, p.text) for p in late.parts] == [("", "…and so on")]
