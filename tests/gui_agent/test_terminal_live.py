"""`gui-agent chat` in a terminal while a turn runs: what the person types is acted on then,
not after the turn. `/stop` stops the reply, a message ends AutoChat and is read next,
`/quit` stops and leaves. (From a pipe, lines still wait for the turn: see test_terminal_io.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.gui_agent.test_repl_errors import workspace
from tests.gui_agent.test_terminal_keys import Terminal

# argv[1]: one step per model call (the last repeats), each a dict:
#   {"endless": true}  words until the turn is stopped (w0 ... w3999, 20 s, then "the end")
#   {"say": TEXT}      TEXT, where {said} is the person's last message (default "you said: {said}")
#   "wait": true       after TEXT, wait until a line typed in the terminal reaches the chat
#   "wait": "keys"     after TEXT, wait until keys are typed (a line not ended, Ctrl-D)
#   "tool": {...}      then call write_file with these arguments
LIVE_DRIVER = """
import asyncio, json, sys
import connectors.registry
import gui_agent.repl
from connectors.function import FunctionModel
from connectors.scripted import call
from gui_agent.cli import main
from gui_agent.repl_input import ChatInput
from gui_agent.llm import StaticCatalog
from schema import ModelResponse, Role

steps = json.loads(sys.argv[1])
line_queued = asyncio.Event()
keys_typed = asyncio.Event()

class Reader(ChatInput):
    def _put(self, item):
        queued = super()._put(item)
        if queued:  # scheduled after the line itself: set means it is in the queue
            self._loop.call_soon_threadsafe(line_queued.set)
        return queued

    def _typed(self, text):
        super()._typed(text)  # in the line being edited now
        keys_typed.set()

async def model(messages, info):
    step = steps[min(info.call_number, len(steps)) - 1]
    if step.get("endless"):
        for i in range(4000):
            yield f"w{i} "
            await asyncio.sleep(0.005)
        yield "the end"
        return
    said = [m.content for m in messages if m.role is Role.USER][-1]
    text = step.get("say", "you said: {said}").format(said=said)
    line_queued.clear()
    keys_typed.clear()
    yield text + " "
    if step.get("wait") == "keys":
        await keys_typed.wait()
    elif step.get("wait"):
        await line_queued.wait()
    if step.get("tool"):
        tool_calls = call("write_file", **step["tool"]).tool_calls
        yield ModelResponse(text=text + " ", tool_calls=tool_calls, finish_reason="tool_calls")

async def resolve_models(**_options):
    return StaticCatalog(FunctionModel(model, name="function:live"))

connectors.registry.resolve_models = resolve_models
gui_agent.repl.ChatInput = Reader
sys.exit(main(["chat", *sys.argv[2:]]))
"""


def live_chat(tmp_path: Path, steps: list[dict[str, object]], *extra: str) -> Terminal:
    argv = [sys.executable, "-c", LIVE_DRIVER, json.dumps(steps)]
    return Terminal([*argv, "--workdir", str(workspace(tmp_path)), *extra], tmp_path)


def test_stop_typed_while_a_reply_streams_stops_it(tmp_path: Path) -> None:
    terminal = live_chat(tmp_path, [{"endless": True}, {}])
    terminal.read_until(b"you> ")
    terminal.type(b"talk until I say stop\n")
    terminal.read_until(b"w20 ")
    terminal.type(b"/stop\n")
    stopped = terminal.read_until(b"you> ")
    assert b"(interrupted: stopped by the user)" in stopped
    assert b"the end" not in stopped
    assert b"nothing is running" not in stopped
    terminal.type(b"and now?\n")  # the chat goes on
    terminal.read_until(b"you said: and now?")
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


def test_a_message_typed_during_autochat_ends_it_and_is_read_next(tmp_path: Path) -> None:
    steps: list[dict[str, object]] = [
        {"say": "started"},
        {"say": "automatic", "wait": True},  # the first automatic turn, until the person types
        {},
    ]
    terminal = live_chat(tmp_path, steps, "--auto")
    terminal.read_until(b"you> ")
    terminal.type(b"work on it\n")
    terminal.read_until(b"AutoChat turn 1/5")
    terminal.read_until(b"automatic")
    terminal.type(b"change of plan\n")
    answered = terminal.read_until(b"you said: change of plan")
    assert b"(sent: the agent reads it next)" in answered
    assert b"AutoChat stopped after 1 automatic turn: you sent a message" in answered
    assert b"AutoChat turn 2/" not in answered
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


def test_quit_typed_during_a_turn_stops_it_and_leaves(tmp_path: Path) -> None:
    terminal = live_chat(tmp_path, [{"endless": True}])
    terminal.read_until(b"you> ")
    terminal.type(b"talk\n")
    terminal.read_until(b"w20 ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
    assert b"(interrupted: stopped by the user)" in terminal.seen
    assert b"the end" not in terminal.seen
    assert b"Traceback" not in terminal.seen
