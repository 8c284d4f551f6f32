"""Who a message reads as written by, and which bubble it is drawn in, without a browser: a
crew member's replies under the crew's name, a switch of role between turns and each message
of the person's in a bubble of its own, and a model's id in an error shown as code, not as a
half link."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from backends.gradio.chat_entries import GAP
from backends.gradio.looks import error_line
from backends.gradio.renderer import ChatView
from backends.gradio.stream import QUEUED_MARK, PageView, stream_session
from backends.gradio.tabs import TabStreams
from connectors.scripted import ScriptedModel, call
from gui_agent.agents import Architecture, CrewAgent, CrewMember, ExecutorAgent
from gui_agent.quick import create_interpreter
from schema import (
    AgentName,
    AgentSwitched,
    Event,
    Message,
    MessageCompleted,
    MessageStarted,
    Role,
    TextDelta,
)
from tests.backends.gradio.kit import make_page

ICONS = {agent.value: f"data:image/svg+xml;base64,{agent.value}" for agent in AgentName}


def _text(message: dict[str, Any]) -> str:
    return str(message["content"][0]["text"])


def bubbles(messages: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """The bubbles the page draws, as Gradio groups them (`group_consecutive_messages`:
    consecutive messages of one role share a bubble), each as its role and its messages'
    texts; a bubble of `GAP`s alone is not drawn (app.css hides it)."""
    grouped: list[tuple[str, list[str]]] = []
    for message in messages:
        role = str(message["role"])
        if grouped and grouped[-1][0] == role:
            grouped[-1][1].append(_text(message))
        else:
            grouped.append((role, [_text(message)]))
    return [(role, texts) for role, texts in grouped if any(t != GAP for t in texts)]


def _names(texts: list[str]) -> list[str]:
    """The speaker names the headers of `texts` show."""
    return [m for t in texts for m in re.findall(r'<span class="ga-agent"[^>]*>([^<]*)<', t)]


# -- a crew's members --------------------------------------------------------------------------


class _FirstWords:
    """Feeds a view one event at a time (`apply`) and keeps the header each reply shows as
    its first words stream (`shown`): the name it is written under before it is filed."""

    def __init__(self, view: ChatView) -> None:
        self.view = view
        self.shown: list[str] = []
        self._begun: set[str] = set()

    def apply(self, event: Event) -> None:
        self.view.apply(event)
        if isinstance(event, MessageStarted):
            self._begun.add(event.message_id)
        elif isinstance(event, TextDelta) and event.message_id in self._begun:
            self._begun.discard(event.message_id)
            self.shown.extend(_names([_text(m) for m in self.view.messages()][-1:]))


_HANDOVER = {"crew_member": "reviewer", "crew_agent": "THOUGHT"}
_PICKED_THOUGHT = {"switched": {"from_agent": "CREW", "to_agent": "THOUGHT", "reason": "picked"}}


async def test_a_crews_members_read_as_the_crews_live_and_after_a_reload(tmp_path: Path) -> None:
    """The reviewer wrote under "Thought", the name of a role the person can pick (it runs as
    THOUGHT), and the doer under "Executor": the crew's turn read as other roles'. Each reads
    as the crew's member, from its first word on (the crew's very first reply too: its
    `message_started` names the member), after a retry and in the chat rebuilt from the
    history."""
    model = ScriptedModel(
        ["Looking.", "Checked: fine.", call("list_files"), "Done again.", "Checked again."],
        delay_s=0.001,
    )
    interpreter = create_interpreter(model, workdir=tmp_path)
    await interpreter.set_agent(AgentName.CREW)
    live = ChatView(icons=ICONS)
    first_words = _FirstWords(live)
    for text in ("do it", "once more"):
        async for event in interpreter.chat(text):
            first_words.apply(event)
    assert first_words.shown == ["Crew · doer", "Crew · reviewer", "Crew · doer", "Crew · reviewer"]
    rebuilt = ChatView.from_history(interpreter.session.history, icons=ICONS)
    for view in (live, rebuilt):
        names = _names([_text(m) for m in view.messages()])
        assert "Thought" not in names and "Executor" not in names, names
        assert names.count("Crew · reviewer") == 2 and names.count("Crew · doer") == 3
    reviewer = interpreter.session.history[-1]
    assert reviewer.agent is AgentName.THOUGHT  # (the role code stays: events, API, store)
    assert 'data-agent="THOUGHT">Crew · reviewer</span>' in _text(rebuilt.messages()[-1])
    assert ICONS["CREW"] in _text(rebuilt.messages()[-1])
    model.push("Redone.", "Rechecked.")
    first_words.shown.clear()
    async with interpreter.subscribe() as events:
        await interpreter.retry()  # the view is cut back to the person's message, then goes on
        async for event in events.until_idle():
            first_words.apply(event)
    assert first_words.shown == ["Crew · doer", "Crew · reviewer"]


async def test_crew_members_of_one_role_read_as_each_their_own(tmp_path: Path) -> None:
    """Two members who both make their calls as Thought: the next turn opens with the one
    that answered first, not the one that spoke last."""
    crew = CrewAgent(
        members=[
            CrewMember("drafter", AgentName.THOUGHT, "Draft: {request}", tools=False),
            CrewMember("editor", AgentName.THOUGHT, "Edit: {request}", tools=False),
        ]
    )
    model = ScriptedModel(["A draft.", "Edited.", "Draft two.", "Edited two."], delay_s=0.001)
    roles: dict[AgentName, Architecture] = {
        AgentName.AGENT_EXECUTOR: ExecutorAgent(),
        AgentName.CREW: crew,
    }
    interpreter = create_interpreter(model, workdir=tmp_path, architectures=roles)
    await interpreter.set_agent(AgentName.CREW)
    first_words = _FirstWords(ChatView(icons=ICONS))
    for text in ("a poem", "another"):
        async for event in interpreter.chat(text):
            first_words.apply(event)
    assert first_words.shown == [
        "Crew · drafter",
        "Crew · editor",
        "Crew · drafter",
        "Crew · editor",
    ]
    names = _names([_text(m) for m in first_words.view.messages()])
    assert names[1:] == ["Crew · drafter", "Crew · editor", "Crew · drafter", "Crew · editor"]


def test_a_role_picked_while_a_turn_runs_names_the_turns_after_it() -> None:
    """The turn running when the person picks a role ends as the role it began as: a
    Thought reply that streams while the crew is picked is Thought's, and the crew's
    replies are its members' from the next turn on (in a view rebuilt meanwhile too)."""
    history = [
        Message(id="u1", role=Role.USER, content="think"),
        Message(id="h0", role=Role.USER, content="Review.", metadata=_HANDOVER),
        Message(id="r0", role=Role.ASSISTANT, agent=AgentName.THOUGHT, content="Fine."),
        Message(id="u2", role=Role.USER, content="and now", metadata=_PICKED_THOUGHT),
    ]
    view = ChatView.from_history(history, agent=AgentName.THOUGHT)

    def names_of(words: str) -> list[str]:
        return _names([_text(m) for m in view.messages() if words in _text(m)])

    view.apply(MessageStarted(message_id="a1", agent=AgentName.THOUGHT))
    view.apply(TextDelta(message_id="a1", delta="Hm"))
    view.apply(AgentSwitched(from_agent=AgentName.THOUGHT, to_agent=AgentName.CREW))
    assert names_of("Hm") == ["Thought"]
    reply = Message(id="a1", role=Role.ASSISTANT, agent=AgentName.THOUGHT, content="Hm.")
    view.apply(MessageCompleted(message=reply))
    assert names_of("Hm.") == ["Thought"]
    view.apply(MessageCompleted(message=Message(id="u3", role=Role.USER, content="go")))
    view.apply(MessageStarted(message_id="a2", agent=AgentName.AGENT_EXECUTOR))
    view.apply(TextDelta(message_id="a2", delta="Look"))
    assert names_of("Look") == ["Crew"]  # (the crew's turn; its doer not named here yet)


