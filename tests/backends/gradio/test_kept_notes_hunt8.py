"""What a reply's history keeps is shown in a view rebuilt from it as a tab that watched it
live shows it: the role the person picked, with its reason, once the session's event buffer
no longer holds the switch (here: a session reopened by a new server from its SQLite
store), and the note under a reply the model cut off at its output limit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import gradio as gr

from backends.gradio.layout import SETTING_LABELS, Page, build_page
from backends.gradio.looks import CUT_OFF_MARK
from backends.gradio.renderer import ChatView
from backends.gradio.stream import PageView
from connectors.scripted import ScriptedModel, ScriptedReply, call
from gui_agent.interpreter import Interpreter
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.quick import create_interpreter
from gui_agent.store import SQLiteStore
from gui_agent.tools import tool
from schema import AgentName, AgentSwitched, Message, ModelResponse, Role

PICKED = "Switched to Thought from Executor (picked by the person)"
OWNER = "local"


def texts(view: ChatView) -> list[str]:
    return [str(message["content"][0]["text"]) for message in view.messages()]


def make_page() -> Page:
    with gr.Blocks():
        return build_page(
            title="t",
            notice=None,
            agents=list(AgentName),
            models=["scripted"],
            default_model="scripted",
            model_note="",
        )


@asynccontextmanager
async def serving(
    database: Path, workspace: Path, replies: Sequence[ScriptedReply] = ()
) -> AsyncIterator[SessionManager]:
    """A server's sessions, kept in the SQLite file `database` (a new one per call: a restart)."""
    model = ScriptedModel(replies, name="scripted", default="noted")
    manager = SessionManager(
        models=StaticCatalog(model), store=SQLiteStore(database), workspace_root=workspace
    )
    await manager.start()
    try:
        yield manager
    finally:
        await manager.close()


def watched(interpreter: Interpreter) -> list[str]:
    """What a tab that watched the whole session live shows."""
    live = ChatView()
    for event in interpreter.events_since(0):
        live.apply(event)
    return texts(live)


async def say(interpreter: Interpreter, text: str) -> None:
    await interpreter.send(text)
    await interpreter.wait_idle()


async def test_a_picked_role_keeps_its_reason_after_a_restart(tmp_path: Path) -> None:
    database = tmp_path / "sessions.db"
    async with serving(database, tmp_path) as manager:
        interpreter = await manager.create(OWNER)
        await say(interpreter, "before the switch")
        await interpreter.set_agent(AgentName.THOUGHT)
        await say(interpreter, "after the switch")
        await say(interpreter, "and once more")
        shown = watched(interpreter)
        session_id = interpreter.id
    assert sum(PICKED in text for text in shown) == 1
    async with serving(database, tmp_path) as manager:  # a new server: no event buffered
        reopened = await manager.get(session_id, OWNER)
        assert reopened.events_since(0) == []
        rebuilt = texts(PageView.of(make_page(), reopened, icons={}).chat)
    assert rebuilt == shown
    switch = next(number for number, text in enumerate(rebuilt) if PICKED in text)
    assert rebuilt[switch + 1] == "after the switch"


async def test_a_switch_still_buffered_is_shown_once(tmp_path: Path) -> None:
    async with serving(tmp_path / "sessions.db", tmp_path) as manager:
        interpreter = await manager.create(OWNER)
        await say(interpreter, "before the switch")
        await interpreter.set_agent(AgentName.THOUGHT)
        rebuilt_before = texts(PageView.of(make_page(), interpreter, icons={}).chat)
        await say(interpreter, "after the switch")
        rebuilt = texts(PageView.of(make_page(), interpreter, icons={}).chat)
        shown = watched(interpreter)
    assert any(PICKED in text for text in rebuilt_before)  # picked, nothing sent yet
    assert rebuilt == shown
    assert sum(PICKED in text for text in rebuilt) == 1


