"""Pure mapping for the embedded model: messages, tool plans, constrained output, responses.

No model, no threads, no I/O: `connectors.llama_local` loads llama.cpp and streams; these
functions decide what it is sent and what its output means, and are tested without either.

Tool calls. The 135M model never writes a tool call from instructions alone, and
`tool_choice="auto"` through `chatml-function-calling` is unreliable. So whenever tools are
given, the output is constrained by a llama.cpp grammar built from this JSON schema:

    {"anyOf": [{"name": <tool>, "arguments": <that tool's parameters>}, ...,
               {"answer": <string>}]}

Every output parses, names a real tool and carries arguments that match its schema, or is
a plain answer (streamed to the user as it is decoded, never shown as JSON). Which
branches are offered (`plan_tool_use`):

- `auto`, last message the user's: the tools that message names (`relevant_tools`: a word
  of the tool's name, or two of its description's first sentence; a file name counts as
  "file", a code block as "code" and "python"), plus the answer. Left to itself the model
  called a tool for "Hi there!" and "Who wrote Hamlet?" (3 right decisions out of 10 in a
  trial); the word gate leaves the model only the choice between the plausible tools and
  an answer. A verb alone ("write a haiku", "list the planets", "read me a poem") names no
  tool: when it did, the model called one for 7 of 30 everyday requests (seeds 7 and 11),
  and the person was asked to approve a file write for an email. A verb does narrow the
  offer to the tools it names ("read the file notes.txt": read_file only); offered all
  three file tools, the model picked list_files for most file requests.
  A system instruction after the user's message (the supervisor's, which names its
  delegate tool) counts with it: without that, the supervisor could never delegate.
- `auto` after a tool result (or anything else): the answer branch alone, so the model
  answers from the result. Free text was worse here: having seen JSON calls in the
  conversation, the model went on writing JSON-looking junk.
- `required`: every tool, no answer; a tool's name: that tool only; `none`: free text.
  Without tools the output is always free text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from connectors.chat_templates import system_first_only, user_turns_merged
from gui_agent.exceptions import InvalidRequest, ModelResponseError
from schema import Message, ModelResponse, Role, ToolCall, ToolSchema, Usage, new_id

__all__ = [
    "LOCAL_MODEL_NAME",
    "AnswerStream",
    "ToolPlan",
    "final_response",
    "output_schema",
    "parse_constrained_output",
    "plan_tool_use",
    "relevant_tools",
    "to_chat_messages",
    "tool_instructions",
]

LOCAL_MODEL_NAME: Final = "local:smollm2"


# --- which outputs are allowed ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolPlan:
    """Constrain the next output to a call of one of `tools`, or (`allow_answer`) an answer.

    No tools and `allow_answer`: the output is just `{"answer": ...}`."""

    tools: tuple[ToolSchema, ...]
    allow_answer: bool


_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_STOPWORD_TEXT = (
    "the and for with from this that what which who whom whose when where why how are was "
    "were can could would should will shall may might must does did has have had get gets "
    "got give tell please you your yours our ours their its into onto about some any all "
    "not but use using used run one new current now just like make set"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WEAK_TEXT = (
    "write read list show create find open save print call return declare see need work "
    "explain describe summarize suggest add"
)
_WEAK = frozenset(_WEAK_TEXT.split())
"""Verbs a plain request shares with tool names and descriptions ("write a haiku", "list
the planets"): they say what to do, not with what, so they alone make no tool relevant."""
_PATH = re.compile(
    r"[\w-]{2,}\.(?!(?:com|org|net|edu|gov)\b)[a-z][a-z0-9]{0,4}\b|(?:^|\s)(?:~|\.{1,2})?/\w"
)
"""A file name with an extension (not a web address's), or a path from /, ./ or ~/."""
_FENCE = "```"


def _words(text: str) -> set[str]:
    words = _WORD.findall(_CAMEL.sub(r"\1 \2", text).lower())
    return {word for word in words if len(word) >= 3 and word not in _STOPWORDS}


def _strong(words: set[str]) -> set[str]:
    return words - _WEAK


def _related(a: str, b: str) -> bool:
    # Same word, a plural of it (file / files), or the same first five letters (calculate /
    # calculator, weather / weathers).
    return a in (b, f"{b}s") or b == f"{a}s" or (len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5])


def _first_sentence(text: str) -> str:
    end = re.search(r"[.!?](\s|$)", text)
    return text if end is None else text[: end.start()]


def _asked_words(text: str, words: set[str]) -> set[str]:
    """The request's content words (`words`: `_words(text)`); a file name or path in it
    says "file", a code block says "code" and "python" (what the built-in tools are named
    and described by)."""
    asked = _strong(words)
    if _PATH.search(text):
        asked |= {"file", "files"}
    if _FENCE in text:
        asked |= {"code", "python"}
    return asked


