"""Text → safe Markdown for the chatbot: HTML shown as text, code fenced, images shown.

Pure functions. The chatbot renders Markdown and sanitizes HTML; on top of that, every piece
of text a person or a model wrote goes through `escape_html`, so `<script>` or
`<img onerror=…>` appears literally instead of being parsed as a tag, and a Markdown image
(`![alt](https://…)`) shows as a link: the browser fetches nothing a reply names by itself
(a reply steered by a web page or a file could otherwise send data to any server in an
image's address, with nobody clicking anything). Images a message carries are shown when
they are data (from the page's own address for them, or inline), and linked when they are an
address elsewhere (`image_markdown`). Code (fenced blocks, indented blocks, inline code
spans) is left alone: Markdown already shows it verbatim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from urllib.parse import quote, urlsplit

from schema import ImagePart

__all__ = [
    "MediaLink",
    "addresses_as_code",
    "escape_html",
    "escape_title",
    "fence",
    "image_markdown",
    "images_markdown",
    "is_base64",
    "json_or_text",
    "model_ids_as_code",
]

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_BACKTICKS = re.compile(r"`+")
_SAFE_MEDIA = re.compile(r"^image/[a-z0-9.+-]+$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")
_TITLE_MARKUP = re.compile(r"[\\`*\[\]!~|#$]|(?<!\w)_|_(?!\w)")
"""What Markdown reads as markup in a line of text: emphasis, code, links and images (`!`
and brackets), strikethrough, tables, headings, maths; `_` only where it can open or close
emphasis (not inside a name such as run_python)."""
_TITLE_LIST = re.compile(r"^(\d+)([.)])|^([-+])(?=\s|$)")
_LIST_ITEM = re.compile(r"^[ \t]*([-+*]|\d{1,9}[.)])(?:([ \t]+)|$)")
"""A list item's first line: its marker, and the white space after it."""
_BREAK = re.compile(r"^[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$")
"""A thematic break (`---`, `* * *`): not a list item."""
_QUOTE = re.compile(r"^[ \t]*> ?")
"""A block quote's marker, with the space after it."""
_MAX_QUOTES = 16
"""Block quotes read as such up to this depth (a reply of `>>>>…` costs no more)."""
_IMAGE_OPEN = re.compile(r"(?<!\\)((?:\\\\)*)!\[")
"""The `![` that opens a Markdown image (an unescaped `!`: after an even run of backslashes)."""

_GLUED_ADDRESS = re.compile(r"(?<![^\s(\[])[A-Za-z][\w.+-]*:https?://[^\s<>`]*[^\s<>`.,:;!?)\]'\"]")
"""A name with a web address glued to its end, as a whole: a model's id
(``openai-compatible:http://host:8080/v1#qwen2.5:7b``), without the punctuation after it
(the ``:`` of "ID: the connection failed")."""
_LEADING_MODEL_ID = re.compile(r"\A[A-Za-z][\w.+-]*:[^\s`]+?(?=: )")
"""The model's id a model's error begins with (``openai:gpt-4o-mini: the key was refused``;
an id holds no ": ", a name such as ``qwen2.5:7b`` may hold a colon)."""

OUTPUT_LANGUAGE = "output"
"""The fence label of console output (not highlighted as any programming language)."""


def _escape_prose(text: str) -> str:
    return _IMAGE_OPEN.sub(r"\1&#33;[", text.replace("&", "&amp;").replace("<", "&lt;"))


def _escape_inline(paragraph: str) -> str:
    """Escape a paragraph, leaving inline code spans (`` `…` ``) untouched."""
    return _outside_code(paragraph, _escape_prose)


def addresses_as_code(text: str) -> str:
    """`text` with each name that has a web address glued to its end (a model's id,
    ``openai-compatible:http://localhost:8080/v1#model``) as a code span, outside code
    spans. Markdown links a bare address, and in such a name only the address: the id read
    as a half link, "openai-compatible:" plain and the rest a link."""
    return _outside_code(text, lambda part: _GLUED_ADDRESS.sub(_code_span, part))


