"""`--agent SPEC`: your own agent, loaded by name from a module or a file, becomes the role
Other; a spec that cannot be loaded is refused before anything starts, saying why."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from connectors import ExternalInterpreterAgent, ScriptedModel
from connectors.agent_loading import load_agent
from gui_agent import create_interpreter
from gui_agent.exceptions import ConfigError
from schema import AgentName, MessageCompleted

BOT = """
from gui_agent.agents.executor import ExecutorAgent
from schema import AgentName

async def agent(messages):
    said = messages[-1]["content"]
    yield f"bot heard: {said}"

class Holder:
    streamer = agent

role = ExecutorAgent(name=AgentName.AGENT_EXECUTOR)
not_an_agent = 42

def broken():
    pass
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "mybot.py").write_text(BOT)
    (tmp_path / "failing_bot.py").write_text("raise RuntimeError('no key set')\n")
    return tmp_path


@pytest.fixture(autouse=True)
def _forget_modules() -> object:
    yield
    for name in [n for n in sys.modules if "mybot" in n or "failing_bot" in n]:
        del sys.modules[name]


@pytest.mark.parametrize("spec", ["mybot:agent", "mybot.py:agent", "mybot:Holder.streamer"])
async def test_a_streaming_callable_becomes_the_role_other_and_answers(
    folder: Path, spec: str
) -> None:
    agent = load_agent(spec, folder=folder)
    assert isinstance(agent, ExternalInterpreterAgent) and agent.name is AgentName.OTHER
    interpreter = create_interpreter(
        ScriptedModel(),
        architectures={AgentName.OTHER: agent},
        workdir=folder,
    )
    events = [e async for e in interpreter.chat("hello")]
    replies = [e.message.content for e in events if isinstance(e, MessageCompleted)]
    assert replies[-1] == "bot heard: hello"
    await interpreter.close()


def test_an_agent_role_is_used_as_it_is(folder: Path) -> None:
    role = load_agent(" mybot:role ", folder=folder)
    assert role.name is AgentName.AGENT_EXECUTOR
    assert not isinstance(role, ExternalInterpreterAgent)


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("mybot", "give it as MODULE:NAME"),
        (":agent", "give it as MODULE:NAME"),
        ("mybot:", "give it as MODULE:NAME"),
        ("no_such_bot_module:agent", "no module 'no_such_bot_module'"),
        ("missing.py:agent", "no file 'missing.py'"),
        ("mybot:nothing", "mybot has no 'nothing'"),
        ("mybot:not_an_agent", "int is neither an interpreter with chat_core() nor a callable"),
        ("failing_bot:agent", "importing 'failing_bot' failed: RuntimeError: no key set"),
        ("failing_bot.py:agent", "failed: RuntimeError: no key set"),
    ],
)
def test_a_spec_that_cannot_be_loaded_is_refused_saying_why(
    folder: Path, spec: str, said: str
) -> None:
    with pytest.raises(ConfigError, match="--agent") as refused:
        load_agent(spec, folder=folder)
    assert said in str(refused.value)


def test_a_module_that_lacks_a_dependency_says_which(folder: Path) -> None:
    (folder / "needs_more.py").write_text("import needs\n")  # (a prefix of its own name)
    for spec in ("needs_more:agent", "needs_more.py:agent"):
        with pytest.raises(ConfigError, match=r"No module named 'needs'"):
            load_agent(spec, folder=folder)
        sys.modules.pop("needs_more", None)


def test_a_module_file_can_import_its_neighbours(folder: Path) -> None:
    (folder / "helper_words.py").write_text("WORD = 'neighbour'\n")
    (folder / "uses_helper.py").write_text(
        textwrap.dedent(
            """
            from helper_words import WORD

            def agent(messages):
                return WORD
            """
        )
    )
    for spec in ("uses_helper.py:agent", "uses_helper:agent"):  # (the file first: its folder)
        agent = load_agent(spec, folder=folder)
        assert isinstance(agent, ExternalInterpreterAgent)
        assert agent.name is AgentName.OTHER
    for name in ("helper_words", "uses_helper"):
        sys.modules.pop(name, None)
