"""The React front end's view of a chat (`backends/react/src/history.js`), run in Node: tool
results folded into their calls, a reply built from its deltas and replaced by the message
as filed, a running call's output kept as it comes until its result, approvals added once
and removed when answered, and pictures named by address never loaded."""

from __future__ import annotations

from typing import Any

from tests.backends.react.node_script import run_with_history

SCRIPT = """
import { applyEvent, chatFrom, entriesOf, hiddenLine, imageSource, memoryView, overwritten }
  from %s;
const detail = JSON.parse(process.argv[1]);
let chat = chatFrom(detail);
const seen = [];
for (const event of detail.events) {
  chat = applyEvent(chat, event);
  seen.push({state: chat.state, busy: chat.busy, live: Object.values(chat.streaming),
             approvals: chat.approvals.map((a) => a.approval_id), problem: chat.problem,
             running: Object.values(chat.running).map(
               (v) => ({...v, line: hiddenLine(v.hidden)}))});
}
const entries = entriesOf(chat.messages);
const images = entries.flatMap((e) => e.images.map(imageSource));
const memory = memoryView(chat.memory, chat.messages);
const drawn = (detail.drawn ?? []).map(overwritten);
console.log(JSON.stringify({entries, seen, images, title: chat.session.title, memory, drawn}));
"""


