"""Text → safe Markdown for the chatbot: HTML shown as text, code fenced, images inline.

Pure functions. The chatbot renders Markdown and sanitizes HTML; on top of that, every piece
of text a person or a model wrote goes through `escape_html`, so `<script>` or
`<img onerror=…>` appears literally instead of being parsed as a tag, and a Markdown image
(`![alt](https://…)`) shows as a link: the browser fetches nothing a reply names by itself
(a reply steered by a web page or a file could otherwise send data to any server in an
image's address, with nobody clicking anything). Images a message carries are shown when
they are data, and linked when they are an address (`image_markdown`). Code (fenced blocks,
indented blocks, inline code spans) is left alone: Markdown already shows it verbatim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from urllib.parse import quote, urlsplit

from schema import ImagePart

__all__ = ["escape_html", "fence", "image_markdown", "images_markdown", "json_or_text"]

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_BACKTICKS = re.compile(r"`+")
_SAFE_MEDIA = re.compile(r"^image/[a-z0-9.+-]+$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")
_IMAGE_OPEN = re.compile(r"(?<!\\)((?:\\\\)*)!\[")
"""The `![` that opens a Markdown image (an unescaped `!`: after an even run of backslashes)."""

OUTPUT_LANGUAGE = "output"
"""The fence label of console output (not highlighted as any programming language)."""


def _escape_prose(text: str) -> str:
    return _IMAGE_OPEN.sub(r"\1&#33;[", text.replace("&", "&amp;").replace("<", "&lt;"))


def _escape_inline(paragraph: str) -> str:
    """Escape a paragraph, leaving inline code spans (`` `…` ``) untouched."""
    out: list[str] = []
    pos = 0
    cursor = 0
    while True:
        opening = _BACKTICKS.search(paragraph, cursor)
        if opening is None:
            break
        run = opening.group(0)
        closing = None
        for candidate in _BACKTICKS.finditer(paragraph, opening.end()):
            if candidate.group(0) == run:
                closing = candidate
                break
        if closing is None:
            cursor = opening.end()  # an unmatched run is literal text
            continue
        out.append(_escape_prose(paragraph[pos : opening.start()]))
        out.append(paragraph[opening.start() : closing.end()])
        pos = cursor = closing.end()
    out.append(_escape_prose(paragraph[pos:]))
    return "".join(out)


def _is_closing_fence(line: str, marker: str) -> bool:
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3
        and len(stripped) >= len(marker)
        and set(stripped) == {marker[0]}
    )


def escape_html(text: str) -> str:
    """Markdown with every `<` and `&` outside code escaped, so HTML shows as text.

    Safe to call on a prefix of a streaming reply: an unclosed fence counts as code to the
    end, as Markdown renders it.
    """
    if "<" not in text and "&" not in text and "![" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    paragraph: list[str] = []
    marker: str | None = None
    in_indented = False

    def flush() -> None:
        if paragraph:
            out.append(_escape_inline("\n".join(paragraph)))
            paragraph.clear()

    for line in lines:
        if marker is not None:
            out.append(line)
            if _is_closing_fence(line, marker):
                marker = None
            continue
        blank = not line.strip()
        indented = line.startswith(("    ", "\t"))
        if in_indented and (blank or indented):
            out.append(line)  # an indented code block goes on
            continue
        in_indented = False
        opening = _FENCE_OPEN.match(line)
        if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            flush()
            marker = opening.group(1)
            out.append(line)
            continue
        if indented and not blank and not paragraph:
            in_indented = True  # code: an indented line that does not continue a paragraph
            out.append(line)
            continue
        if blank:
            flush()
            out.append(line)
        else:
            paragraph.append(line)
    flush()
    return "\n".join(out)


def fence(text: str, language: str | None = None) -> str:
    """`text` as a fenced code block, with a fence longer than any backtick run inside."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    marker = "`" * max(3, longest + 1)
    label = re.sub(r"[^A-Za-z0-9_+#.-]", "", language or "")
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{marker}{label}\n{body}{marker}"


def json_or_text(text: str) -> str:
    """A tool result fenced as JSON when it is JSON, else as plain text."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            value = json.loads(stripped)
        except ValueError:
            pass
        else:
            return fence(json.dumps(value, indent=2, ensure_ascii=False), "json")
    return fence(text, "text")


def image_markdown(image: ImagePart, alt: str = "image") -> str | None:
    """An image: base64 data inline as a data URL; an http(s) URL as a link to it (the page
    fetches nothing from elsewhere unless the person clicks: an address an external agent,
    a tool or an imported file names could carry data out). None when unsafe."""
    if not _SAFE_MEDIA.match(image.media_type.lower()):
        return None
    label = re.sub(r"[\[\]\\<>]", "", alt) or "image"
    if image.data is not None:
        if not _BASE64.match(image.data):
            return None
        data = "".join(image.data.split())
        return f"![{label}](data:{image.media_type.lower()};base64,{data})"
    if image.url is not None:
        parts = urlsplit(image.url)
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            return None
        host = re.sub(r"[^A-Za-z0-9.:-]", "", parts.hostname or "") or "elsewhere"
        address = quote(image.url, safe=":/?#[]@!$&*+,;=%~.-_")
        return f"[{label} from {host} (not loaded here)]({address})"
    return None


def images_markdown(images: Iterable[ImagePart], alt: str = "image") -> str:
    """Every safe image, one per paragraph."""
    shown = [md for md in (image_markdown(image, alt) for image in images) if md]
    return "\n\n".join(shown)
