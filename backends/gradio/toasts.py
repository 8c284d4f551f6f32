"""Text for the page's toasts (`gr.Warning`, `gr.Info`): shown as text, never as markup.

Gradio writes a toast's message into the page as HTML (its ToastContent renders
`{@html sanitize(message)}`; `gr.Warning`'s docstring: "Can be HTML, which will be rendered
in the modal"). The sanitizer removes scripts, but not an `<img>` with a remote address,
which the browser fetches as soon as the toast shows, nor a link or styled text that looks
like the app's own. A toast that quotes text the app did not write (an exception's message
naming a model picked in a crafted request, a field of an uploaded export) passes that
text through `toast_text`, so it shows as typed. `escape_html` (markdown.py) is not the one
for this: it leaves code spans alone, as Markdown shows them verbatim, and a toast is not
Markdown.
"""

from __future__ import annotations

import html

__all__ = ["toast_text"]


def toast_text(text: object) -> str:
    """`text` as a toast shows it: `&`, `<` and `>` written as entities, so HTML in it is
    shown as text (what reads the same as before for text without markup)."""
    return html.escape(str(text), quote=False)
