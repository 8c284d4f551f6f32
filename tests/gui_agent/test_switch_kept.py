"""A role switch is kept with the message that next starts a turn (metadata "switched"),
so its reason outlives the event buffer: a rebuilt view, a restart, an export."""

from __future__ import annotations

from pathlib import Path

from schema import AgentName
from tests.gui_agent.helpers import make


async def test_the_next_message_keeps_the_switch_and_its_reason(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, ["plan: 1. do it", "done", "answer", "again"])
    await interpreter.set_agent(AgentName.THOUGHT, reason="picked by the person")
    _ = [e async for e in interpreter.chat("think about it")]
    first = interpreter.session.history[0]
    assert first.metadata["switched"] == {
        "from_agent": "AGENT_EXECUTOR",
        "to_agent": "THOUGHT",
        "reason": "picked by the person",
    }
    # A message with no switch before it carries none.
    _ = [e async for e in interpreter.chat("and now?")]
    user_messages = [m for m in interpreter.session.history if m.role.value == "user"]
    assert "switched" not in user_messages[-1].metadata


async def test_switches_back_and_forth_before_a_message_keep_the_net_switch(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, ["a", "b"])
    await interpreter.set_agent(AgentName.THOUGHT)
    await interpreter.set_agent(AgentName.CREW, reason="the crew reviews")
    _ = [e async for e in interpreter.chat("go")]
    switched = interpreter.session.history[0].metadata["switched"]
    assert switched == {
        "from_agent": "AGENT_EXECUTOR",
        "to_agent": "CREW",
        "reason": "the crew reviews",
    }
    # there and back again before the next message: no switch to keep
    await interpreter.set_agent(AgentName.THOUGHT)
    await interpreter.set_agent(AgentName.CREW)
    _ = [e async for e in interpreter.chat("more")]
    last_user = [m for m in interpreter.session.history if m.role.value == "user"][-1]
    assert last_user.content == "more" and "switched" not in last_user.metadata


async def test_a_message_sent_with_a_role_keeps_the_switch(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, ["a"])
    async with interpreter.subscribe() as sub:
        sent = await interpreter.send("hello", agent=AgentName.THOUGHT)
        _ = [e async for e in sub.until_idle()]
    kept = interpreter.session.history[0]
    assert kept.id == sent.id and kept.metadata["switched"]["to_agent"] == "THOUGHT"


async def test_retry_and_edit_keep_the_switch_of_the_message_they_replace(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, ["a", "b", "c", "d"])
    await interpreter.set_agent(AgentName.THOUGHT, reason="picked by the person")
    _ = [e async for e in interpreter.chat("think")]
    async with interpreter.subscribe() as sub:
        await interpreter.retry()
        _ = [e async for e in sub.until_idle()]
    assert interpreter.session.history[0].metadata["switched"]["to_agent"] == "THOUGHT"
    async with interpreter.subscribe() as sub:
        await interpreter.edit_last("think harder")
        _ = [e async for e in sub.until_idle()]
    first = interpreter.session.history[0]
    assert first.content == "think harder"
    assert first.metadata["switched"] == {
        "from_agent": "AGENT_EXECUTOR",
        "to_agent": "THOUGHT",
        "reason": "picked by the person",
    }
    # a switch made since is merged: from where the kept one started, to the role now
    await interpreter.set_agent(AgentName.CREW, reason="the crew reviews")
    async with interpreter.subscribe() as sub:
        await interpreter.retry()
        _ = [e async for e in sub.until_idle()]
    assert interpreter.session.history[0].metadata["switched"] == {
        "from_agent": "AGENT_EXECUTOR",
        "to_agent": "CREW",
        "reason": "the crew reviews",
    }
