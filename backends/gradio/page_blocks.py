"""The page's Blocks: `PageBlocks`, Gradio's Blocks with two repairs in how events answer.

**Skipped outputs cost nothing.** Gradio handles a skipped output (`gr.skip()`, which is what
each output left out of a handler's dict becomes) as an update that changes nothing, at full
price: `Blocks.postprocess_data` builds a new instance of the component from its arguments,
then works out the component's whole config twice, JSON schemas of its API included (2 ms for
an upload button). Most of the page's handlers list all 74 of its components as outputs (a
chat opened, loaded, deleted elsewhere or imported may change any of them) and change a few,
so each such event cost the server 34-37 ms of CPU on components it left as they were (0.3-1.2
ms now; tests/bench/bench_events.py): every page load, every chat opened, and in every open tab
each time the person's chats list changed.
`PageBlocks.postprocess_data` answers each skipped output itself, with what Gradio answers for
it (its own `postprocess_update_dict` words it, building nothing: `{"__type__": "update"}`,
and for an HTML component that with empty "props"), and hands Gradio only the outputs that
change, which it processes as before. What it does not recognise (one output, a batch, a
validator, a count of values that does not match) goes to Gradio whole, so Gradio's checks and
errors stay. (Gradio's way also reset the server's copy of each skipped component's config to
its first value, a copy this app never reads.)

**A streamed update is not undone by the next one.** A streaming event sends each step as a
diff from the step before, and the browser's Gradio client applies each diff *in place* to the
object it handed the page with the step before (`pending_diff_streams` in its client). A step
that sets an output's props (a chats list's choice cleared, a title box emptied), followed by
one that skips that output, sends a diff that deletes those props from that object; when the
page had not read the first step yet, it never saw them. Once skipped outputs were answered
quickly, the replay of an export (its first step the blank page, the rest its messages) lost
its blank chats list this way every time (test_page_replay.py). `handle_streaming_diffs` sends
the step of an output whose step before, or this one, is a props update as a whole new value
(a diff that replaces it at its root), so the client makes a new object and the step before
keeps its own; an unchanged output still sends nothing. A chat's messages (a value, not props)
still go as diffs, as small as before.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import gradio as gr
from gradio.block_function import BlockFunction
from gradio.blocks import (
    Block,
    BlockContext,
    convert_component_dict_to_list,
    postprocess_update_dict,
)
from gradio.components import Component
from gradio.state_holder import SessionState

__all__ = ["PageBlocks", "is_props_update", "is_skip"]


def is_skip(value: object) -> bool:
    """Whether `value` is Gradio's "leave this output as it is" (`gr.skip()`)."""
    return type(value) is dict and len(value) == 1 and value.get("__type__") == "update"


def is_props_update(value: object) -> bool:
    """Whether `value` (an output's answer as sent) sets props, or skips, rather than being
    a plain value."""
    return isinstance(value, dict) and value.get("__type__") == "update"


class PageBlocks(gr.Blocks):
    """`gr.Blocks` that spends nothing on the outputs an event skips and whose streamed
    updates reach the page whatever follows them (module docstring)."""

    async def postprocess_data(
        self,
        block_fn: BlockFunction,
        predictions: list[Any] | dict[Any, Any],
        state: SessionState | None,
    ) -> list[Any]:
        outputs = list(block_fn.outputs)
        values = _per_output(block_fn, outputs, predictions)
        if values is None:
            return list(await super().postprocess_data(block_fn, predictions, state))
        changed = [index for index, value in enumerate(values) if not is_skip(value)]
        if len(changed) == len(outputs):
            return list(await super().postprocess_data(block_fn, values, state))
        done: list[Any] = []
        if changed:
            part = copy.copy(block_fn)  # (the same event, with only the outputs it changes)
            part.outputs = [outputs[index] for index in changed]
            given = [values[index] for index in changed]
            # (Gradio takes a lone output's value bare, and puts it in a list itself)
            done = list(
                await super().postprocess_data(part, given[0] if len(given) == 1 else given, state)
            )
        answers = iter(done)
        return [
            next(answers)
            if not is_skip(value)
            else postprocess_update_dict(block, gr.skip(), block_fn.postprocess)
            for block, value in zip(outputs, values, strict=True)
        ]

    def handle_streaming_diffs(  # noqa: PLR0917 (Gradio's signature)
        self,
        block_fn: BlockFunction,
        data: list[Any],
        session_hash: str | None,
        run: str | None,
        final: bool,
        simple_format: bool = False,
    ) -> list[Any]:
        runs = self.pending_diff_streams.get(session_hash) if session_hash is not None else None
        before = runs.get(run) if runs is not None and run is not None else None
        previous = list(before) if before is not None else None
        now = list(data)
        sent = list(
            super().handle_streaming_diffs(block_fn, data, session_hash, run, final, simple_format)
        )
        if previous is None or final or simple_format:  # (full values: no diff to replace)
            return sent
        for index, (old, new) in enumerate(zip(previous, now, strict=False)):
            if sent[index] and (is_props_update(old) or is_props_update(new)):
                sent[index] = [["replace", [], new]]
        return sent


def _per_output(
    block_fn: BlockFunction, outputs: Sequence[Component | BlockContext], predictions: object
) -> list[Any] | None:
    """What a handler of several outputs returned, one value per output, as Gradio reads it
    (a lone `gr.skip()`: all skipped; a dict keyed by component: the rest skipped); None
    for what Gradio had better read itself."""
    if len(outputs) < 2 or block_fn.batch or block_fn.is_validator_function:
        return None
    if isinstance(predictions, dict):
        if is_skip(predictions):
            return [gr.skip() for _ in outputs]
        if not predictions or not all(isinstance(key, Block) for key in predictions):
            return None
        listed = convert_component_dict_to_list(list(outputs), predictions)
        return listed if isinstance(listed, list) else None
    if isinstance(predictions, (list, tuple)) and len(predictions) == len(outputs):
        return list(predictions)
    return None
