"""Every event of the page reports its progress to one hidden element (app.py,
`_progress_on_one_sink`): Gradio's page redoes work for each component holding a progress
status on every status change, streamed updates included."""

from __future__ import annotations

from typing import Any

from starlette.routing import Mount

from backends.gradio.app import PROGRESS_SINK_ID
from tests.backends.gradio.kit import build


async def test_every_event_shows_its_progress_on_one_hidden_sink_only() -> None:
    app, _state = await build()
    mount = next(route for route in app.routes if isinstance(route, Mount))
    blocks: Any = mount.app.get_blocks()  # type: ignore[attr-defined]
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
