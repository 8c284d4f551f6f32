"""What the page shows of the images attached for the next message, before it is sent: a
small picture of each, the name of the file it came from, and a button that takes that one
back. Pure: the tray's items in, the preview's HTML out.

Before, the page said only how many images would go ("📎 2 images will go with your next
message"): which ones, the person could not see until the message was sent, and the only way
back was to take them all. Each picture shows from where the chat's own pictures show
(`media/<token>`, media.py) when the page has a shelf, else inline (a `data:` URL); the
page's policy lets both load and nothing else (page.js).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from backends.gradio.attach import Attached
from backends.gradio.markdown import MediaLink

__all__ = ["TAKE_BACK_EVENT", "TRAY_PREVIEW_JS", "taken_back", "tray_preview"]

TAKE_BACK_EVENT = "take_back"
"""The preview's own event: a picture's button was pressed (its data: the picture's key)."""

TRAY_PREVIEW_JS = f"""
element.addEventListener('click', (event) => {{
  const button = event.target.closest('button[data-key]');
  if (!button || button.disabled) return;
  button.disabled = true;
  trigger('{TAKE_BACK_EVENT}', {{key: button.dataset.key}});
}});
"""
"""The preview's script (gr.HTML `js_on_load`): a picture's button asks the server to take
that picture back (the preview then comes back without it)."""


def taken_back(event: object) -> str | None:
    """The key of the picture whose button was pressed, as the preview's event (a
    `gr.EventData`) carries it; None when it names none."""
    try:
        key = getattr(event, "key", None)
    except TypeError:  # (an event with no data at all: Gradio's EventData looks in None)
        return None
    return key if isinstance(key, str) else None


def tray_preview(items: Sequence[Attached], link: MediaLink | None = None) -> str:
    """The preview of `items` ("" when there are none); `link`: where the page serves an
    image (None, or no address for one: inline)."""
    if not items:
        return ""
    pictures = "".join(_picture(item, number, link) for number, item in enumerate(items, start=1))
    return f'<ul class="ga-tray" aria-label="Images attached to your next message">{pictures}</ul>'


def _picture(item: Attached, number: int, link: MediaLink | None) -> str:
    name = item.name or f"Image {number}"
    shown = html.escape(name, quote=True)
    image = item.image
    source = link(image) if link is not None else None
    if source is None:
        source = f"data:{image.media_type};base64,{image.data or ''}"
    return (
        '<li class="ga-tray-item">'
        f'<img src="{html.escape(source, quote=True)}" alt="{shown}" title="{shown}">'
        f'<span class="ga-tray-name">{shown}</span>'
        f'<button type="button" class="ga-tray-remove" data-key="{html.escape(item.key)}" '
        f'aria-label="Remove {shown}" title="Remove {shown}">×</button>'
        "</li>"
    )
