"""`create_app`: the Gradio chat page, wired to a `SessionManager`.

The app factory builds the layout (`layout.py`), binds the controls to `Handlers`
(`handlers.py`, `transfer.py`, `sidebar.py`, `sidepanel.py`, `presence.py`) and returns the
Blocks; it starts nothing and opens no socket. The server composition mounts it with
`gr.mount_gradio_app(app, blocks, path="/", auth=..., allowed_paths=[str(ASSETS_DIR)])`;
the page's CSS and JS travel inside the Blocks (a load event), so no css/js/head arguments
are needed there. One script must run before Gradio's own, which only the server can put
in the page (`early_script.add_early_script(app)`: an idle page then draws no frames); a
page served without it works the same.

How it is wired, and why:

- every event is private (no public API endpoint; the HTTP API is backends/api) and has
  no concurrency limit: handlers are async, and the streaming ones spend their time
  waiting on their session's events;
- Gradio runs at most `max_concurrent_events` events at once; a streaming reply holds one
  for its whole turn and every open tab holds one (`Presence.keep_open`), which also
  brings the tab up to date when its chat moves on in another tab, and its chats list and
  settings when they change there (follow.py);
- streaming handlers skip Gradio's postprocessing and yield wire-ready values
  (`PageView`), coalesced to at most one update every `stream_interval_s`;
- Send and the AutoChat switch work while a reply streams ("multiple"): the message is
  queued (and ends AutoChat), the switch takes effect after the current turn; an event
  that replaces the view ends the tab's streams first (`TabStreams`);
- the browser remembers the tab's chat (localStorage), and the page reopens it on load;
- a tab's keep-alive that ends while the tab stays open is started again by the page, which
  then catches up on what changed meanwhile (presence.py, page.js).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import Sequence
from typing import Any

import gradio as gr

from backends.gradio.assets import load_assets
from backends.gradio.coalesce import DEFAULT_INTERVAL_S
from backends.gradio.handler_base import new_chat_standings
from backends.gradio.handlers import Handlers, ModelInfoLike
from backends.gradio.layout import Page, build_page
from backends.gradio.media import MediaShelf
from backends.gradio.page_blocks import PageBlocks
from backends.gradio.panels import tools_markdown
from backends.gradio.presence import Presence
from backends.gradio.quiet_queue import quiet
from backends.gradio.sidebar import Sidebar
from backends.gradio.sidepanel import SidePanel
from backends.gradio.transfer import Transfer
from backends.gradio.unsaved import UNSAVED_KEY_JS, with_unsaved
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

_NEXT_TICKET = "String(window.__guiAgentTicket = (window.__guiAgentTicket || 0) + 1)"
"""The tab's next event ticket (see `Page.ticket` and tabs.py)."""

_TICKET_JS = f"(...inputs) => {{ inputs[inputs.length - 1] = {_NEXT_TICKET}; return inputs; }}"
"""For events whose last input is the ticket: give it the tab's next number."""


def _in_order(inputs: set[Any]) -> list[Any]:
    """A set of an event's inputs in the order Gradio passes them to its browser step (by
    component id)."""
    return sorted(inputs, key=lambda component: component._id)


def _on_send_js(page: Page, form: set[Any]) -> str:
    """JS run in the browser when a send (whose inputs are `form`) really goes out: its
    message is the text the person sent, as page.js took it when they pressed Enter or
    clicked Send (Gradio's copy of the box is read later, and can already hold the next
    message); it unticks "edit my last message" and numbers the event, like _TICKET_JS,
    and among the tab's sends after a colon (send_order.py)."""
    message = _in_order(form).index(page.chat_input)
    return f"""(...inputs) => {{
  if (window.guiAgentOutgoing) inputs[{message}] = window.guiAgentOutgoing(inputs[{message}]);
  window.guiAgentSent?.();
  const send = window.__guiAgentSends = (window.__guiAgentSends || 0) + 1;
  inputs[inputs.length - 1] = {_NEXT_TICKET} + ":" + send;
  window.guiAgentTicketed?.(inputs[inputs.length - 1], inputs[{message}]);
  return inputs;
}}"""