def model_ids_as_code(text: str) -> str:
    """`text` (an error's) with the model ids it names as code spans: the one it begins
    with, as a model's errors do (``anthropic:claude-sonnet-4-20250514: the key was
    refused``), and each name with a web address glued to its end (`addresses_as_code`).
    An id then reads as one name, whole, the same whatever its form."""
    return addresses_as_code(_LEADING_MODEL_ID.sub(_code_span, text, count=1))


def _code_span(match: re.Match[str]) -> str:
    text = match.group(0)
    ticks = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    return f"{ticks} {text} {ticks}"


def _outside_code(paragraph: str, change: Callable[[str], str]) -> str:
    """`paragraph` with `change` applied to its text outside inline code spans."""
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
        out.append(change(paragraph[pos : opening.start()]))
        out.append(paragraph[opening.start() : closing.end()])
        pos = cursor = closing.end()
    out.append(change(paragraph[pos:]))
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

    Code is found as Markdown finds it, inside list items and block quotes too: a list
    item's lines are read from where its text starts (an indented line there is the item's
    text, not code), a fence opened in an item ends with the item, and a quote's lines are
    read without their `>` (its code shows verbatim). Where a reading could go either way,
    the text is escaped: at worst a `&lt;` shows inside code, never a tag in prose.

    Safe to call on a prefix of a streaming reply: an unclosed fence counts as code to the
    end, as Markdown renders it.
    """
    return _escape_blocks(text, 0)


def _escape_blocks(text: str, depth: int) -> str:
    """`escape_html` of text `depth` block quotes deep."""
    if "<" not in text and "&" not in text and "![" not in text:
        return text
    out: list[str] = []
    paragraph: list[str] = []
    marker: str | None = None  # the open fence's
    fence_at = 0  # where the text of the list item holding the open fence starts
    code_at: int | None = None  # the same for an indented code block going on
    items: list[int] = []  # where the text of each list item the line may be in starts
    quote: list[str] = []  # the lines of a block quote going on

    def flush() -> None:
        if paragraph:
            out.append(_escape_inline("\n".join(paragraph)))
            paragraph.clear()

    def end_quote() -> None:
        """A block quote's lines, read as Markdown of their own without their `>`."""
        if depth >= _MAX_QUOTES:  # deeper than anyone quotes: all of it is text
            out.append(_escape_inline("\n".join(quote)))
            quote.clear()
            return
        marks = [_QUOTE.match(line) for line in quote]
        prefixes = [mark.group(0) if mark else "" for mark in marks]
        inner = "\n".join(q[len(p) :] for q, p in zip(quote, prefixes, strict=True))
        escaped = _escape_blocks(inner, depth + 1).split("\n")
        out.extend(p + q for p, q in zip(prefixes, escaped, strict=True))
        quote.clear()

    def open_fence(line: str, start: int, rest: str) -> bool:
        nonlocal marker, fence_at
        opening = _FENCE_OPEN.match(rest)
        if opening is None or (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            return False
        flush()
        marker, fence_at = opening.group(1), start
        out.append(line)
        return True

    for line in text.split("\n"):
        blank = not line.strip()
        indent = _indent(line)
        starts = line.lstrip(" \t")
        if quote:
            quoted = starts.startswith(">") and indent - (items[-1] if items else 0) <= 3
            if quoted or not (blank or _starts_block(line)):  # (a line without `>` goes on
                quote.append(line)  # the quote's paragraph, as Markdown reads it: lazily)
                continue
            end_quote()
        if marker is not None:
            if blank or indent >= fence_at:
                out.append(line)
                if _is_closing_fence(line[_column(line, fence_at) :], marker):
                    marker = None
                continue
            marker = None  # the list item ended, and the fence in it with it
        if code_at is not None:
            if blank or indent >= code_at + 4:
                out.append(line)  # an indented code block goes on
                continue
            code_at = None
        if blank:
            flush()
            out.append(line)
            continue
        if _BREAK.match(line):  # a thematic break (`* * *`) ends paragraphs and lists
            flush()
            while items and indent < items[-1]:
                items.pop()
            out.append(line)
            continue
        item = _LIST_ITEM.match(line)
        if item and paragraph and not items and item.group(1)[0].isdigit():
            item = item if int(item.group(1)[:-1]) == 1 else None  # (else: the paragraph's)
        # A fence or a quote starts a block: it ends the list items it is not indented in.
        opens = starts.startswith(">") or _FENCE_OPEN.match(starts) is not None
        if item is not None or opens or not paragraph:  # (a line going on a paragraph is text)
            while items and indent < items[-1]:
                items.pop()
        at = items[-1] if items else 0
        if (item is not None or starts.startswith(">")) and indent - at <= 3:
            flush()  # a new block: no code span runs on into it from the paragraph before
        if starts.startswith(">") and indent - at <= 3:
            quote.append(line)
            continue
        if item is not None and indent - at <= 3:
            start = len(line[: item.end()].expandtabs(4)) + (0 if item.group(2) else 1)
            items.append(start)
            if open_fence(line, start, line[item.end() :]):
                continue
            paragraph.append(line)
            continue
        if indent - at <= 3 and open_fence(line, at, line[_column(line, at) :]):
            continue
        if indent - at >= 4 and not paragraph:
            code_at = at  # code: indented in its list item, not going on a paragraph
            out.append(line)
            continue
        paragraph.append(line)
    if quote:
        end_quote()
    flush()
    return "\n".join(out)


def _starts_block(line: str) -> bool:
    """A fence, a list item or a thematic break: what ends a block quote rather than going
    on as its text."""
    starts = line.lstrip(" \t")
    fence = _FENCE_OPEN.match(starts) is not None and _indent(line) <= 3
    return fence or _LIST_ITEM.match(line) is not None or _BREAK.match(line) is not None


def _indent(line: str) -> int:
    """The columns of white space a line starts with (a tab to the next multiple of 4)."""
    stripped = line.lstrip(" \t")
    return len(line[: len(line) - len(stripped)].expandtabs(4))


def _column(line: str, columns: int) -> int:
    """The index in `line` of the character at `columns` of its leading white space."""
    width = 0
    for index, char in enumerate(line):
        if width >= columns or char not in " \t":
            return index
        width = width + 4 - width % 4 if char == "\t" else width + 1
    return len(line)


def escape_title(text: str) -> str:
    """One line of text as Markdown that shows exactly that text: for a step's title (a tool's
    name, an approval's summary), which the chatbot renders as Markdown with HTML, yet may
    come from a model. No markup in it is read as such: a name such as `![x](https://…)`
    or `<img src=…>` shows as written, and the page fetches nothing it names."""
    line = " ".join(text.split())
    line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    line = _TITLE_MARKUP.sub(lambda match: "\\" + match.group(0), line)
    return _TITLE_LIST.sub(lambda match: match.group(0)[:-1] + "\\" + match.group(0)[-1], line)


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


MediaLink = Callable[[ImagePart], "str | None"]
"""The address the page serves an image's data at (`backends.gradio.media`), or None to
show it inline."""


def image_markdown(
    image: ImagePart, alt: str = "image", link: MediaLink | None = None
) -> str | None:
    """An image: base64 data at the address `link` gives it, else inline as a data URL; an
    http(s) URL as a link to it (the page fetches nothing from elsewhere unless the person
    clicks: an address an external agent, a tool or an imported file names could carry data
    out). None when unsafe."""
    if not _SAFE_MEDIA.match(image.media_type.lower()):
        return None
    label = re.sub(r"[\[\]\\<>]", "", alt) or "image"
    if image.data is not None:
        address = link(image) if link is not None else None  # (it checks the data once)
        if address is not None:
            return f"![{label}]({quote(address, safe='/?=&-_.~')})"
        if not is_base64(image.data):
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


def is_base64(text: str) -> bool:
    """True when `text` holds only base64 characters (and white space)."""
    return _BASE64.match(text) is not None


def images_markdown(
    images: Iterable[ImagePart], alt: str = "image", link: MediaLink | None = None
) -> str:
    """Every safe image, one per paragraph (`link`: see `image_markdown`)."""
    shown = [md for md in (image_markdown(image, alt, link) for image in images) if md]
    return "\n\n".join(shown)