def test_a_crew_reply_a_stop_ended_reads_as_its_members_too() -> None:
    """A reply a Stop or an error ended that is kept unmarked (a chat kept before such
    replies were marked, or imported): it is the member's the hand-over before it named."""
    handover = Message(
        id="h1",
        role=Role.USER,
        content="You are the reviewer.",
        metadata={"crew_member": "reviewer", "crew_agent": "THOUGHT"},
    )
    cut = Message(id="a2", role=Role.ASSISTANT, agent=AgentName.THOUGHT, content="Half a rev")
    history = [Message(id="u1", role=Role.USER, content="go"), handover, cut]
    assert _names([_text(m) for m in ChatView.from_history(history).messages()]) == [
        "Crew · reviewer"
    ]
    # ... and a Thought reply after the person picked Thought is Thought's again
    picked = {"switched": {"from_agent": "CREW", "to_agent": "THOUGHT", "reason": "picked"}}
    later = [
        Message(id="u2", role=Role.USER, content="think", metadata=picked),
        Message(id="a3", role=Role.ASSISTANT, agent=AgentName.THOUGHT, content="Hm."),
    ]
    names = _names([_text(m) for m in ChatView.from_history([*history, *later]).messages()])
    assert names[-1] == "Thought"


# -- a switch of role between turns ------------------------------------------------------------


