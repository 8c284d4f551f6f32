"""Text → safe Markdown: images a person or a model names are links, never fetched."""

from __future__ import annotations

from backends.gradio.looks import body_markdown
from backends.gradio.markdown import escape_html
from schema import ImagePart, MessageType


def test_a_named_image_becomes_a_link_and_code_is_left_alone() -> None:
    assert (
        escape_html("see ![x](https://a.example/p.png)") == "see &#33;[x](https://a.example/p.png)"
    )
    assert escape_html("![r][ref] and !![y](u)") == "&#33;[r][ref] and !&#33;[y](u)"
    # an even run of backslashes leaves the `!` unescaped: still an image without the fix
    assert escape_html("\\\\![x](u)") == "\\\\&#33;[x](u)"
    assert escape_html("\\![x](u)") == "\\![x](u)"  # escaped already: literal text
    assert escape_html("`![x](u)`") == "`![x](u)`"  # inline code shows it verbatim
    fenced = "```\n![x](u)\n```"
    assert escape_html(fenced) == fenced


def test_attached_images_are_still_shown() -> None:
    image = ImagePart(media_type="image/png", data="iVBORw0KGgo=")
    shown = body_markdown(MessageType.MESSAGE, "![t](http://b.example/t.png)", None, [image])
    assert shown == (
        "&#33;[t](http://b.example/t.png)\n\n![image](data:image/png;base64,iVBORw0KGgo=)"
    )


def test_an_image_given_by_address_is_a_link_not_fetched() -> None:
    """An external agent's image (LMC `url` format), a tool's or an imported chat's image
    given by address: the page must not load it by itself (it could carry data out)."""
    image = ImagePart(url="https://tracker.example/p.png?leak=secret")
    shown = body_markdown(MessageType.IMAGE, "", None, [image])
    assert not shown.startswith("!")
    assert "![" not in shown
    assert shown == (
        "[image from tracker.example (not loaded here)](https://tracker.example/p.png?leak=secret)"
    )
    tricky = ImagePart(url="https://a.example/x.png", media_type="image/png")
    assert "](https://a.example/x.png)" in body_markdown(MessageType.IMAGE, "", None, [tricky])
