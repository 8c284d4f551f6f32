"""`create_app`: the Gradio chat page, wired to a `SessionManager`.

The app factory builds the layout (`layout.py`), binds the controls to `Handlers`
(`handlers.py`, `transfer.py`) and returns the Blocks; it starts nothing and opens no
socket. The server composition mounts it with `gr.mount_gradio_app(app, blocks, path="/",
auth=..., allowed_paths=[str(ASSETS_DIR)])`; the page's CSS and JS travel inside the Blocks
(a load event), so no css/js/head arguments are needed there.

How it is wired, and why:

- every event is private (no public API endpoint; the HTTP API is backends/api) and has
  no concurrency limit: handlers are async, and the streaming ones spend their time
  waiting on their session's events;
- Gradio runs at most `max_concurrent_events` events at once; a streaming reply holds one
  for its whole turn and every open tab holds one (`Handlers.keep_open`);
- streaming handlers skip Gradio's postprocessing and yield wire-ready values
  (`PageView`), coalesced to at most one update every `stream_interval_s`.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from typing import Any

import gradio as gr

from backends.gradio.assets import load_assets
from backends.gradio.coalesce import DEFAULT_INTERVAL_S
from backends.gradio.handlers import Handlers, ModelInfoLike
from backends.gradio.layout import Page, build_page
from backends.gradio.transfer import Transfer
from gui_agent.manager import SessionManager
from schema import ApprovalDecision

__all__ = ["create_app"]

_EVENT: dict[str, Any] = {
    "api_visibility": "private",
    "concurrency_limit": None,
    "show_progress": "hidden",
}
_STREAM: dict[str, Any] = {**_EVENT, "postprocess": False}
"""Streaming handlers yield values already in the browser's format (see PageView)."""

MAX_CONCURRENT_EVENTS = 1000
"""Gradio runs at most this many events at once, across all tabs (its default is 40, and a
streaming reply holds its event for the whole turn: the 41st tab would wait, and so would
every Stop click)."""

_ON_SEND_JS = "(...inputs) => { window.guiAgentSent?.(); return inputs; }"
"""Runs in the browser when a send really goes out: empties the input box."""


def create_app(
    manager: SessionManager,
    *,
    models: Sequence[ModelInfoLike] = (),
    notice: str | None = None,
    title: str = "GuiAgent",
    stream_interval_s: float = DEFAULT_INTERVAL_S,
    max_concurrent_events: int = MAX_CONCURRENT_EVENTS,
) -> gr.Blocks:
    """The chat page for the sessions of `manager`.

    `models` lists the configured models for the model picker (any objects with `.name`,
    `.is_default` and `.note`; defaults to the manager's catalog). `notice` is shown plainly
    at the top (e.g. that the model is a tiny offline one). `stream_interval_s` is the
    shortest time between two updates of a streaming reply; `max_concurrent_events` how
    many events (streaming replies included) Gradio runs at once.
    """
    assets = load_assets()
    infos = list(models)
    names = [info.name for info in infos] or manager.models.names()
    default: str | None = next(
        (info.name for info in infos if info.is_default), manager.models.default
    )
    if default not in names:
        default = names[0] if names else None
    notes = {info.name: info.note for info in infos}
    roles = manager.architectures_factory()
    demo = gr.Blocks(title=title, analytics_enabled=False, fill_width=True)
    with demo:
        page = build_page(
            title=title,
            notice=notice,
            agents=list(roles),
            models=names,
            default_model=default,
            model_note=notes.get(default or "", ""),
            agent_notes={name: role.description for name, role in roles.items()},
        )
        handlers = Handlers(
            manager,
            page,
            icons=assets.icons,
            languages=gr.Code.languages,
            models=infos,
            interval_s=stream_interval_s,
        )
        _wire(
            demo,
            page,
            handlers=handlers,
            transfer=Transfer(handlers),
            page_js=assets.page_js,
            download_js=assets.download_js,
        )
    demo.max_threads = max_concurrent_events  # the queue's slots are sized from this
    _skip_missing_matplotlib()
    demo.queue(default_concurrency_limit=None)
    return demo


def _skip_missing_matplotlib() -> None:
    """Gradio tries `import matplotlib` twice around every handler call (every yield of a
    stream). When it is not installed, each failed import searches the whole sys.path
    again: about a quarter of the server's time per streamed update. Recording the absence
    once (the standard `sys.modules[name] = None`) makes those imports fail at once."""
    if "matplotlib" not in sys.modules and importlib.util.find_spec("matplotlib") is None:
        sys.modules["matplotlib"] = None  # type: ignore[assignment]


def _stream_outputs(page: Page) -> list[Any]:
    """What a streaming handler changes: the chat and the panels, all plain values.

    Kept short on purpose: on every yield Gradio processes every output, and one that is
    left out costs as much as one that changed (see `PageView._values`).
    """
    return [
        page.session_id,
        page.chatbot,
        page.badge,
        page.approval_title,
        page.approval_code,
        page.approval_id,
        page.autochat_status,
        page.memory_panel,
        page.usage_panel,
        page.role_picker,
    ]


