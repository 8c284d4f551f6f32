"""What a model's reply is repaired of before it is kept: text that cannot be saved, tool
calls that share an id (or have none), and tool calls made where no tools were offered.

Plain functions on a `ModelResponse`, each returning it unchanged (the same object) when
there is nothing to repair, so the usual reply costs a check and no copy."""

from __future__ import annotations

from schema import AgentName, ModelResponse, new_id, valid_text

__all__ = ["distinct_calls", "valid_response", "without_calls"]


def valid_response(final: ModelResponse) -> ModelResponse:
    """`final` with lone surrogates in its text, reasoning and tool calls replaced (see
    `valid_text`): a reply holding one could be neither saved nor sent. Checks are O(1) per
    string when the text is ASCII."""
    reasoning = final.reasoning
    for call in final.tool_calls:
        if not (call.arguments.isascii() and call.name.isascii()):
            break
    else:
        if final.text.isascii() and (reasoning is None or reasoning.isascii()):
            return final
    calls = tuple(
        call.model_copy(
            update={"name": valid_text(call.name), "arguments": valid_text(call.arguments)}
        )
        for call in final.tool_calls
    )
    return final.model_copy(
        update={
            "text": valid_text(final.text),
            "reasoning": None if reasoning is None else valid_text(reasoning),
            "tool_calls": calls,
        }
    )


def distinct_calls(final: ModelResponse) -> ModelResponse:
    """`final` with every tool call under an id of its own: an empty id, or one an earlier
    call of the same reply already has, is replaced by a fresh one. Results are matched to
    calls by id (by the executor, the memory, the vendors), so two calls sharing one would
    get one result between them; a tool message without an id cannot even be built."""
    tool_calls = final.tool_calls
    if len(tool_calls) == 1:
        if tool_calls[0].id:
            return final
    elif not tool_calls:
        return final
    else:
        ids = {call.id for call in tool_calls}
        if len(ids) == len(tool_calls) and "" not in ids:
            return final
    seen: set[str] = set()
    fixed = []
    for call in tool_calls:
        own = call
        if not call.id or call.id in seen:
            own = call.model_copy(update={"id": "call_" + new_id()[:24]})
        seen.add(own.id)
        fixed.append(own)
    return final.model_copy(update={"tool_calls": tuple(fixed)})


def without_calls(final: ModelResponse, agent: AgentName) -> tuple[ModelResponse, list[str]]:
    """`final` without the tool calls a step that offers no tools got anyway, and the names
    they asked for. A reply that was nothing but such calls says so in its text, so that
    neither the person nor the next model call finds an empty message."""
    names = [call.name for call in final.tool_calls]
    update: dict[str, object] = {"tool_calls": ()}
    if not final.text.strip():
        asked = ", ".join(dict.fromkeys(names))
        update["text"] = (
            f"(No answer: the {agent.value} agent asked to call {asked}, but it has no tools "
            "here, so nothing was run.)"
        )
    return final.model_copy(update=update), names