def run(detail: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = run_with_history(SCRIPT, detail)
    return result


def session_detail(
    messages: list[dict[str, Any]] | None = None,
    *,
    title: str = "t",
    events: list[Any] | None = None,
    streaming: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A session detail as the API gives it, then `events` to apply: with `streaming`
    (replies being written) a turn runs, else nothing does."""
    return {
        "session": {"id": "s", "title": title},
        "messages": messages or [],
        "streaming": streaming or [],
        "pending_approvals": [],
        "state": "RUNNING" if streaming else "STOP",
        "busy": bool(streaming),
        "events": events or [],
    }


def message(id_: str, role: str, content: str = "", **fields: Any) -> dict[str, Any]:
    return {
        "id": id_,
        "role": role,
        "content": content,
        "type": "message",
        "metadata": {},
        **fields,
    }


def test_a_turn_is_followed_from_its_events() -> None:
    asked = message("u1", "user", "add 2 and 3")
    call = {"id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'}
    reply = message("a1", "assistant", "", agent="AGENT_EXECUTOR", tool_calls=[call])
    result = message("t1", "tool", "5", tool_call_id="c1")
    final = message("a2", "assistant", "It is 5.", agent="AGENT_EXECUTOR")
    approval = {"type": "approval_requested", "approval_id": "p1", "call": call}
    events = [
        {"type": "state_changed", "to_state": "RUNNING"},
        {"type": "message_completed", "message": asked},
        {"type": "message_started", "message_id": "a1", "agent": "AGENT_EXECUTOR"},
        {"type": "message_completed", "message": reply},
        approval,
        approval,  # heard twice (a resumed stream): shown once
        {"type": "approval_resolved", "approval_id": "p1", "decision": "allow_once"},
        {"type": "message_completed", "message": result},
        {"type": "message_started", "message_id": "a2", "agent": "AGENT_EXECUTOR"},
        {"type": "text_delta", "message_id": "a2", "delta": "It is "},
        {"type": "text_delta", "message_id": "a2", "delta": "thinking", "channel": "reasoning"},
        {"type": "text_delta", "message_id": "zz", "delta": "not ours"},
        {"type": "text_delta", "message_id": "a2", "delta": "5."},
        {"type": "message_completed", "message": final},
        {"type": "session_updated", "fields": {"title": "Adding"}},
        {
            "type": "memory_updated",
            "message_ids": ["u1", "a1", "t1", "gone"],
            "token_count": 1234,
            "token_estimated": True,
            "goal": "add things",
            "goal_pinned": True,
            "dropped": 1,
        },
        {"type": "error", "message": "a problem said"},
        {"type": "state_changed", "to_state": "STOP"},
    ]
    detail = session_detail(title="", events=events)
    out = run(detail)
    seen = out["seen"]
    assert seen[0]["busy"] is True and seen[-1] == {**seen[-1], "busy": False, "state": "STOP"}
    assert [s["approvals"] for s in seen[4:7]] == [["p1"], ["p1"], []]
    writing = seen[12]["live"]
    assert writing == [
        {"id": "a2", "agent": "AGENT_EXECUTOR", "text": "It is 5.", "reasoning": "thinking"}
    ]
    assert seen[13]["live"] == []  # filed: the message takes its place
    assert seen[-2]["problem"] == "a problem said" and out["title"] == "Adding"
    assert out["memory"] == {
        "summary": "Context window: 4 messages, 1,234 tokens (estimated).",
        "dropped": "1 older message slid out of the window.",
        "goal": "Goal (pinned (re-inserted)): add things",
        "items": [
            {"id": "u1", "role": "user", "text": "add 2 and 3"},
            {"id": "a1", "role": "assistant", "text": ""},
            {"id": "t1", "role": "tool", "text": "5"},
            {"id": "gone", "role": "?", "text": ""},  # (not in the history this tab read)
        ],
    }
    entries = out["entries"]
    assert [(e["role"], e["text"], e["speaker"]) for e in entries] == [
        ("user", "add 2 and 3", ""),
        ("assistant", "", "Executor"),
        ("assistant", "It is 5.", "Executor"),
    ]
    [folded] = entries[1]["calls"]
    assert folded == {
        "id": "c1",
        "name": "add",
        "arguments": '{\n  "a": 2,\n  "b": 3\n}',
        "result": "5",
        "isError": False,
    }


def test_pictures_by_address_are_named_and_notes_are_kept() -> None:
    images = [
        {"data": "iVBORw0KGgo=", "media_type": "image/png"},
        {"url": "https://t.example/p.png"},
    ]
    stopped = message("a1", "assistant", "partial", status="interrupted")
    system = message("s1", "system", "You are a helpful assistant.")
    detail = session_detail(
        [system, message("u1", "user", "look", images=images), stopped],
        streaming=[{"id": "a2", "agent": None, "content": "so far"}],
    )
    out = run(detail)
    assert out["images"] == ["data:image/png;base64,iVBORw0KGgo=", None]  # not fetched
    assert [e["text"] for e in out["entries"]] == ["look", "partial"]  # instructions left out
    assert out["entries"][1]["notes"] == ["Interrupted: the turn was stopped here."]


def test_a_workers_steps_are_shown_whole_and_agents_messages_labelled() -> None:
    worker = {"display_only": True, "delegated_by": "d1", "worker": "AGENT_EXECUTOR"}
    delegate = {"id": "d1", "name": "delegate", "arguments": '{"task": "add 2 and 3"}'}
    add = {"id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'}
    history = [
        message("u1", "user", "sum it"),
        message("a1", "assistant", agent="SUPERVISOR", tool_calls=[delegate]),
        message("u2", "user", "add 2 and 3", metadata=worker),
        message("a2", "assistant", agent="AGENT_EXECUTOR", tool_calls=[add], metadata=worker),
        message("t1", "tool", "5", tool_call_id="c1", metadata=worker),
        message("a3", "assistant", "5", agent="AGENT_EXECUTOR", metadata=worker),
        message("t2", "tool", "5", tool_call_id="d1"),
        message("u3", "user", "continue", metadata={"autochat": True, "autochat_turn": 2}),
        message("u4", "user", "check it", metadata={"crew_member": "reviewer"}),
        message("u5", "user", "step", metadata={"plan_step": 1, "plan_steps": 3}),
    ]
    detail = session_detail(history, title="")
    entries = run(detail)["entries"]
    assert [(e["role"], e["speaker"], e["text"]) for e in entries] == [
        ("user", "", "sum it"),
        ("assistant", "Supervisor", ""),
        ("user", "Task for Executor", "add 2 and 3"),
        ("assistant", "Executor", ""),
        ("assistant", "Executor", "5"),
        ("user", "AutoChat turn 2", "continue"),
        ("user", "Crew, over to the reviewer", "check it"),
        ("user", "Plan step 1/3", "step"),
    ]
    assert [(c["name"], c["result"]) for c in entries[1]["calls"]] == [("delegate", "5")]
    assert [(c["name"], c["result"]) for c in entries[3]["calls"]] == [("add", "5")]
    assert all(not e["notes"] for e in entries)


def test_a_filtered_reply_and_an_unanswered_message_say_so() -> None:
    asked = message("u1", "user", "tell me")
    filtered = message("a1", "assistant", "I was say", metadata={"filtered": True})
    left = message("u2", "user", "and this", metadata={"unanswered": True})
    plain = message("a2", "assistant", "fine")
    detail = session_detail([asked, filtered, left, plain])
    notes = [e["notes"] for e in run(detail)["entries"]]
    assert notes == [
        [],
        [
            "Stopped by the provider's content filter (or the model declined): what it "
            "wrote before is kept. Rephrase the request, or pick another model."
        ],
        [
            "Not answered: the turn it waited for was stopped before the agent read it. "
            "Send it again to have it answered."
        ],
        [],
    ]


def test_a_turn_that_failed_before_its_reply_shows_the_error_kept_in_its_note() -> None:
    asked = message("u1", "user", "hello")
    failed = message(
        "a1",
        "assistant",
        status="error",
        metadata={
            "display_only": True,
            "error": {"code": "agent_failed", "message": "ValueError: no key"},
        },
    )
    detail = session_detail([asked, failed])
    entries = run(detail)["entries"]
    assert [e["notes"] for e in entries] == [[], ["Error: ValueError: no key"]]


def output(call_id: str, text: str, omitted: int = 0) -> dict[str, Any]:
    return {"type": "tool_call_output", "call_id": call_id, "text": text, "omitted": omitted}


def test_a_running_calls_output_grows_keeps_its_latest_part_and_gives_way_to_its_result() -> None:
    asked = message("u1", "user", "count")
    python = {"id": "c1", "name": "run_python", "arguments": '{"code": "..."}'}
    earlier = {"id": "c0", "name": "list_files", "arguments": "{}"}
    missed = {"id": "c2", "name": "read_file", "arguments": "{}"}
    history = [
        asked,
        message("a0", "assistant", tool_calls=[earlier]),
        message("t0", "tool", "(empty)", tool_call_id="c0"),
        message("a1", "assistant", tool_calls=[python, missed]),
    ]
    result = {"call_id": "c1", "content": "tick 0\ntick 1\n", "is_error": False}
    events = [
        {"type": "tool_call_started", "call": python},
        output("c1", "tick 0\n"),
        output("c1", "tick 1\n"),
        output("c1", "x" * 8000),  # past what the page keeps: the oldest 14 go
        output("c1", "late", omitted=100),  # a gap: what was shown goes too
        output("c2", "begun before the opening"),  # named from the reply that made it
        output("c0", "finished long ago"),  # its result is in: not running
        {"type": "tool_call_finished", "result": result},
        {"type": "run_finished"},
    ]
    seen = run(session_detail(history, events=events))["seen"]
    views = [s["running"] for s in seen]
    blank = {"id": "c1", "name": "run_python", "hidden": 0, "line": "… 0 characters not shown …"}
    assert views[0] == [{**blank, "text": ""}]
    assert views[2] == [{**blank, "text": "tick 0\ntick 1\n"}]
    [kept] = views[3]
    assert kept["text"] == "x" * 8000 and kept["hidden"] == 14
    assert kept["line"] == "… 14 characters not shown …"
    assert views[4] == [
        {**blank, "text": "late", "hidden": 8114, "line": "… 8,114 characters not shown …"}
    ]
    assert [v["id"] for v in views[5]] == ["c1", "c2"]
    missed_view = views[5][1]
    assert (missed_view["name"], missed_view["text"]) == ("read_file", "begun before the opening")
    assert views[6] == views[5]  # (no view for a call that has its result)
    assert [v["id"] for v in views[7]] == ["c2"]  # finished: its result takes its place
    assert views[8] == []  # the turn is over: nothing is running


def test_a_progress_bar_drawn_again_after_a_carriage_return_shows_its_last_drawing() -> None:
    detail = session_detail()
    detail["drawn"] = [
        "10%\r50%\r100%\ndone\n",
        "a\r\nb\r\n",  # CRLF line endings are line endings
        "no returns",
        "step 1 \r",  # a bar still to be drawn again: its last drawing for now
    ]
    assert run(detail)["drawn"] == ["100%\ndone\n", "a\nb\n", "no returns", "step 1 "]


def test_a_call_running_when_the_chat_opened_shows_what_it_printed_by_then() -> None:
    python = {"id": "c1", "name": "run_python", "arguments": '{"code": "..."}'}
    done = {"id": "c0", "name": "list_files", "arguments": "{}"}
    history = [
        message("u1", "user", "fetch"),
        message("a1", "assistant", tool_calls=[done, python]),
        message("t0", "tool", "(empty)", tool_call_id="c0"),
    ]
    detail = session_detail(history, events=[output("c1", "page 3\n")])
    detail["running_calls"] = [
        output("c1", "page 1\npage 2\n", omitted=40),  # all it printed by then
        output("c0", ""),  # (finished meanwhile: its result is in the history)
    ]
    [running] = run(detail)["seen"][0]["running"]
    assert running == {
        "id": "c1",
        "name": "run_python",
        "text": "page 1\npage 2\npage 3\n",
        "hidden": 40,
        "line": "… 40 characters not shown …",
    }