def _form(page: Page) -> set[Any]:
    """The inputs of handlers that read the chat form (passed as one dict)."""
    return {
        page.session_id,
        page.chat_input,
        page.edit_mode,
        page.role_picker,
        page.model_picker,
        page.system_prompt,
        page.temperature,
        page.autochat_toggle,
        page.max_turns,
        page.delay,
        page.token_budget,
        page.time_budget,
    }


def _wire(
    demo: gr.Blocks,
    page: Page,
    *,
    handlers: Handlers,
    transfer: Transfer,
    page_js: str,
    download_js: str,
) -> None:
    everything = page.components()
    streamed = _stream_outputs(page)
    form = _form(page)
    sid = [page.session_id]

    demo.load(None, None, None, js=page_js)
    demo.load(handlers.on_load, None, [page.session_list], **_EVENT)
    demo.load(handlers.keep_open, None, None, **_EVENT)

    sessions = [handlers.refresh_list, [page.session_id, page.search], [page.session_list]]
    streams: list[dict[str, Any]] = []
    for trigger in (
        # One event for both triggers: "once" then also ignores Enter-then-click.
        gr.on(
            [page.send_btn.click, page.chat_input.submit],
            handlers.send,
            form,
            streamed,
            trigger_mode="once",
            js=_ON_SEND_JS,
            **_STREAM,
        ),
        page.retry_btn.click(handlers.retry, sid, streamed, trigger_mode="once", **_STREAM),
        page.autochat_toggle.input(handlers.toggle_autochat, form, streamed, **_STREAM),
    ):
        streams.append(trigger)
        trigger.then(*sessions, **_EVENT)
    follow = [handlers.follow, sid, streamed]

    opened = page.session_list.input(
        handlers.open_session, [page.session_list], everything, cancels=streams, **_EVENT
    )
    streams.append(opened.then(*follow, **_STREAM))
    imported = page.import_btn.upload(
        transfer.import_file, [page.import_btn], everything, cancels=streams, **_EVENT
    )
    streams.append(imported.then(*follow, **_STREAM))
    streams.append(
        page.replay_btn.upload(
            transfer.replay, [page.replay_btn], streamed, cancels=streams, **_STREAM
        )
    )
    page.new_btn.click(handlers.new_chat, None, everything, cancels=streams, **_EVENT)
    page.confirm_delete_btn.click(handlers.delete, sid, everything, cancels=streams, **_EVENT)

    # The send event takes the tab's images from the server-side tray; this one makes the
    # tray look empty at once (as page.js empties the input box).
    attached = [page.attach_note, page.detach_btn]
    gr.on(
        [page.send_btn.click, page.chat_input.submit],
        handlers.hide_tray,
        None,
        attached,
        queue=False,
        **_EVENT,
    )
    page.attach_btn.upload(handlers.attach, [page.attach_btn], attached, **_EVENT)
    page.detach_btn.click(handlers.detach, None, attached, **_EVENT)
    page.stop_btn.click(handlers.stop, sid, [page.badge], **_EVENT)
    approval_inputs = [page.session_id, page.approval_id, page.approval_note]
    approval_outputs = [page.approval_title, page.approval_code, page.approval_id]
    approval_outputs.append(page.approval_note)
    for button, decision in (
        (page.approve_once_btn, ApprovalDecision.ALLOW_ONCE),
        (page.approve_session_btn, ApprovalDecision.ALLOW_SESSION),
        (page.deny_btn, ApprovalDecision.DENY),
    ):
        button.click(handlers.approver(decision), approval_inputs, approval_outputs, **_EVENT)

    page.search.change(
        handlers.search,
        [page.search, page.session_id],
        [page.session_list],
        trigger_mode="always_last",
        **_EVENT,
    )
    page.rename_btn.click(
        handlers.rename,
        [page.session_id, page.rename_box, page.search],
        [page.session_list],
        **_EVENT,
    )
    page.delete_btn.click(handlers.ask_delete, sid, [page.confirm_row], **_EVENT)
    page.cancel_delete_btn.click(handlers.cancel_delete, None, [page.confirm_row], **_EVENT)
    page.export_btn.click(transfer.export, sid, [page.export_data], **_EVENT).then(
        None, [page.export_data], None, js=download_js
    )

    page.role_picker.change(
        handlers.describe_role, [page.role_picker], [page.role_note], queue=False, **_EVENT
    )
    page.role_picker.input(
        handlers.pick_role,
        [page.session_id, page.role_picker],
        [page.chatbot, page.role_picker],
        **_EVENT,
    )
    page.model_picker.input(
        handlers.pick_model,
        [page.session_id, page.model_picker],
        [page.model_note, page.model_picker],
        **_EVENT,
    )
    # Events with no outputs skip the queue: queued next to another event of the same tab,
    # Gradio 6.31 sometimes leaves the other event's outputs "pending" in the browser.
    page.system_prompt.blur(handlers.change_settings, form, None, queue=False, **_EVENT)
    page.temperature.release(handlers.change_settings, form, None, queue=False, **_EVENT)
    for limit in (page.max_turns, page.delay, page.token_budget, page.time_budget):
        limit.input(
            handlers.change_autochat_limits,
            form,
            None,
            trigger_mode="always_last",
            queue=False,
            **_EVENT,
        )
    page.edit_btn.click(handlers.edit_last, sid, [page.chat_input, page.edit_mode], **_EVENT)
    page.clear_btn.click(handlers.clear, sid, streamed, **_EVENT)
