"""The page's events answer the outputs they leave alone without rebuilding them, and answer
everything exactly as Gradio's own processing does; a streamed step's props reach the page
whatever steps follow it (page_blocks.py)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from gradio.block_function import BlockFunction
from gradio.blocks import BlocksConfig
from gradio.state_holder import SessionState

from backends.gradio import create_app
from backends.gradio.page_blocks import PageBlocks, is_props_update, is_skip
from connectors.scripted import ScriptedModel
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import MemoryStore


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[gr.Blocks]:
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(default="the reply")),
        store=MemoryStore(),
        workspace_root=tmp_path,
    )
    try:
        yield create_app(manager)
    finally:
        await manager.close()


def _widest(demo: gr.Blocks) -> BlockFunction:
    """The page's event with the most outputs (a chat opened: every component)."""
    return max(demo.fns.values(), key=lambda fn: len(fn.outputs))


def _by_id(fn: BlockFunction, elem_id: str) -> Any:
    return next(block for block in fn.outputs if getattr(block, "elem_id", None) == elem_id)


def _cases(fn: BlockFunction) -> list[Any]:
    """What handlers return: a few changes keyed by component (the rest skipped), one change,
    a lone skip, a value for every output, and a list with skips between the changes."""
    chat, title, send = (_by_id(fn, name) for name in ("chatbot", "rename-input", "send-btn"))
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    everything = [gr.skip() for _ in fn.outputs]
    everything[fn.outputs.index(title)] = "A title"
    return [
        {chat: messages, title: gr.update(value="Renamed", visible=True), send: gr.update()},
        {send: gr.update(interactive=False)},
        gr.skip(),
        everything,
        [gr.update(visible=False) if index % 9 == 0 else gr.skip() for index in range(74)],
    ]


async def test_the_page_answers_every_output_as_gradios_own_processing_does(
    demo: gr.Blocks,
) -> None:
    assert isinstance(demo, PageBlocks)
    fn = _widest(demo)
    assert len(fn.outputs) == 74, "the test's list case assumes the page's 74 outputs"
    # (each side gets cases of its own: Gradio takes "value" out of the updates it reads)
    for ours_case, gradios_case in zip(_cases(fn), _cases(fn), strict=True):
        ours = await demo.postprocess_data(fn, ours_case, SessionState(demo))
        gradios = await gr.Blocks.postprocess_data(demo, fn, gradios_case, SessionState(demo))
        assert ours == gradios, gradios_case
        assert len(ours) == len(fn.outputs)


async def test_an_event_that_changes_one_output_builds_and_configures_only_that_one(
    demo: gr.Blocks, monkeypatch: pytest.MonkeyPatch
) -> None:
    fn = _widest(demo)
    state = SessionState(demo)
    configured: list[int] = []
    real = BlocksConfig.config_for_block

    def counting(_id: int, *args: Any, **kwargs: Any) -> dict[str, Any]:
        configured.append(_id)
        return real(_id, *args, **kwargs)

    monkeypatch.setattr(BlocksConfig, "config_for_block", staticmethod(counting))
    title = _by_id(fn, "rename-input")
    answers = await demo.postprocess_data(fn, {title: gr.update(visible=False)}, state)
    assert set(configured) == {title._id}  # (Gradio's own way: all 74 outputs, twice each)
    changed = fn.outputs.index(title)
    assert answers[changed] == {"__type__": "update", "visible": False}
    left = [answer for index, answer in enumerate(answers) if index != changed]
    assert sum(map(is_skip, left)) == 71  # (and the two HTML outputs: the same, with empty "props")
    assert all(answer.get("props", {"__type__": "update"}) == gr.skip() for answer in left)
    configured.clear()
    await demo.postprocess_data(fn, gr.skip(), state)
    assert configured == []


async def test_what_gradio_refuses_it_still_refuses_with_its_own_words(demo: gr.Blocks) -> None:
    fn = _widest(demo)
    with pytest.raises(ValueError, match="didn't return enough output values"):
        await demo.postprocess_data(fn, ["just one", "and two"], SessionState(demo))


def test_only_gradios_mark_for_leaving_an_output_alone_counts_as_skipped() -> None:
    assert is_skip(gr.skip())
    assert not is_skip(gr.update(visible=True))
    assert not is_skip({"__type__": "update", "value": None})
    assert not is_skip([gr.skip()])
    assert not is_skip("update")


async def test_a_props_update_followed_by_steps_that_skip_it_is_sent_whole(
    demo: gr.Blocks,
) -> None:
    page_fn = _widest(demo)
    fn = copy.copy(page_fn)  # (an event of two outputs: the chats list and the chat)
    fn.outputs = [_by_id(page_fn, "session-list"), _by_id(page_fn, "chatbot")]
    sent = []
    cleared = {"__type__": "update", "value": None, "choices": [["a", "1"]], "info": ""}
    for step in (
        [cleared, ["hi"]],
        [gr.skip(), ["hi", "there"]],
        [gr.skip(), ["hi", "there", "you"]],
        [{"__type__": "update", "visible": False}, ["hi", "there", "you"]],
    ):
        sent.append(demo.handle_streaming_diffs(fn, list(step), "tab", "run", final=False))
    # (In the browser: test_page_replay.py's first test, whose blank chats list was lost with
    # Gradio's diffs once skipped outputs were answered quickly.)
    assert sent[0] == [cleared, ["hi"]]  # (a run's first step goes whole, as in Gradio)
    assert sent[1] == [[["replace", [], gr.skip()]], [["add", [1], "there"]]]
    assert sent[2] == [[], [["add", [2], "you"]]]  # (nothing changed: nothing sent)
    assert sent[3] == [[["replace", [], {"__type__": "update", "visible": False}]], []]
    last = demo.handle_streaming_diffs(fn, [gr.skip(), ["hi"]], "tab", "run", final=True)
    assert last == [{"__type__": "update", "visible": False}, ["hi", "there", "you"]]
    assert is_props_update(cleared) and is_props_update(gr.skip())
    assert not is_props_update(["hi"]) and not is_props_update({"role": "user"})