def _switched_history() -> list[Message]:
    return [
        Message(id="u1", role=Role.USER, content="hello"),
        Message(id="a1", role=Role.ASSISTANT, agent=AgentName.AGENT_EXECUTOR, content="Hi."),
    ]


def test_a_switch_of_role_between_turns_is_a_bubble_of_its_own() -> None:
    """Picked after a reply, "Switched to Thought from Executor" was drawn at the end of
    that reply's bubble, as if the reply said it. It is a bubble of its own, before the new
    speaker's, live and rebuilt, where the history keeps it or where the speaker changes."""
    switch = AgentSwitched(
        from_agent=AgentName.AGENT_EXECUTOR, to_agent=AgentName.THOUGHT, reason="picked"
    )
    live = ChatView.from_history(_switched_history(), icons=ICONS)
    live.apply(switch)
    after_send = [
        *_switched_history(),
        Message(
            id="u2",
            role=Role.USER,
            content="think",
            metadata={"switched": {"from_agent": "AGENT_EXECUTOR", "to_agent": "THOUGHT"}},
        ),
        Message(id="a2", role=Role.ASSISTANT, agent=AgentName.THOUGHT, content="Hm."),
    ]
    unkept = [  # (a switch no event and no message tells: seen where the speaker changes)
        *_switched_history(),
        Message(id="u2", role=Role.USER, content="think"),
        Message(id="a2", role=Role.ASSISTANT, agent=AgentName.THOUGHT, content="Hm."),
    ]
    *_, (_, switched), (role, reply) = bubbles(
        ChatView.from_history(unkept, icons=ICONS).messages()
    )
    assert len(switched) == 1 and "ga-switch" in switched[0]  # before the new speaker's
    assert role == "assistant" and reply[0].endswith("Hm.")
    for view in (live, *(ChatView.from_history(h, icons=ICONS) for h in (after_send, unkept))):
        drawn = bubbles(view.messages())
        [reply] = [texts for _, texts in drawn if any("Hi." in t for t in texts)]
        assert not any("ga-switch" in t for t in reply), reply
        [(role, line)] = [(r, t) for r, t in drawn if any("ga-switch" in x for x in t)]
        assert role == "assistant" and len(line) == 1  # (not atop the new speaker's either)
        assert "Switched to Thought from Executor" in line[0]


# -- messages of the person's in a row ---------------------------------------------------------