def _is_relevant(asked: set[str], tool: ToolSchema) -> bool:
    """A word of the tool's name, or two of its description's first sentence, in `asked`.

    A whole description is long prose ("time", "work", "memory", "process"), and one word
    of it matched too many plain questions ("How does memory work?" was offered Python)."""
    named = _strong(_words(tool.name))
    if any(_related(a, b) for a in asked for b in named):
        return True
    described = _strong(_words(_first_sentence(tool.description)))
    return sum(1 for b in described if any(_related(a, b) for a in asked)) >= 2


def relevant_tools(text: str, tools: Sequence[ToolSchema]) -> tuple[ToolSchema, ...]:
    """The tools `text` asks for, in order (see `_is_relevant`); of those, the ones whose
    name has a verb of `text` when any has ("read the file notes.txt": read_file, not
    list_files or write_file, which the 135M model picked as often)."""
    words = _words(text)
    asked = _asked_words(text, words)
    relevant = tuple(tool for tool in tools if _is_relevant(asked, tool))
    verbs = words & _WEAK
    named = tuple(tool for tool in relevant if verbs & _words(tool.name))
    return named or relevant


def plan_tool_use(
    messages: Sequence[Message], tools: Sequence[ToolSchema], tool_choice: str
) -> ToolPlan | None:
    """Which output branches the grammar allows (see the module docstring); None: free text."""
    if not tools or tool_choice == "none":
        return None
    if tool_choice == "required":
        return ToolPlan(tuple(tools), allow_answer=False)
    if tool_choice != "auto":
        chosen = tuple(tool for tool in tools if tool.name == tool_choice)
        if not chosen:
            names = ", ".join(tool.name for tool in tools)
            raise InvalidRequest(f"tool_choice {tool_choice!r} is not one of the tools: {names}")
        return ToolPlan(chosen, allow_answer=False)
    asked = _user_turn_text(messages)
    if asked is not None:
        return ToolPlan(relevant_tools(asked, tools), allow_answer=True)
    return ToolPlan((), allow_answer=True)


def _user_turn_text(messages: Sequence[Message]) -> str | None:
    """The text of the last user message with the system instructions after it, when the
    conversation ends there (display-only messages aside); else None."""
    instructions: list[str] = []
    for message in reversed(messages):
        if message.display_only:
            continue
        if message.role is Role.SYSTEM:
            instructions.append(message.content)
        elif message.role is Role.USER:
            return "\n".join([message.content, *reversed(instructions)])
        else:
            return None
    return None


def output_schema(plan: ToolPlan) -> dict[str, Any]:
    """The JSON schema every constrained output satisfies."""
    alternatives: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": tool.parameters},
            "required": ["name", "arguments"],
        }
        for tool in plan.tools
    ]
    if plan.allow_answer:
        alternatives.append(
            {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        )
    return alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}


def tool_instructions(plan: ToolPlan) -> str:
    """What the system prompt says about tools and the reply format.

    The answer's form shows no stand-in text in its quotes: SmolLM2 copied one it was shown
    ("<your answer>") as its whole reply to 3 of 20 everyday questions, and copies none
    of this form (tests/connectors/test_llama_answers.py)."""
    answer = '{"answer": "..."} with your reply in place of the dots'
    if not plan.tools:
        return f"Reply in this JSON form: {answer}."
    lines = ["You can call these tools:"]
    for tool in plan.tools:
        arguments = json.dumps(tool.parameters.get("properties", {}), ensure_ascii=False)
        description = f": {tool.description}" if tool.description else ""
        lines.append(f"- {tool.name}{description}. Arguments: {arguments}")
    call = '{"name": "<tool name>", "arguments": {...}}'
    if plan.allow_answer:
        lines.append(f"To call a tool reply {call}. Otherwise reply {answer}.")
    else:
        lines.append(f"Reply {call}.")
    return "\n".join(lines)


# --- what the model is sent ---------------------------------------------------------------


def _call_text(call: ToolCall) -> str:
    try:
        arguments: Any = call.parsed_arguments()
    except ValueError:
        arguments = call.arguments
    return json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)


def to_chat_messages(
    messages: Sequence[Message], *, system_extra: str | None = None
) -> list[dict[str, str]]:
    """Our messages as chat-template messages for the local model.

    Display-only messages are dropped, images and reasoning are not sent. An assistant's
    tool calls are written in the JSON form the model is constrained to; a tool result
    becomes a user turn that says which tool returned it (a 135M model knows no "tool"
    role). A system message after the first turn becomes part of a user turn, and user
    turns in a row (parallel tool results, a message sent again after a Stop) become one,
    as for OpenAI-compatible servers (`connectors.chat_templates`): SmolLM2's template
    renders either, but the templates of many other models (a `model_path` of another GGUF)
    refuse them. `system_extra` is appended to the first system message (or becomes one).
    """
    out: list[dict[str, str]] = []
    for message in messages:
        if message.display_only:
            continue
        if message.role is Role.TOOL:
            label = message.name or "the tool"
            out.append({"role": "user", "content": f"Result of {label}:\n{message.content}"})
        elif message.role is Role.ASSISTANT and message.tool_calls:
            parts = [message.content] if message.content else []
            parts.extend(_call_text(call) for call in message.tool_calls)
            out.append({"role": "assistant", "content": "\n".join(parts)})
        else:
            out.append({"role": message.role.value, "content": message.content})
    rewritten = user_turns_merged(system_first_only(out))
    out = [{"role": m["role"], "content": m["content"]} for m in rewritten]
    if system_extra:
        if out and out[0]["role"] == "system":
            first = out[0]["content"]
            out[0] = {
                "role": "system",
                "content": f"{first}\n\n{system_extra}" if first else system_extra,
            }
        else:
            out.insert(0, {"role": "system", "content": system_extra})
    return out