async def test_a_role_picked_while_a_tool_runs_keeps_its_reason_once(tmp_path: Path) -> None:
    """The turn running when the role was picked goes on in the old role (a line says so,
    without a reason); the next message keeps the switch, which the view showed already."""
    gate, entered = asyncio.Event(), asyncio.Event()

    @tool
    async def wait_gate() -> str:
        """Block until the test opens the gate."""
        entered.set()
        await gate.wait()
        return "opened"

    model = ScriptedModel([call("wait_gate"), "first done"], default="noted")
    interpreter = create_interpreter(model, tools=[wait_gate], workdir=tmp_path)
    await interpreter.send("first")
    await entered.wait()
    await interpreter.set_agent(AgentName.THOUGHT)
    gate.set()
    await interpreter.wait_idle()
    await say(interpreter, "second")
    kept = interpreter.session.history[-2].metadata["switched"]
    assert kept["to_agent"] == "THOUGHT"  # the core keeps it with "second"
    shown = watched(interpreter)
    rebuilt = texts(PageView.of(make_page(), interpreter, icons={}).chat)
    assert sum(PICKED in text for text in shown) == 1
    assert rebuilt == shown


def test_a_kept_switch_the_view_saw_announced_is_not_repeated_live() -> None:
    """A tab showing the switch line (from the event) sees the message that keeps it come."""
    asked = Message(role=Role.USER, content="first")
    view = ChatView.from_history([asked])
    view.apply(
        AgentSwitched(
            from_agent=AgentName.AGENT_EXECUTOR, to_agent=AgentName.THOUGHT, reason="my reason"
        )
    )
    kept = {"from_agent": "AGENT_EXECUTOR", "to_agent": "THOUGHT", "reason": "my reason"}
    view.add_message(Message(role=Role.USER, content="next", metadata={"switched": kept}))
    shown = texts(view)
    assert sum("(my reason)" in text for text in shown) == 1
    assert shown[-1] == "next" and "(my reason)" in shown[-2]


def test_an_imported_chat_with_a_kept_switch_of_unknown_roles_shows_no_line() -> None:
    odd = {"from_agent": "NOBODY", "to_agent": 7, "reason": "<b>x</b>"}
    named = {"from_agent": 3, "to_agent": "CREW", "reason": ["not text"]}
    view = ChatView.from_history(
        [
            Message(role=Role.USER, content="a", metadata={"switched": odd}),
            Message(role=Role.USER, content="b", metadata={"switched": named}),
            Message(role=Role.USER, content="c", metadata={"switched": "THOUGHT"}),
        ]
    )
    shown = texts(view)
    assert shown[0] == "a" and shown[-1] == "c"
    assert [text for text in shown if "Switched" in text] == [
        '<span class="ga-agent" data-agent="CREW">Crew</span> '
        '<span class="ga-switch">Switched to Crew</span>'
    ]


async def test_a_reply_cut_off_at_the_output_limit_says_so_live_and_rebuilt(
    tmp_path: Path,
) -> None:
    database = tmp_path / "sessions.db"
    replies = [
        ModelResponse(text="The reasons are: one, two, th", finish_reason="length"),
        ModelResponse(text="three.", finish_reason="stop"),
    ]
    async with serving(database, tmp_path, replies) as manager:
        interpreter = await manager.create(OWNER)
        await say(interpreter, "list the reasons")
        await say(interpreter, "continue")
        shown = watched(interpreter)
        session_id = interpreter.id
    async with serving(database, tmp_path) as manager:
        rebuilt = texts(
            PageView.of(make_page(), await manager.get(session_id, OWNER), icons={}).chat
        )
    assert rebuilt == shown
    cut, whole = shown[1], shown[3]
    assert "one, two, th" in cut and cut.endswith(CUT_OFF_MARK)
    assert "three." in whole and CUT_OFF_MARK not in whole
    # the note names the field that raises the limit, as the settings panel labels it
    field = make_page().max_tokens
    assert SETTING_LABELS["max_tokens"] in CUT_OFF_MARK and '"continue"' in CUT_OFF_MARK
    assert field.label is not None and field.label.startswith(SETTING_LABELS["max_tokens"])