async def test_messages_queued_while_the_agent_worked_are_a_bubble_each(tmp_path: Path) -> None:
    """Two messages sent while a reply streamed were taken up together (the agent reads
    what waits when its step ends) and drawn in one bubble: each is a bubble of its own, in
    the order sent, waiting and once answered, and the answer comes after them."""
    page = make_page()
    model = ScriptedModel(["one two three " * 20, "Both read."], delay_s=0.005)
    interpreter = create_interpreter(model, workdir=tmp_path)
    streams = TabStreams()
    shown: list[list[dict[str, Any]]] = []
    with streams.watch("tab", interpreter.id) as watch:
        stream = stream_session(
            interpreter,
            lambda: PageView.of(page, interpreter, icons={}),
            action=lambda: interpreter.send("first"),
            watch=watch,
        )
        queued = False
        async for update in stream:
            if page.chatbot in update:
                shown.append(update[page.chatbot])
            texts = [_text(m) for m in update.get(page.chatbot, [])]
            if not queued and any("three" in t for t in texts):
                await interpreter.send("queued A")
                await interpreter.send("queued B")
                streams.wake(interpreter.id)
                queued = True
    waiting = next(s for s in shown if sum(QUEUED_MARK in _text(m) for m in s) == 2)
    rebuilt = PageView.of(page, interpreter, icons={}).updates(full=True)[page.chatbot]
    for messages in (waiting, shown[-1], rebuilt):
        people = [texts for role, texts in bubbles(messages) if role == "user"]
        assert [t[0].split("\n")[0] for t in people] == ["first", "queued A", "queued B"]
        assert all(len(texts) == 1 for texts in people), people
    for messages in (shown[-1], rebuilt):
        assert "Both read." in bubbles(messages)[-1][1][-1]


def test_the_persons_messages_in_a_row_in_a_history_are_a_bubble_each() -> None:
    history = [
        Message(id="u1", role=Role.USER, content="A"),
        Message(id="u2", role=Role.USER, content="B"),
        Message(id="a1", role=Role.ASSISTANT, agent=AgentName.AGENT_EXECUTOR, content="AB"),
    ]
    live = ChatView()
    events: list[Event] = [MessageCompleted(message=m) for m in history]
    for event in events:
        live.apply(event)
    for view in (live, ChatView.from_history(history)):
        assert [(r, len(t)) for r, t in bubbles(view.messages())] == [
            ("user", 1),
            ("user", 1),
            ("assistant", 1),
        ]


# -- a model's id in an error ------------------------------------------------------------------

MODEL_ID = "openai-compatible:http://localhost:8080/v1#qwen2.5:7b"


def test_a_model_id_in_an_error_is_shown_as_code() -> None:
    """Markdown linked the address inside a model's id ("openai-compatible:" plain, the
    rest a link): the id is code, whole, and the text around it is as it was. The id a
    model's error begins with is code whatever its form, so every id reads alike."""
    line = error_line("model_error", f"{MODEL_ID}: the connection to the server failed (boom)")
    assert line.endswith(f"</strong> ` {MODEL_ID} `: the connection to the server failed (boom)")
    for model in ("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-20250514"):
        line = error_line("model_auth", f"{model}: the key was refused (check the key: abc)")
        assert line.endswith(f"</strong> ` {model} `: the key was refused (check the key: abc)")
    named = error_line("model_error", f"no answer from {MODEL_ID}, twice: giving up")
    assert named.endswith(f"</strong> no answer from ` {MODEL_ID} `, twice: giving up")
    for prose in ("ValueError: bad value", "agent_failed: KeyError: 'x'", "could not save: x"):
        assert error_line("internal", prose).endswith(f"</strong> {prose}")
    plain = error_line("model_error", "see http://localhost:8080/v1 for more")
    assert plain.endswith("</strong> see http://localhost:8080/v1 for more")  # (a link: whole)
    quoted = error_line("model_error", f"model `{MODEL_ID}` is not offered")
    assert quoted.endswith(f"</strong> model `{MODEL_ID}` is not offered")  # (code already)