def _as_shown_js(ids: Sequence[str | None], then: str) -> str:
    """JS that replaces each input whose element id is given in `ids` (by position) with
    what that text box on the page shows now, then runs `then` (a JS function of the
    inputs). Gradio sends its own copy of a box, which can lag a value typed just before
    an action; the box itself holds what the person sees. A number box gives its number,
    or null when empty (as Gradio would). A box not on the page keeps Gradio's copy."""
    return f"""(...inputs) => {{
  {json.dumps(list(ids))}.forEach((id, i) => {{
    const box = id && document.querySelector(`#${{id}} input, #${{id}} textarea`);
    if (box && box.type === "number") inputs[i] = box.value === "" ? null : Number(box.value);
    else if (box) inputs[i] = box.value;
  }});
  return ({then})(...inputs);
}}"""


def _as_typed_js(page: Page, form: set[Any], then: str) -> str:
    """`_as_shown_js` for an event whose inputs are `form`: its Advanced settings and
    AutoChat limits as their boxes show them (a retry clicked in the instant a max-tokens
    value was typed went out with the old value; a limit typed just after another went out
    with the other one's old value). Gradio orders a set of inputs by component id."""
    shown = [*page.advanced_settings().values(), *page.autochat_limits().values()]
    boxes = {id(box): box.elem_id for box in shown}
    return _as_shown_js([boxes.get(id(component)) for component in _in_order(form)], then)


_KEEP_AGAIN_JS = """async (again) => window.guiAgentKeepAgain
  ? await window.guiAgentKeepAgain(again)
  : again"""
"""Runs in the browser when the tab's keep-alive event ended: the next count of its starts,
once the server answers (page.js); the same count (no new start) if the tab is signed out."""

_DRAFT_BACK_JS = "() => { window.guiAgentDraftBack?.(); return []; }"
"""Runs in the browser once a (re)loaded page has its chat: puts back the message being
typed before the reload, kept in the tab's session storage (page.js)."""

_TITLE_OFFER_JS = """(offer, box, shown) => {
  if ((box ?? "").trim()) return undefined;
  try {
    const [chat, title] = JSON.parse(offer || "[]");
    return chat && title && chat === shown ? title : undefined;
  } catch (error) { return undefined; }
}"""
"""Runs in the browser when the list refresh after a turn answers: the chat's first title
goes in the Title box only if the box is still empty and still shows that chat (a title
typed, or another chat opened, while the answer was on its way stays; sidebar.py). The box
is read as the page shows it (`_as_shown_js`): Gradio's own copy of it can lag what is being
typed. Otherwise the box is left as it is (`undefined`: Gradio sets nothing): given back,
what the box held when this read it went through Gradio's awaits before it was set, and
could land over a title typed, or shown, in that moment (Rename then saved the old one)."""

_STORAGE_KEY = '"gui-agent-session:" + location.pathname'
_REMEMBERED_JS = f"""() => {{
  const key = {_STORAGE_KEY};
  let id = "", unsaved = "";
  try {{
    id = sessionStorage.getItem(key) ?? localStorage.getItem(key) ?? "";
    unsaved = sessionStorage.getItem({UNSAVED_KEY_JS}) ?? "";
  }} catch (error) {{}}
  window.__guiAgentRemembering = true;
  return [id, {_NEXT_TICKET}, unsaved];
}}"""
"""The page-load event's inputs: the chat this tab showed before a reload, else the one this
browser showed last ("" for a new chat; the server checks that it is the user's), a ticket,
and the settings typed in this tab and not yet saved before the reload (unsaved.py)."""

_MODEL_TITLE_JS = """() => {
  if (window.__guiAgentModelTitle) return [];
  window.__guiAgentModelTitle = true;
  const named = (event) => {
    const box = event.target;
    if (box instanceof HTMLInputElement && box.closest("#model-picker")) box.title = box.value;
  };
  document.addEventListener("pointerover", named, true);
  document.addEventListener("focusin", named, true);
  return [];
}"""
"""Runs in the browser when the page loads: the model picker's box, pointed at or focused,
says the picked model's full name (the box cuts a long one off; the note under it names it
in full: layout.model_note_text). Set then, not when the model changes: the picker is not on
the page until its Settings are opened."""

_NEW_CHAT_MODE_JS = """(chat, tool, mode) => {
  window.guiAgentNewChatMode?.(chat, tool, mode);
  return [];
}"""
"""Runs in the browser once a tool's mode is set: in a new chat, the page keeps it with the
text typed and not yet saved, so a reload brings it back (unsaved.py)."""

_SETTINGS_GOT_JS = "(base) => { window.guiAgentSettingsGot?.(base); return []; }"
"""Runs in the browser whenever the tab's base changes (bases.py): the kept text of a box
now in step with its chat is let go (page.js)."""

