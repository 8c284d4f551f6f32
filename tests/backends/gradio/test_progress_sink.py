"""Every event of the page reports its progress to one hidden element (app.py,
`_progress_on_one_sink`): Gradio's page redoes work for each component holding a progress
status on every status change, streamed updates included."""

from __future__ import annotations

from typing import Any

from backends.gradio.app import PROGRESS_SINK_ID
from backends.gradio.media import mounted_page
from tests.backends.gradio.kit import build


async def test_every_event_shows_its_progress_on_one_hidden_sink_only() -> None:
    app, _state = await build()
    blocks: Any = mounted_page(app).get_blocks()
    config = blocks.config  # (as the page is served: taken when the app was built)
    [sink] = [c for c in config["components"] if c["props"].get("elem_id") == PROGRESS_SINK_ID]
    assert sink["props"]["visible"] == "hidden"
    events = config["dependencies"]
    assert len(events) > 50  # the page's whole wiring, not a part of it
    wrong = [(e["id"], e.get("show_progress_on")) for e in events]
    wrong = [(number, on) for number, on in wrong if on != [sink["id"]]]
    assert not wrong, f"events showing progress elsewhere: {wrong}"
    # (an event that runs only in the browser has no progress to show)
    assert all(e["show_progress"] == "hidden" for e in events if e["backend_fn"])
