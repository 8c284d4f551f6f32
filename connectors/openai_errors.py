"""What OpenAI-compatible servers' errors say, and what to send a server that refuses.

Pure; no SDK, no I/O. `error_status` reads the HTTP status an error object sent with a 200
stands for. The rest recognise a server's words for what a model cannot take or lacks,
each with what makes the request it takes (`connectors.openai.OpenAIProvider` asks again
with that, at once, and remembers): `refuses_tools`; `refuses_images` and
`without_images`; `refuses_temperature`; `refuses_call_ids` and `with_nine_char_ids`
(Mistral's call ids); `refuses_missing_reasoning` (a thinking model that wants its
reasoning back with its tool calls); `refuses_empty_reply` (an assistant message with
neither text nor tool calls).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from connectors.wire_names import nine_char_id

__all__ = [
    "IMAGE_LEFT_OUT",
    "error_codes",
    "error_message",
    "error_status",
    "refuses_call_ids",
    "refuses_empty_reply",
    "refuses_images",
    "refuses_missing_reasoning",
    "refuses_temperature",
    "refuses_tools",
    "with_nine_char_ids",
    "without_images",
]


_STATUS_BY_NAME: Mapping[str, int] = MappingProxyType(
    {
        "invalid_request_error": 400,
        "authentication_error": 401,
        "invalid_api_key": 401,
        "permission_error": 403,
        "not_found_error": 404,
        "model_not_found": 404,
        "rate_limit_error": 429,
        "rate_limit_exceeded": 429,
        "insufficient_quota": 429,
        "server_error": 500,
        "api_error": 500,
        "unavailable_error": 503,
        "overloaded_error": 503,
    }
)


def error_status(error: object) -> int | None:
    """The HTTP status an error object sent with a 200 stands for: its numeric ``code``
    (llama.cpp puts the status there), else what its ``code`` or ``type`` name means
    (OpenAI's names, and llama.cpp's ``unavailable_error``); None when it does not say."""
    if not isinstance(error, Mapping):
        return None
    code = error.get("code")
    if isinstance(code, int) and 400 <= code <= 599:
        return code
    for name in (code, error.get("type")):
        if isinstance(name, str) and name.lower() in _STATUS_BY_NAME:
            return _STATUS_BY_NAME[name.lower()]
    return None


_NO_TOOLS = re.compile(
    r"\bdo(?:es)?(?:n't| not) support "
    r"(?:tools|tool[ _-]?(?:use|calling|calls)|function[ _-]?calling)"
    r"|\btools? param(?:eter)? requires\b|\btool[ _]choice requires\b"
    r"|\b(?:tools|tool calling|function calling) (?:is |are )?not supported\b",
    re.IGNORECASE,
)
"""What servers say when a model or the server cannot take tools: Ollama's "... does not
support tools" (gemma3 and others), llama.cpp's "tools param requires --jinja flag", vLLM's
"\"auto\" tool choice requires --enable-auto-tool-choice"."""


def refuses_tools(detail: str) -> bool:
    """Whether a server's error words say the request's tools cannot be taken."""
    return bool(_NO_TOOLS.search(detail))


IMAGE_LEFT_OUT: Final = "[an image was left out: this model cannot take images]"
"""What stands in a message for an image a model without vision was not sent."""

_NO_IMAGES = re.compile(
    r"\bimage input is not supported\b|\bimages? (?:is|are) not supported\b"
    r"|\bdo(?:es)?(?:n't| not) support (?:images?|image input|vision|multimodal)\b"
    r"|\bimage_url is only supported by certain models\b"
    r"|\bno endpoints found that support image input\b"
    r"|\b(?:vision|multimodal input) (?:is )?not supported\b|\bis not a multimodal model\b"
    r"|\bat most 0 image\(s\) may be provided\b"
    r"|\bmissing data required for image input\b",
    re.IGNORECASE,
)
"""What servers say when the model cannot take images: llama.cpp without ``--mmproj``
("image input is not supported", status 500), LM Studio ("Model does not support images"),
OpenRouter ("No endpoints found that support image input", status 404), OpenAI and Groq
("image_url is only supported by certain models"), vLLM ("At most 0 image(s) may be
provided"), Ollama ("missing data required for image input"). A broken image ("Invalid
image") does not match."""


def refuses_images(detail: str) -> bool:
    """Whether a server's error words say the model cannot take the request's images."""
    return bool(_NO_IMAGES.search(detail))


def without_images(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """`messages` (Chat Completions dicts) with each image replaced by `IMAGE_LEFT_OUT`, a
    content left with texts only made one text; None when they hold no image."""
    out: list[dict[str, Any]] = []
    found = False
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list) or not any(_is_image(p) for p in content):
            out.append(dict(message))
            continue
        found = True
        texts = [
            IMAGE_LEFT_OUT if _is_image(part) else part.get("text")
            for part in content
            if isinstance(part, Mapping)
        ]
        if all(isinstance(t, str) for t in texts) and len(texts) == len(content):
            text = "\n\n".join(t for t in texts if t)
            out.append({**message, "content": text})
        else:  # parts other than text (audio, files) stay as they are
            parts = [
                {"type": "text", "text": IMAGE_LEFT_OUT} if _is_image(part) else part
                for part in content
            ]
            out.append({**message, "content": parts})
    return out if found else None


def _is_image(part: object) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "image_url"


def error_codes(error: object) -> tuple[object, ...]:
    """An error object's ``code`` and ``type`` (e.g. ``insufficient_quota``), as sent."""
    if not isinstance(error, Mapping):
        return ()
    return (error.get("code"), error.get("type"))


def error_message(error: object) -> str:
    """What an error object (``{"message": ...}``, or a bare string) says."""
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    return error if isinstance(error, str) else json.dumps(error)


_NO_TEMPERATURE = re.compile(
    r"\bunsupported (?:value|parameter): '?temperature\b"
    r"|\btemperature'? (?:is not supported|does not support)\b",
    re.IGNORECASE,
)
"""What OpenAI says when a model takes no temperature but its default (o3, o4-mini, gpt-5:
"Unsupported value: 'temperature' does not support 0.2 with this model. Only the default
(1) value is supported."; "Unsupported parameter: 'temperature' is not supported with this
model.")."""


def refuses_temperature(detail: str) -> bool:
    """Whether a server's error words say the model takes no temperature setting."""
    return bool(_NO_TEMPERATURE.search(detail))


_NINE_CHAR_IDS = re.compile(r"\bwith a length of 9\b", re.IGNORECASE)
"""What Mistral's validator says of a call id it refuses: "Tool call id was call_… but must be
a-z, A-Z, 0-9, with a length of 9." (Mistral's API; vLLM serving a Mistral model)."""


def refuses_call_ids(detail: str) -> bool:
    """Whether a server's error words say the history's call ids are not what it takes."""
    return bool(_NINE_CHAR_IDS.search(detail))


def with_nine_char_ids(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`messages` (Chat Completions dicts) with every call id, in the calls and in the
    results, made 9 letters or digits (`wire_names.nine_char_id`), the same way in both."""
    out: list[dict[str, Any]] = []
    for message in messages:
        wire = dict(message)
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            wire["tool_calls"] = [
                {**c, "id": nine_char_id(str(c.get("id") or ""))} if isinstance(c, Mapping) else c
                for c in calls
            ]
        if isinstance(message.get("tool_call_id"), str):
            wire["tool_call_id"] = nine_char_id(message["tool_call_id"])
        out.append(wire)
    return out


_MISSING_REASONING = re.compile(
    r"\breasoning_content\b[^.]*?\b(?:is missing|must be passed back|is required)\b"
    r"|\bmissing\b[^.]*?\breasoning_content\b",
    re.IGNORECASE,
)
"""What thinking models' APIs say when a tool-call message of the history comes back
without its reasoning: Kimi's "thinking is enabled but reasoning_content is missing in
assistant tool call message at index 1", DeepSeek's "reasoning_content must be passed back
to the API", and the like (GLM, MiMo)."""


def refuses_missing_reasoning(detail: str) -> bool:
    """Whether a server's error words say the history's tool-call messages must carry their
    ``reasoning_content``."""
    return bool(_MISSING_REASONING.search(detail))


_EMPTY_REPLY_WORDS: Final = (
    "must have either content or tool_calls",  # Mistral's API (mistral_common)
    "invalid assistant message",  # vLLM serving a Mistral model
)


def refuses_empty_reply(detail: str) -> bool:
    """Whether a server's words refuse an assistant message with neither text nor tool
    calls (Mistral's validator: "Assistant message must have either content or
    tool_calls, but not none"; vLLM with a Mistral model: "Invalid assistant message:
    role='assistant' content=None tool_calls=None")."""
    lowered = detail.lower()
    return any(words in lowered for words in _EMPTY_REPLY_WORDS)