_REMEMBER_JS = f"""(id) => {{
  const key = {_STORAGE_KEY};
  if (!window.__guiAgentRemembering) return [];  // the empty box at start is not a choice
  window.guiAgentShowing?.(id);
  try {{
    for (const store of [sessionStorage, localStorage]) {{
      if (id) store.setItem(key, id); else store.removeItem(key);
    }}
  }} catch (error) {{}}
  return [];
}}"""
"""Runs in the browser whenever the tab's chat changes: remember it (see _REMEMBERED_JS),
and let go of settings text kept for the chat it showed before (page.js)."""


def create_app(
    manager: SessionManager,
    *,
    models: Sequence[ModelInfoLike] = (),
    notice: str | None = None,
    title: str = "GuiAgent",
    stream_interval_s: float = DEFAULT_INTERVAL_S,
    max_concurrent_events: int = MAX_CONCURRENT_EVENTS,
    closing: asyncio.Event | None = None,
    media: MediaShelf | None = None,
    left_out: Sequence[str] = (),
) -> gr.Blocks:
    """The chat page for the sessions of `manager`.

    `models` lists the configured models for the model picker (any objects with `.name`,
    `.is_default` and `.note`; defaults to the manager's catalog). `notice` is shown plainly
    at the top (e.g. that the model is a tiny offline one). `stream_interval_s` is the
    shortest time between two updates of a streaming reply; `max_concurrent_events` how
    many events (streaming replies included) Gradio runs at once. Set `closing` when the
    server begins to shut down (before it waits for connections to finish): every open
    tab's keep-alive event then ends, and the tabs' connections close at once. With
    `media`, the chats' images are linked from it (serve it with `add_media_route` on the
    app the page is mounted on); without, they travel inline in the page's updates.
    `left_out` says why models the environment configures are not offered
    (`ModelRegistry.left_out`): shown under the model picker, only when there are any.
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
    chat_tools = new_chat_standings(manager)
    demo = PageBlocks(title=title, analytics_enabled=False, fill_width=True)
    with demo:
        page = build_page(
            title=title,
            notice=notice,
            agents=list(roles),
            models=names,
            default_model=default,
            model_note=notes.get(default or "", ""),
            agent_notes={name: role.description for name, role in roles.items()},
            tools_text=tools_markdown(chat_tools),
            tool_names=[tool.name for tool in chat_tools],
            left_out=left_out,
        )
        handlers = Handlers(
            manager,
            page,
            icons=assets.icons,
            languages=gr.Code.languages,
            models=infos,
            interval_s=stream_interval_s,
            closing=closing,
            media=media,
        )
        _wire(
            demo,
            page,
            handlers=handlers,
            transfer=Transfer(handlers),
            sidebar=Sidebar(handlers),
            side_panel=SidePanel(handlers),
            presence=Presence(handlers),
            page_js=with_unsaved(assets.page_js, page),
            download_js=assets.download_js,
        )
        _progress_on_one_sink(demo)  # (inside the block: its config is taken at the end)
    demo.max_threads = max_concurrent_events  # the queue's slots are sized from this
    _skip_missing_matplotlib()
    demo.queue(default_concurrency_limit=None)
    quiet(demo)  # (Gradio's queue looks for work 1,000 times a second even when idle)
    return demo


PROGRESS_SINK_ID = "progress-sink"


def _progress_on_one_sink(demo: gr.Blocks) -> None:
    """Every event of the page reports its progress to one hidden element, not to its
    outputs. Gradio's page updates every component that has a progress status whenever any
    event's status changes, on every streamed update too, and copies each one's properties
    to do so. With the statuses on the outputs (66 components for loading a chat) a reply
    streaming into a short chat kept 0.4 of a core of the browser busy; with one sink, 0.2.
    Nothing shown is lost: every event's progress is hidden anyway (`_EVENT`), and its
    inputs keep their statuses. Call it inside `with demo`, after every event is wired."""
    sink = gr.HTML("", visible="hidden", elem_id=PROGRESS_SINK_ID, label="Progress")
    for fn in demo.fns.values():
        fn.show_progress_on = [sink]


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
        page.allowed_panel,
        page.tools_panel,
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
        *page.advanced_settings().values(),
        page.autochat_toggle,
        page.max_turns,
        page.delay,
        page.token_budget,
        page.time_budget,
        page.form_base,
        page.ticket,
    }


def _wire(
    demo: gr.Blocks,
    page: Page,
    *,
    handlers: Handlers,
    transfer: Transfer,
    sidebar: Sidebar,
    side_panel: SidePanel,
    presence: Presence,
    page_js: str,
    download_js: str,
) -> None:
    everything = page.components()
    streamed = _stream_outputs(page)
    form = _form(page)
    if max(form, key=lambda component: component._id) is not page.ticket:
        raise RuntimeError("the ticket must be the form's last input (create it last)")
    sid = [page.session_id]
    ticket = [page.ticket]
    numbered: dict[str, Any] = {"js": _TICKET_JS}
    # Retry and AutoChat read the Advanced boxes as typed. Not Send: with it, a send made
    # with a value out of range left the settings note empty (1 run in 6 under load).
    as_typed = _as_typed_js(page, form, _TICKET_JS)

    demo.load(None, None, None, js=page_js)
    settle = [handlers.settle, [*sid, *ticket], streamed]
    loaded = demo.load(
        handlers.on_load,
        [*sid, *ticket, page.unsaved],
        everything,
        js=_REMEMBERED_JS,
        **_EVENT,
    )
    page.form_base.change(None, [page.form_base], None, js=_SETTINGS_GOT_JS, **_EVENT)
    demo.load(None, None, None, js=_MODEL_TITLE_JS)
    # The keep-alive event also wakes the tab when its chat moves on elsewhere (another
    # tab, the API): the view then settles, and follows the chat while it runs. When the
    # user's chats or the shown chat's settings change elsewhere, the tab follows those.
    # It starts with the page, and again whenever it ended while the tab stays open (the
    # server restarted, the event failed): page.js waits until the server answers, then
    # counts one more start in `keep_alive` (one at a time: "once"), and the keep-alive
    # catches the tab up on what it missed (presence.py).
    kept = gr.on(
        [demo.load, page.keep_alive.change],
        presence.keep_open,
        [page.keep_alive, page.session_id],
        [page.tab_wake, page.chats_wake],
        trigger_mode="once",
        **_EVENT,
    )
    for ended in (kept.then, kept.failure):  # (Gradio runs `then` only after a success)
        ended(None, [page.keep_alive], [page.keep_alive], js=_KEEP_AGAIN_JS, **_EVENT)
    # (every output: a chat deleted elsewhere leaves the view for a new chat, Presence._gone)
    page.chats_wake.change(
        presence.follow,
        [page.session_id, page.search, page.form_base],
        everything,
        trigger_mode="always_last",
        **_EVENT,
    )
    page.tab_wake.change(
        handlers.settle,
        [*sid, *ticket],
        streamed,
        trigger_mode="always_last",
        **numbered,
        **_STREAM,
    )
    page.session_id.change(None, sid, None, js=_REMEMBER_JS, **_EVENT)

    sessions = [
        sidebar.refresh_list,
        [page.session_id, page.search, page.rename_box],
        [page.session_list, page.title_offer],
    ]
    offered = [[page.title_offer, page.rename_box, page.session_id], [page.rename_box]]
    title_offer = _as_shown_js([None, page.rename_box.elem_id, None], _TITLE_OFFER_JS)
    loaded.then(*settle, **numbered, **_STREAM)
    # Once the page has its chat, give back what was being typed before a reload (page.js).
    loaded.then(None, None, None, js=_DRAFT_BACK_JS, **_EVENT)
    # Events that save the form also say what the tab's boxes are in step with (bases.py).
    saved = [*streamed, page.form_base]
    # One event for both triggers. "multiple": a send while a reply streams is queued
    # behind it (page.js refuses a blank one, so Enter-then-click sends once).
    sent = gr.on(
        [page.send_btn.click, page.chat_input.submit],
        handlers.send,
        form,
        saved,
        trigger_mode="multiple",
        js=_on_send_js(page, form),
        **_STREAM,
    )
    # A send the server refused goes back in the box the browser emptied (unsent.py).
    attached = [page.attach_note, page.detach_btn, page.attach_preview]
    refused = [page.chat_input, page.edit_mode, *attached]
    sent.then(handlers.give_back, [page.chat_input], refused, queue=False, **_EVENT)
    for trigger in (
        sent,
        page.retry_btn.click(
            handlers.retry, form, saved, trigger_mode="once", js=as_typed, **_STREAM
        ),
        page.autochat_toggle.input(
            handlers.toggle_autochat,
            form,
            saved,
            trigger_mode="multiple",
            js=as_typed,
            **_STREAM,
        ),
    ):
        trigger.then(*sessions, **_EVENT).then(None, *offered, js=title_offer, **_EVENT)

    # Events that replace the view end the tab's streams triggered before them themselves
    # (`TabStreams.supersede`; the events are numbered for it), then `settle` the view. Not
    # with Gradio's `cancels=`: its browser side cancels a stream only after some awaits,
    # and by then that can be a send made right after the click (whose reply then never
    # shows); nor does it keep a cancelled stream's last update from landing after the new
    # view.
    replacing: dict[str, Any] = {**numbered, **_EVENT}
    # Every chat picked goes ("multiple": with Gradio's "once", a chat picked while the
    # last pick was on its way was dropped, and the tab stayed on the one picked first);
    # the latest pick is the one shown (`TabStreams.overtaken`).
    opened = page.session_list.input(
        handlers.open_session,
        [page.session_list, *ticket],
        everything,
        trigger_mode="multiple",
        **replacing,
    )
    opened.then(*settle, **numbered, **_STREAM)
    imported = page.import_btn.upload(
        transfer.import_file, [page.import_btn, *ticket], everything, **replacing
    )
    imported.then(*settle, **numbered, **_STREAM)
    # (every output: its first update is a new chat's boxes and list, see Transfer.replay)
    page.replay_btn.upload(
        transfer.replay, [page.replay_btn, *ticket], everything, **numbered, **_STREAM
    )
    page.new_btn.click(handlers.new_chat, ticket, everything, **replacing).then(
        *settle, **numbered, **_STREAM
    )
    page.confirm_delete_btn.click(sidebar.delete, [*sid, *ticket], everything, **replacing).then(
        *settle, **numbered, **_STREAM
    )

    # The send event takes the tab's images from the server-side tray; this one makes the
    # tray look empty at once (as page.js empties the input box).
    gr.on(
        [page.send_btn.click, page.chat_input.submit],
        handlers.hide_tray,
        None,
        attached,
        queue=False,
        **_EVENT,
    )
    # Each upload is attached, also one made while the last is on its way (Gradio's "once"
    # dropped it).
    page.attach_btn.upload(
        handlers.attach, [page.attach_btn], attached, trigger_mode="multiple", **_EVENT
    )
    page.detach_btn.click(handlers.detach, None, attached, **_EVENT)
    # One picture taken back, by its button in the preview (tray_preview.py).
    page.attach_preview.take_back(handlers.take_back, None, attached, **_EVENT)
    page.stop_btn.click(handlers.stop, sid, [page.badge], **_EVENT)
    page.forget_allowed_btn.click(
        handlers.forget_allowed, sid, [page.allowed_panel, page.tools_panel], **_EVENT
    )
    tool_inputs = [page.session_id, page.tool_picker]
    # (numbered: answered after the tab opened another chat, it leaves the mode as that
    # emptied it)
    page.tool_picker.input(
        handlers.show_tool_mode, [*tool_inputs, *ticket], [page.tool_mode], **numbered, **_EVENT
    )
    page.tool_mode.input(
        handlers.set_tool_mode,
        [*tool_inputs, page.tool_mode],
        [page.tools_panel, page.allowed_panel, page.tool_mode],
        trigger_mode="always_last",
        **_EVENT,
    ).then(None, [*tool_inputs, page.tool_mode], None, js=_NEW_CHAT_MODE_JS, **_EVENT)
    approval_inputs = [page.session_id, page.approval_id, page.approval_note]
    approval_outputs = [page.approval_note]  # (the panel follows the session's stream)
    # The note as its box shows it (Gradio's copy can lag a note typed just before).
    as_shown_note = _as_shown_js([None, None, page.approval_note.elem_id], "(...a) => a")
    for button, decision in (
        (page.approve_once_btn, ApprovalDecision.ALLOW_ONCE),
        (page.approve_session_btn, ApprovalDecision.ALLOW_SESSION),
        (page.deny_btn, ApprovalDecision.DENY),
    ):
        button.click(
            handlers.approver(decision),
            approval_inputs,
            approval_outputs,
            js=as_shown_note,
            **_EVENT,
        )
    # Enter in the note box denies with the note (layout.NOTE_PLACEHOLDER says why).
    page.approval_note.submit(
        handlers.approver(ApprovalDecision.DENY, needs_note=True),
        approval_inputs,
        approval_outputs,
        js=as_shown_note,
        **_EVENT,
    )

    page.search.change(
        sidebar.search,
        [page.search, page.session_id],
        [page.session_list],
        trigger_mode="always_last",
        **_EVENT,
    )
    # The button, or Enter; a title changed again while the last is on its way is saved
    # once that one is back (the box is not an output: the box as it is then). The title
    # is read as the box shows it: Gradio's copy can lag a title typed just before.
    as_shown_title = _as_shown_js([None, page.rename_box.elem_id, None, None], "(...a) => a")
    for rename in (page.rename_btn.click, page.rename_box.submit):
        rename(
            sidebar.rename,
            [page.session_id, page.rename_box, page.search, page.form_base],
            [page.session_list, page.form_base],
            trigger_mode="always_last",
            js=as_shown_title,
            **_EVENT,
        )
    page.delete_btn.click(sidebar.ask_delete, sid, [page.confirm_row], **_EVENT)
    page.cancel_delete_btn.click(sidebar.cancel_delete, None, [page.confirm_row], **_EVENT)
    page.export_btn.click(transfer.export, sid, [page.export_data], **_EVENT).then(
        None, [page.export_data], None, js=download_js
    )

    page.role_picker.change(
        side_panel.describe_role, [page.role_picker], [page.role_note], queue=False, **_EVENT
    )
    # A role or model picked again while the last pick is on its way is taken once that one
    # is back, as the picker shows it then (a pick sets its picker only when refused).
    page.role_picker.input(
        side_panel.pick_role,
        [page.session_id, page.role_picker],
        [page.chatbot, page.role_picker],
        trigger_mode="always_last",
        **_EVENT,
    )
    page.model_picker.input(
        side_panel.pick_model,
        [page.session_id, page.model_picker],
        [page.model_note, page.model_picker],
        trigger_mode="always_last",
        **_EVENT,
    )
    # Events that only save skip the queue: queued next to another event of the same tab,
    # Gradio 6.31 sometimes leaves the other event's outputs "pending" in the browser. A
    # queue-less event cannot show a toast, so the limits say what is wrong in a note. They
    # are numbered: each saves its own field, in the tab's order (saves.py). A box changed
    # again while its last save is on its way is saved once that one is back ("always_last":
    # Gradio's default, "once", dropped the change; the boxes are not among the outputs,
    # so the save that follows reads them as they are then).
    note = [page.settings_note, page.form_base]
    saving: dict[str, Any] = {
        "queue": False,
        "trigger_mode": "always_last",
        **numbered,
        **_EVENT,
    }
    as_typed_saving = {**saving, "js": as_typed}
    page.system_prompt.blur(side_panel.settings_saver("system_prompt"), form, note, **saving)
    # The temperature is saved as it moves (arrow keys too, which end in no "release"),
    # and when it is let go.
    temperature = side_panel.settings_saver("temperature")
    page.temperature.input(temperature, form, note, **saving)
    page.temperature.release(temperature, form, note, **saving)
    # An Advanced setting is saved when the person leaves the box or presses Enter: "201"
    # typed is refused, not saved as "2", then "20" on the way. A limit is saved as it is
    # typed, reading the other limits as their boxes show them.
    advanced, limits = page.advanced_settings(), page.autochat_limits()
    for name, setting in advanced.items():
        gr.on([setting.blur, setting.submit], side_panel.settings_saver(name), form, note, **saving)
    for name, limit in limits.items():
        limit.input(side_panel.limit_saver(name), form, [page.form_base], **as_typed_saving)
    # Both are checked as they are typed, and the note under them says what is wrong: one
    # event for all the boxes of each, which Gradio runs one at a time, the newest last (an
    # event per box let an older box's note land last), reading the boxes as they show.
    as_shown = _as_typed_js(page, form, "(...inputs) => inputs")
    for boxes, check, said in (
        (advanced.values(), side_panel.check_settings, page.settings_note),
        (limits.values(), side_panel.check_limits, page.limits_note),
    ):
        gr.on(
            [box.input for box in boxes],
            check,
            form,
            [said],
            trigger_mode="always_last",
            queue=False,
            js=as_shown,
            **_EVENT,
        )
    page.edit_btn.click(
        handlers.edit_last,
        sid,
        [page.chat_input, page.edit_mode, *attached],
        **_EVENT,
    )
    clear_row = [page.confirm_clear_row]
    page.clear_btn.click(handlers.ask_clear, sid, clear_row, **_EVENT)
    page.cancel_clear_btn.click(handlers.cancel_clear, None, clear_row, **_EVENT)
    page.confirm_clear_btn.click(handlers.clear, sid, [*streamed, *clear_row], **_EVENT)
