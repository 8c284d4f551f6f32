"""What the terminal chat shows of the roles at work: a reply written whole (never streamed)
after its label, and the hand-overs between an agent's parts, in the words the pages use
("Plan step 1/2: ...", "Crew, over to the reviewer", "Task for Executor")."""

from __future__ import annotations

from pathlib import Path

from connectors.scripted import call
from gui_agent.interpreter import Interpreter
from gui_agent.repl_display import EventLines
from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalResolved,
    Message,
    MessageCompleted,
    MessageStarted,
    Role,
    TextDelta,
)
from schema.messages import CREW_SPEAKER
from tests.gui_agent.helpers import make

NO_TOOLS_NOTE = (
    "(No answer: the THOUGHT agent asked to call run_python, but it has no tools here, so "
    "nothing was run.)"
)


async def shown(interpreter: Interpreter, text: str) -> str:
    """What the terminal prints of the turn `text` starts."""
    lines = EventLines()
    return "".join(
        said for event in [e async for e in interpreter.chat(text)] if (said := lines.format(event))
    )


async def test_a_role_without_tools_that_asked_for_one_says_so_after_its_label(
    tmp_path: Path,
) -> None:
    """The note is the reply's whole text, set when it completes (nothing streamed): the
    terminal printed `[Thought] ` and nothing after it."""
    interpreter, _ = make(tmp_path, [call("run_python", code="print(1)")])
    await interpreter.set_agent("thought")
    out = await shown(interpreter, "hi")
    assert f"\n[Thought] {NO_TOOLS_NOTE}\n  (completed)" in out
    assert out.count("No answer") == 1


async def test_the_planners_planning_call_that_asks_for_a_tool_says_so_and_each_step_is_said(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, [call("read_file", path="a.txt"), "did the one step"])
    await interpreter.set_agent("planner")
    out = await shown(interpreter, "tidy the notes")
    assert "[Planner] (No answer: the LLM_PLANNER agent asked to call read_file" in out
    # no plan came of it: the request itself is the one step
    assert "\n  ⇢ Plan step 1/1: tidy the notes\n[Executor] did the one step" in out


async def test_plan_steps_are_said_as_they_are_handed_to_the_executor(tmp_path: Path) -> None:
    plan = "1. Read the notes\n2. Write the summary"
    interpreter, _ = make(tmp_path, [plan, "read them", "wrote it"])
    await interpreter.set_agent("planner")
    out = await shown(interpreter, "summarise my notes")
    assert out.count("1. Read the notes") == 1  # the plan streamed: not said again
    first = out.index("\n  ⇢ Plan step 1/2: Read the notes\n[Executor] read them")
    second = out.index("\n  ⇢ Plan step 2/2: Write the summary\n[Executor] wrote it")
    assert first < second


async def test_the_crew_says_when_the_doer_hands_over_to_the_reviewer(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, ["did it", "checked: fine"])
    await interpreter.set_agent("crew")
    out = await shown(interpreter, "do it")
    said = "[Crew · doer] did it\n  ⇢ Crew, over to the reviewer\n[Crew · reviewer] checked: fine"
    assert said in out  # (not the roles its members' calls are made as: Executor, Thought)


async def test_a_supervisors_task_for_a_worker_is_said(tmp_path: Path) -> None:
    delegate = call("delegate", worker="AGENT_EXECUTOR", task="count the files")
    interpreter, _ = make(tmp_path, [delegate, "there are none", "The worker found none."])
    await interpreter.set_agent("supervisor")
    out = await shown(interpreter, "how many files?")
    assert "\n  ⇢ Task for Executor" in out
    assert out.index("⇢ Task for Executor") < out.index("[Executor] there are none")


def test_a_streamed_reply_is_not_shown_again_and_one_without_a_start_gets_its_label() -> None:
    lines = EventLines()
    reply = Message(id="m1", role=Role.ASSISTANT, agent=AgentName.THOUGHT, content="hello")
    said = [
        lines.format(MessageStarted(message_id="m1", agent=AgentName.THOUGHT)),
        lines.format(TextDelta(message_id="m1", delta="hello")),
        lines.format(MessageCompleted(message=reply)),
        lines.format(MessageCompleted(message=reply.model_copy(update={"id": "m2"}))),
    ]
    assert said == ["\n[Thought] ", "hello", None, "\n[Thought] hello"]


def test_a_crew_members_reply_written_whole_is_said_under_the_members_name() -> None:
    note = Message(id="m1", role=Role.ASSISTANT, agent=AgentName.THOUGHT, content="fine")
    marked = note.model_copy(update={"metadata": {CREW_SPEAKER: "reviewer"}})
    assert EventLines().format(MessageCompleted(message=marked)) == "\n[Crew · reviewer] fine"
    assert EventLines().format(MessageCompleted(message=note)) == "\n[Thought] fine"
    blank = note.model_copy(update={"metadata": {CREW_SPEAKER: " "}})  # names no one
    assert EventLines().format(MessageCompleted(message=blank)) == "\n[Thought] fine"


def test_a_reply_written_whole_after_other_output_is_said_under_its_own_label() -> None:
    lines = EventLines()
    lines.format(MessageStarted(message_id="m1", agent=AgentName.THOUGHT))
    lines.format(ApprovalResolved(approval_id="a", decision=ApprovalDecision.DENY, by="user"))
    note = Message(id="m1", role=Role.ASSISTANT, agent=AgentName.THOUGHT, content="a note")
    assert lines.format(MessageCompleted(message=note)) == "\n[Thought] a note"