# --- what the model's output means ---------------------------------------------------------

_OPENING = re.compile(r'\s*\{\s*"(?P<key>[^"\\]*)"\s*:\s*(?P<quote>")?')


class AnswerStream:
    """Follows constrained JSON output as it grows; yields the answer text as it is decoded.

    `feed(raw)` returns the new visible text (empty while the output is, or may become, a
    tool call). Escapes are decoded only once complete, and a high surrogate waits for its
    partner, so every piece is valid text and the pieces join to the answer.
    """

    def __init__(self) -> None:
        self.raw = ""
        self.kind: str | None = None  # "answer" or "tool" once known
        self.text = ""
        self._body_start = -1
        self._pos = 0
        self._closed = False

    def feed(self, piece: str) -> str:
        self.raw += piece
        if self.kind is None:
            match = _OPENING.match(self.raw)
            if match is None:
                return ""
            if match.group("key") != "answer":
                self.kind = "tool"
                return ""
            if match.group("quote") is None:
                return ""
            self.kind = "answer"
            self._body_start = match.end()
        if self.kind != "answer" or self._closed:
            return ""
        body = self.raw[self._body_start :]
        end = self._safe_end(body)
        if end <= self._pos:
            return ""
        new = json.loads(f'"{body[self._pos : end]}"', strict=False)
        self._pos = end
        self.text += new
        return str(new)

    def _safe_end(self, body: str) -> int:
        """Index up to which `body` holds whole characters of the JSON string."""
        i = self._pos
        safe = i
        while i < len(body):
            char = body[i]
            if char == '"':
                self._closed = True
                return i
            if char != "\\":
                i += 1
                safe = i
                continue
            if i + 1 >= len(body):
                return safe
            if body[i + 1] != "u":
                i += 2
                safe = i
                continue
            if i + 6 > len(body):
                return safe
            code = int(body[i + 2 : i + 6], 16)
            if 0xD800 <= code <= 0xDBFF:  # a high surrogate: take it with its low half
                if i + 12 > len(body):
                    return safe
                i += 12
            else:
                i += 6
            safe = i
        return safe


_CALL_NAME = re.compile(r'\s*\{\s*"name"\s*:\s*"([A-Za-z0-9_.-]{1,64})"')


def parse_constrained_output(raw: str) -> tuple[str | None, ToolCall | None]:
    """`(answer, None)` or `(None, call)` from a whole constrained output.

    Raises ModelResponseError when the output is not complete JSON (cut off by max_tokens).
    """
    try:
        value = json.loads(raw, strict=False)
    except json.JSONDecodeError as exc:
        named = _CALL_NAME.match(raw)
        what = f"its call of {named.group(1)}" if named else "its structured reply"
        raise ModelResponseError(
            f"the offline model did not finish {what} before its token limit (a model this "
            "small often repeats itself): ask again, raise Max tokens in the settings if the "
            "call was long, or use a capable model",
            provider=LOCAL_MODEL_NAME,
        ) from exc
    if not isinstance(value, dict):
        raise ModelResponseError(
            "the local model replied with no object", provider=LOCAL_MODEL_NAME
        )
    if "answer" in value:
        return str(value["answer"]), None
    arguments = value.get("arguments", {})
    call = ToolCall(
        id=f"call_{new_id()[:24]}",
        name=str(value.get("name", "")),
        arguments=json.dumps(arguments, ensure_ascii=False),
    )
    return None, call


def final_response(
    raw: str,
    answer: AnswerStream | None,
    *,
    finish_reason: str | None,
    usage: Usage,
    model: str,
) -> ModelResponse:
    """The one `ModelResponse` that ends a stream, from the whole raw output.

    `answer` is the stream's `AnswerStream` when the output was constrained (None: free
    text, returned as it is).
    """
    if answer is None:
        return ModelResponse(text=raw, usage=usage, finish_reason=finish_reason, model=model)
    if answer.kind == "answer" and finish_reason == "length":
        # Cut off mid-answer: keep what was said, as a plain reply.
        return ModelResponse(text=answer.text, usage=usage, finish_reason="length", model=model)
    text, call = parse_constrained_output(raw)
    if call is not None:
        return ModelResponse(
            tool_calls=(call,), usage=usage, finish_reason="tool_calls", model=model
        )
    return ModelResponse(text=text or "", usage=usage, finish_reason="stop", model=model)
