"""LLM_PLANNER: plan first, then have the executor carry out the steps one by one.

A turn: one model call without tools writes a numbered plan (shown as the planner's
message); then, for each step, a USER message marked ``plan_step`` (shown as "Plan step i/n")
hands the step to the executor's loop, with tools, approvals and limits as usual. The last
step also asks for the answer to the person's request. The plan stops early when a step
hits a limit (the outcome says which, and names the step and the steps not run), when the
token budget is spent before the next step (steps that end without a tool call never reach
the executor's own check), when the agent calls `task_complete`, on Stop, or when the
person writes meanwhile: their message may change the plan, so the steps left are not run
(a message the executor took in during a step was answered there; one still waiting becomes
the next turn, planned anew); a note to the person and the outcome's detail name them.
In an AutoChat turn the steps carry the AutoChat goal as the request.

Why steps are USER messages: every vendor's chat format lets the model act on a user turn;
a trailing system note after the planner's own message would read as the start of its
next message to some APIs. The steps carry the person's request, so they still make sense
after the request has slid out of the memory window.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

from gui_agent.agents.base import AgentDeps, turn_request
from gui_agent.agents.executor import (
    ExecutorAgent,
    Turn,
    budget_spent,
    drain_inbox,
    model_step,
)
from gui_agent.session import Session, written_by_person
from schema import (
    AgentName,
    Event,
    Message,
    MessageCompleted,
    Role,
    RunFinished,
    RunOutcome,
)

__all__ = ["PlannerAgent", "parse_plan"]

DEFAULT_MAX_STEPS = 6

PLAN_LEFT = "plan_left"
"""`metadata["note"]` of the planner's display-only note that the person's message stopped
the plan, naming the steps not run."""

_NUMBERED = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*)?(?:step\s*)?\d{1,3}\s*[.):](?!\d)\s*(.+?)\s*$", re.IGNORECASE
)
_STEP_KEYS = frozenset({"step", "task", "action", "description", "title", "text", "name"})
_BULLET = re.compile(r"^\s*[-*•]\s+(.+?)\s*$")


def planning_instruction(max_steps: int) -> str:
    return (
        "Plan before acting. Do not do the task yet and do not call tools. Reply with a "
        f"numbered list of at most {max_steps} short, concrete steps that together answer "
        "the person's latest request (1. ..., 2. ...), and nothing else. A simple request "
        "needs just one step."
    )


def _json_steps(text: str) -> list[str]:
    """The steps of a plan a model wrote as JSON (models asked for a list often do): a list
    of texts or of objects with a text field, bare or under a key such as "steps", possibly
    inside a code fence. An empty list when the text is not such JSON."""
    body = text.strip()
    if body.startswith("```"):
        body = body.partition("\n")[2].rpartition("```")[0].strip()
    if not body.startswith(("[", "{")):
        return []
    try:
        plan = json.loads(body)
    except ValueError:
        return []
    if isinstance(plan, dict):
        plan = next((value for value in plan.values() if isinstance(value, list)), [])
    if not isinstance(plan, list):
        return []
    steps = []
    for item in plan:
        if isinstance(item, str):
            steps.append(item)
        elif isinstance(item, dict):
            texts = [v for k, v in item.items() if k in _STEP_KEYS and isinstance(v, str)]
            steps.extend(texts[:1])
    return steps


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip())


def _numbered_steps(lines: list[str]) -> list[str]:
    """The numbered lines at the plan's own level; numbered or bulleted lines indented under
    one (sub-steps, details) are folded into it, not run as steps of their own."""
    steps: list[str] = []
    top: int | None = None
    for line in lines:
        numbered = _NUMBERED.match(line)
        indent = _indent(line)
        if numbered is not None and (top is None or indent < top + 2):
            top = indent if top is None else min(top, indent)
            steps.append(numbered.group(1))
        elif top is not None and indent >= top + 2:
            sub = numbered or _BULLET.match(line)
            if sub is not None and (detail := _clean_step(sub.group(1))):
                steps[-1] += ("; " if ": " in steps[-1] else ": ") + detail
    return steps


def _clean_step(step: str) -> str:
    """A step without the markdown around it: the closing marker of a bold number
    ("**1.** Do it", "**Step 1:** Do it") and emphasis or code around the whole step
    ("**Do it**"). Markers inside the text ("**Read** the file") stay, in pairs."""
    text = step.strip()
    for mark in ("**", "__"):
        if text.startswith(mark) and text.count(mark) % 2:
            text = text[len(mark) :].lstrip()
    for mark in ("**", "__", "`", "*", "_"):
        inner = text[len(mark) : -len(mark)]
        if text.startswith(mark) and text.endswith(mark) and inner and mark not in inner:
            text = inner.strip()
    return text


def parse_plan(text: str, max_steps: int) -> list[str]:
    """The steps of a plan: its numbered lines (a markdown heading such as "## Step 1: ..."
    counts as one; lines indented under one are folded into it), else its bullet lines,
    else a JSON list of steps; at most `max_steps` (the rest folded into the last one, so
    nothing planned is dropped)."""
    lines = text.splitlines()
    steps = _numbered_steps(lines)
    if not steps:
        steps = [m.group(1) for line in lines if (m := _BULLET.match(line))]
    if not steps:
        steps = _json_steps(text)
    steps = [cleaned for step in steps if (cleaned := _clean_step(step))]
    if len(steps) > max_steps:
        steps = [*steps[: max_steps - 1], "; then ".join(steps[max_steps - 1 :])]
    return steps


def step_message(request: str, steps: list[str], index: int) -> Message:
    """The USER message that hands step `index` (0-based) to the executor."""
    count = len(steps)
    text = f"Step {index + 1} of {count} of the plan for: {request}\n\nDo this step now: "
    text += steps[index]
    if index == count - 1:
        text += "\n\nThis is the last step: when it is done, answer the request above."
    else:
        text += "\n\nDo only this step; the next ones follow."
    return Message(
        role=Role.USER,
        content=text,
        metadata={"plan_step": index + 1, "plan_steps": count, "step": steps[index]},
    )


class PlannerAgent:
    """Plans with one model call, then runs each step with the executor's loop."""

    def __init__(
        self,
        *,
        name: AgentName = AgentName.LLM_PLANNER,
        executor: ExecutorAgent | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self._name = name
        self._executor = executor or ExecutorAgent()
        self.max_steps = max_steps

    @property
    def name(self) -> AgentName:
        return self._name

    @property
    def description(self) -> str:
        return "Writes a short plan, then has the executor carry out each step."

    async def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        turn = Turn()
        # Messages that waited with this one are planned with it, not taken for ones written
        # meanwhile (each would stop the plan, and the next turn would plan only one of them).
        together = drain_inbox(session)
        for queued in together:
            yield MessageCompleted(message=queued)
        async for event in model_step(
            session,
            deps,
            agent=self._name,
            turn=turn,
            use_tools=False,
            instruction=planning_instruction(self.max_steps),
        ):
            yield event
        request = "\n\n".join(
            [turn_request(session, prompt), *(m.content for m in together if m.content.strip())]
        )
        steps = parse_plan(turn.last_response().text, self.max_steps) or [request]
        for index in range(len(steps)):
            if session.inbox:  # the person wrote meanwhile: their message is the next turn
                left = _left_for_message(session, self._name, len(steps), index, waiting=True)
                for event in left:
                    yield event
                return
            if (spent := budget_spent(session)) is not None:  # a step without tool calls
                yield not_run(spent, steps, index)  # never checks it: it is checked here
                return
            message = step_message(request, steps, index)
            session.add(message)
            yield MessageCompleted(message=message)
            finished: RunFinished | None = None
            async for event in self._executor.loop(session, deps, turn=turn):
                if isinstance(event, RunFinished):
                    finished = event
                else:
                    yield event
            if finished is not None:  # a limit ended the step: say which step, and what is left
                yield unfinished(finished, steps, index)
                return
            if session.task_complete is not None:
                return
            if _person_wrote_since(session, message):  # answered in the step: the rest waits
                if index + 1 < len(steps):
                    for event in _left_for_message(session, self._name, len(steps), index + 1):
                        yield event
                return


def unfinished(finished: RunFinished, steps: list[str], index: int) -> RunFinished:
    """`finished` (a limit that ended step `index`) with its detail naming the step and the
    steps that were not run."""
    count = len(steps)
    step = steps[index] if len(steps[index]) <= 80 else steps[index][:79] + "…"
    detail = (
        f"plan step {index + 1} of {count} ({step}) did not finish: "
        f"{finished.detail or finished.outcome.value}"
    )
    left = count - index - 1
    if left:
        detail += f"; {'step' if left == 1 else 'steps'} {index + 2}"
        detail += f"–{count} were not run" if left > 1 else " was not run"
    return finished.model_copy(update={"detail": detail})


def not_run(finished: RunFinished, steps: list[str], index: int) -> RunFinished:
    """`finished` (the token budget, spent before step `index` began) with its detail
    naming the steps that were not run."""
    count, first = len(steps), index + 1
    which = f"step {first} was" if first == count else f"steps {first}–{count} were"
    after = f"after plan step {index} of {count}" if index else "once the plan was written"
    detail = f"{finished.detail or finished.outcome.value} {after}; {which} not run"
    return finished.model_copy(update={"detail": detail})


def _left_for_message(
    session: Session, agent: AgentName, count: int, first: int, *, waiting: bool = False
) -> list[Event]:
    """The plan of `count` steps stopped before step `first` (0-based) because the person
    wrote: a note that says so, for the person, and the turn's outcome naming the steps not
    run and why. `waiting`: their message is still in the inbox (it becomes the next turn,
    planned anew); otherwise the executor took it in during the step before and answered it.

    The note is display-only: a second assistant message in a row would break chat templates
    that want turns to alternate, and the model reads the person's message itself. The
    outcome stays COMPLETED: nothing failed and no Stop came (INTERRUPTED would read as one,
    and would end AutoChat as "stopped by the user"); the turn ended where the person
    redirected it, and the detail says what was left, as for a step that hits a limit."""
    which = f"step {count} was" if first == count - 1 else f"steps {first + 1}–{count} were"
    if waiting:
        detail = f"your message came in before plan step {first + 1} of {count} began"
        said = f"your message came in before step {first + 1} of {count} began. It is "
        # (by the planner, unless the person picked another role for it meanwhile)
        said += "answered next" + (", with a plan of its own." if session.agent is agent else ".")
    else:
        detail = f"your message came in during plan step {first} of {count}, answered there"
        said = f"your message came in during step {first} of {count}, and I answered it instead."
    detail += f"; {which} not run"
    note = Message(
        role=Role.ASSISTANT,
        agent=agent,
        content=f"Plan {which} not run: {said}",
        metadata={"display_only": True, "note": PLAN_LEFT},
    )
    session.add(note)
    return [
        MessageCompleted(message=note),
        RunFinished(outcome=RunOutcome.COMPLETED, detail=detail),
    ]


def _person_wrote_since(session: Session, step: Message) -> bool:
    """Whether the person's own message came into the history after `step` (the executor
    takes messages sent during a turn in between model calls): the plan then stops, since
    the rest of it may be what they asked to change."""
    for message in reversed(session.history):
        if message is step:
            return False
        if written_by_person(message):
            return True
    return False
