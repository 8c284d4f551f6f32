"""The page's components, placed; no behaviour (see `handlers.py` and `app.py`).

Stable handles for tests and scripts are the `elem_id`s listed in `ELEM_IDS`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import gradio as gr

from backends.gradio.image_upload import ImageUploadButton
from backends.gradio.looks import code_span
from backends.gradio.markdown import escape_html
from backends.gradio.panels import (
    AutoChatStatus,
    allowed_markdown,
    badge_html,
    memory_markdown,
    usage_markdown,
)
from backends.gradio.tray_preview import TRAY_PREVIEW_JS
from backends.gradio.typed_slider import TypedSlider
from gui_agent.wording import role_title
from schema import AgentName, AutoChatSettings, InterpreterState, SessionSettings, Usage

__all__ = [
    "ELEM_IDS",
    "SETTING_LABELS",
    "Page",
    "build_page",
    "model_note_text",
    "setting_text",
]

SETTING_LABELS = {
    "max_tokens": "Max tokens",
    "max_iterations": "Max steps per turn",
    "memory_exchanges": "Exchanges remembered",
    "memory_token_budget": "Memory token budget",
    "approval_timeout_s": "Approval timeout",
}
"""The Advanced settings as the page labels them (problems name the field the person sees)."""

ELEM_IDS = (
    "chat-input",
    "attach-btn",
    "send-btn",
    "stop-btn",
    "state-badge",
    "autochat-toggle",
    "autochat-max-turns",
    "role-picker",
    "approve-once-btn",
    "approve-session-btn",
    "deny-btn",
    "memory-panel",
    "usage-panel",
    "model-picker",
    "session-list",
    "new-session-btn",
    "session-id",
    "clear-btn",
    "confirm-clear-btn",
    "max-tokens",
    "max-iterations",
    "memory-exchanges",
    "memory-token-budget",
    "approval-timeout",
    "settings-note",
)

PLACEHOLDER = "Message the agent. Enter sends, Shift+Enter adds a line, Esc stops."
NOTE_LABEL = "A note for the agent, with Allow or Deny (optional)"
NOTE_INFO = "Enter denies with this note; Shift+Enter adds a line. Allowing takes a click."
NOTE_PLACEHOLDER = "e.g. not in my home folder: use a temporary one"
"""The approval note: the agent reads it with either answer (after the tool's result when
allowed, as the reason when denied), and Enter denies with it. What Enter does is in the
box's info line, which stays in sight once a note is typed (a placeholder vanishes with the
first letter)."""


TOOL_MODE_CHOICES: dict[str, str] = {
    "Ask me first": "ask",
    "Run without asking": "allow",
    "Never run": "deny",
    "As the app decides": "",
}
"""The tool mode picker's labels and the modes they set ("": the app's own choice, which is
to ask first for a tool that changes things)."""


@dataclass(eq=False)
class Page:
    """Every component of the chat page. Handlers read and write these."""

    session_id: gr.Textbox
    badge: gr.HTML
    notice: gr.Markdown
    # sessions (sidebar)
    account: gr.Markdown
    new_btn: gr.Button
    search: gr.Textbox
    session_list: gr.Radio
    rename_box: gr.Textbox
    title_offer: gr.Textbox
    rename_btn: gr.Button
    delete_btn: gr.Button
    confirm_row: gr.Row
    confirm_delete_btn: gr.Button
    cancel_delete_btn: gr.Button
    export_btn: gr.Button
    export_data: gr.Textbox
    import_btn: gr.UploadButton
    replay_btn: gr.UploadButton
    # chat
    chatbot: gr.Chatbot
    approval_group: gr.Column
    approval_title: gr.Markdown
    approval_code: gr.Markdown
    approval_id: gr.Textbox
    approval_note: gr.Textbox
    approve_once_btn: gr.Button
    approve_session_btn: gr.Button
    deny_btn: gr.Button
    chat_input: gr.Textbox
    attach_btn: gr.UploadButton
    attach_note: gr.Markdown
    detach_btn: gr.Button
    attach_preview: gr.HTML
    """A picture of each image attached for the next message, each with a button that
    takes it back (tray_preview.py; its event: `TAKE_BACK_EVENT`)."""
    send_btn: gr.Button
    stop_btn: gr.Button
    retry_btn: gr.Button
    edit_btn: gr.Button
    edit_mode: gr.Checkbox
    clear_btn: gr.Button
    confirm_clear_row: gr.Row
    confirm_clear_btn: gr.Button
    cancel_clear_btn: gr.Button
    # side panels
    role_picker: gr.Dropdown
    role_note: gr.Markdown
    model_picker: gr.Dropdown
    model_note: gr.Markdown
    models_left_out: gr.Markdown
    """Why models the server's environment configures are not in the picker (hidden when
    none was left out: `connectors.registry.ModelRegistry.left_out`)."""
    system_prompt: gr.Textbox
    temperature: gr.Slider
    max_tokens: gr.Textbox
    max_iterations: gr.Textbox
    memory_exchanges: gr.Textbox
    memory_token_budget: gr.Textbox
    approval_timeout: gr.Textbox
    settings_note: gr.Markdown
    """What is wrong with a setting just typed (empty when they are all valid)."""
    autochat_toggle: gr.Checkbox
    max_turns: gr.Number
    delay: gr.Number
    token_budget: gr.Number
    time_budget: gr.Number
    limits_note: gr.Markdown
    autochat_status: gr.Markdown
    memory_panel: gr.Markdown
    allowed_panel: gr.Markdown
    forget_allowed_btn: gr.Button
    tools_panel: gr.Markdown
    tool_picker: gr.Dropdown
    tool_mode: gr.Radio
    usage_panel: gr.Markdown
    form_base: gr.Textbox
    """The values the tab's settings boxes last got from the server, for the chat it shows
    (bases.py): what a send tells the person's changes by."""
    tab_wake: gr.Textbox
    """Changed by the tab's keep-alive event when the chat it shows moves on elsewhere."""
    chats_wake: gr.Textbox
    """Changed by the tab's keep-alive event when its chats list, or the settings of the
    chat it shows, changed elsewhere (follow.py)."""
    keep_alive: gr.Textbox
    """How many times the page started the tab's keep-alive event again after it ended
    ("" before: page.js, presence.py); each new count starts it."""
    unsaved: gr.Textbox
    """Never set: the page-load event's slot for the settings typed and not yet saved
    before a reload (unsaved.py)."""
    ticket: gr.Textbox
    """Which of the tab's events the browser triggered later (a number it counts up): an
    event that replaces the view ends only the streams of events triggered before it."""

    def components(self) -> list[Any]:
        """Every component, in declaration order (outputs of handlers that may touch any)."""
        return [getattr(self, item.name) for item in fields(self)]

    def advanced_settings(self) -> dict[str, gr.Textbox]:
        """The Advanced settings' fields, by the `SessionSettings` field each one shows."""
        return {
            "max_tokens": self.max_tokens,
            "max_iterations": self.max_iterations,
            "memory_exchanges": self.memory_exchanges,
            "memory_token_budget": self.memory_token_budget,
            "approval_timeout_s": self.approval_timeout,
        }

    def autochat_limits(self) -> dict[str, gr.Number]:
        """The AutoChat limits' fields, by the `AutoChatSettings` field each one shows."""
        return {
            "max_turns": self.max_turns,
            "delay_s": self.delay,
            "token_budget": self.token_budget,
            "time_budget_s": self.time_budget,
        }


def build_page(
    *,
    title: str,
    notice: str | None,
    agents: Sequence[AgentName],
    models: Sequence[str],
    default_model: str | None,
    model_note: str,
    agent_notes: Mapping[AgentName, str] | None = None,
    tools_text: str = "",
    tool_names: Sequence[str] = (),
    left_out: Sequence[str] = (),
) -> Page:
    """Create and place the components inside the current `gr.Blocks` context; `left_out`
    says why models the environment configures are not in the model picker."""
    settings = SessionSettings()
    auto = AutoChatSettings()
    # The tab's session ("" = a new chat). A textbox, not a gr.State, so the browser knows
    # it and can reopen that chat after a reload (page.js keeps it in localStorage).
    session_id = gr.Textbox("", visible="hidden", elem_id="session-id", label="Session")
    gr.Markdown(f"## {escape_html(title)}", elem_classes=["ga-title"])
    notice_box = gr.Markdown(
        escape_html(notice or ""),
        elem_id="notice",
        elem_classes=["ga-notice"],
        visible=bool(notice),
    )

    with gr.Sidebar(label="Chats", open=True, elem_id="session-sidebar"):
        account = gr.Markdown("", elem_id="account")
        new_btn = gr.Button("New chat", elem_id="new-session-btn", variant="primary")
        search = gr.Textbox(
            label="Search chats",
            placeholder="Search by title",
            elem_id="session-search",
            max_length=200,
        )
        session_list = gr.Radio(
            choices=[], label="Your chats", elem_id="session-list", interactive=True
        )
        with gr.Accordion("Manage this chat", open=False):
            rename_box = gr.Textbox(label="Title", elem_id="rename-input", max_length=200)
            # A chat's first title, offered to the Title box after a turn (sidebar.py).
            title_offer = gr.Textbox("", visible="hidden", elem_id="title-offer", label="Title")
            rename_btn = gr.Button("Rename chat", elem_id="rename-btn", size="sm")
            delete_btn = gr.Button("Delete chat", elem_id="delete-btn", variant="stop", size="sm")
            with gr.Row(visible=False, elem_id="confirm-delete-row") as confirm_row:
                confirm_delete_btn = gr.Button(
                    "Yes, delete it and its files",
                    elem_id="confirm-delete-btn",
                    variant="stop",
                    size="sm",
                )
                cancel_delete_btn = gr.Button("Cancel", elem_id="cancel-delete-btn", size="sm")
            export_btn = gr.Button("Export as JSON", elem_id="export-btn", size="sm")
            export_data = gr.Textbox(visible=False, elem_id="export-data")
            import_btn = gr.UploadButton(
                "Import a JSON export",
                elem_id="import-btn",
                file_types=[".json"],
                type="binary",
                size="sm",
            )
            replay_btn = gr.UploadButton(
                "Replay a JSON export",
                elem_id="replay-btn",
                file_types=[".json"],
                type="binary",
                size="sm",
            )

    with gr.Row(elem_classes=["ga-main"]):
        with gr.Column(scale=3, min_width=320):
            chatbot = gr.Chatbot(
                value=[],
                elem_id="chatbot",
                label="Conversation",
                height="62vh",
                min_height=320,
                sanitize_html=True,
                render_markdown=True,
                group_consecutive_messages=True,
                feedback_options=None,
                buttons=["copy"],
                allow_tags=False,
                placeholder="Ask something to start.",
            )
            # Shown only while an approval is open: page.js hides it when the title is empty.
            with gr.Column(elem_id="approval-panel", variant="panel") as approval_group:
                approval_title = gr.Markdown(elem_id="approval-title")
                approval_code = gr.Markdown(elem_id="approval-code")
                approval_id = gr.Textbox(visible=False, elem_id="approval-id")
                approval_note = gr.Textbox(
                    label=NOTE_LABEL,
                    info=NOTE_INFO,
                    placeholder=NOTE_PLACEHOLDER,
                    elem_id="approval-note",
                    lines=1,
                    max_lines=6,
                    max_length=2000,
                )
                with gr.Row():
                    approve_once_btn = gr.Button(
                        "Allow once", elem_id="approve-once-btn", variant="primary"
                    )
                    approve_session_btn = gr.Button(
                        "Allow for this chat", elem_id="approve-session-btn"
                    )
                    deny_btn = gr.Button("Deny", elem_id="deny-btn", variant="stop")
            with gr.Row(equal_height=True, elem_classes=["ga-input-row"]):
                chat_input = gr.Textbox(
                    elem_id="chat-input",
                    show_label=False,
                    label="Message",
                    placeholder=PLACEHOLDER,
                    lines=1,
                    max_lines=10,
                    scale=8,
                    min_width=200,
                    autofocus=True,
                )
                with gr.Column(scale=1, min_width=100, elem_classes=["ga-actions"]):
                    badge = gr.HTML(
                        badge_html(InterpreterState.INIT),
                        elem_id="state-badge",
                        js_on_load=None,
                        container=False,
                    )
                    send_btn = gr.Button("Send", elem_id="send-btn", variant="primary")
                    # Enabled only while RUNNING or WAITING: page.js follows the badge.
                    stop_btn = gr.Button("Stop", elem_id="stop-btn", variant="stop")
            with gr.Row(elem_classes=["ga-attachments"]):
                attach_note = gr.Markdown("", elem_id="attach-note")
                detach_btn = gr.Button(
                    "Remove images", elem_id="detach-btn", size="sm", visible=False
                )
            attach_preview = gr.HTML(
                "", elem_id="attach-preview", js_on_load=TRAY_PREVIEW_JS, padding=False
            )
            with gr.Row(elem_classes=["ga-controls"]):
                attach_btn = ImageUploadButton(  # (each file with its name, unchecked)
                    "Attach images",
                    elem_id="attach-btn",
                    file_types=["image"],
                    file_count="multiple",
                    size="sm",
                )
                retry_btn = gr.Button("Retry last turn", elem_id="retry-btn", size="sm")
                edit_btn = gr.Button("Edit last message", elem_id="edit-btn", size="sm")
                clear_btn = gr.Button("Clear chat", elem_id="clear-btn", size="sm")
                edit_mode = gr.Checkbox(
                    label="Send as an edit of my last message", elem_id="edit-mode"
                )
            with gr.Row(visible=False, elem_id="confirm-clear-row") as confirm_clear_row:
                gr.Markdown("Delete every message of this chat?", elem_id="confirm-clear-text")
                confirm_clear_btn = gr.Button(
                    "Yes, clear it", elem_id="confirm-clear-btn", variant="stop", size="sm"
                )
                cancel_clear_btn = gr.Button("Cancel", elem_id="cancel-clear-btn", size="sm")

        with gr.Column(scale=1, min_width=280, elem_classes=["ga-side"]):
            role_picker = gr.Dropdown(
                choices=[(role_title(agent), agent.value) for agent in agents],
                value=agents[0].value if agents else None,
                label="Agent role (answers your next message)",
                elem_id="role-picker",
                interactive=True,
            )
            role_note = gr.Markdown(
                escape_html((agent_notes or {}).get(agents[0], "")) if agents else "",
                elem_id="role-note",
            )
            with gr.Accordion("AutoChat", open=True, elem_id="autochat-box"):
                autochat_toggle = gr.Checkbox(
                    label="AutoChat: keep working on its own",
                    value=auto.enabled,
                    elem_id="autochat-toggle",
                )
                # No minimum/maximum here: Gradio would refuse every event that reads the
                # form (a send too) before a handler could say which field is wrong. The
                # handlers check the limits and name the field (form.py).
                with gr.Row():
                    # (No `precision`: Gradio would round 2.5 to 2 before any handler
                    # could name it. A fraction is refused, as in the Advanced settings.)
                    max_turns = gr.Number(
                        label="Max automatic turns",
                        value=auto.max_turns,
                        elem_id="autochat-max-turns",
                        min_width=100,
                    )
                    delay = gr.Number(
                        label="Delay between turns (s)",
                        value=auto.delay_s,
                        elem_id="autochat-delay",
                        min_width=100,
                    )
                with gr.Row():
                    token_budget = gr.Number(
                        label="Token budget (0 = none)",
                        value=0,
                        elem_id="autochat-token-budget",
                        min_width=100,
                    )
                    time_budget = gr.Number(
                        label="Time budget in s (0 = none)",
                        value=0,
                        elem_id="autochat-time-budget",
                        min_width=100,
                    )
                # What is wrong with a limit just typed (empty when they are all valid).
                limits_note = gr.Markdown("", elem_id="autochat-limits-note")
                autochat_status = gr.Markdown(
                    AutoChatStatus(enabled=auto.enabled).text(), elem_id="autochat-status"
                )
            with gr.Accordion("Memory", open=True):
                memory_panel = gr.Markdown(
                    memory_markdown(None, lambda _id: None), elem_id="memory-panel"
                )
            with gr.Accordion("Usage", open=True):
                usage_panel = gr.Markdown(
                    usage_markdown(OrderedDict(), Usage()), elem_id="usage-panel"
                )
            with gr.Accordion("Tools", open=True, elem_id="allowed-box"):
                allowed_panel = gr.Markdown(allowed_markdown(()), elem_id="allowed-tools")
                forget_allowed_btn = gr.Button(
                    "Ask before every tool again", elem_id="forget-allowed-btn", size="sm"
                )
                tools_panel = gr.Markdown(tools_text, elem_id="tools-panel")
                # Set one tool's mode: pick it, then what its calls do (saved at once).
                tool_picker = gr.Dropdown(
                    choices=list(tool_names),
                    value=None,
                    label="Change a tool",
                    elem_id="tool-picker",
                    interactive=True,
                )
                tool_mode = gr.Radio(
                    choices=list(TOOL_MODE_CHOICES.items()),
                    value=None,
                    label="When the agent calls it in this chat",
                    elem_id="tool-mode",
                )
            with gr.Accordion("Settings", open=False):
                model_picker = gr.Dropdown(
                    choices=list(models),
                    value=default_model,
                    label="Model",
                    elem_id="model-picker",
                    interactive=True,
                )
                model_note_box = gr.Markdown(
                    model_note_text(default_model, model_note), elem_id="model-note"
                )
                left_out_box = gr.Markdown(
                    "\n\n".join(escape_html(why) for why in left_out),
                    elem_id="models-left-out",
                    elem_classes=["ga-notice"],
                    visible=bool(left_out),
                )
                system_prompt = gr.Textbox(
                    label="System prompt",
                    value=settings.system_prompt,
                    lines=3,
                    max_lines=12,
                    elem_id="system-prompt",
                )
                temperature = TypedSlider(  # (a value out of range is named: form.py)
                    label="Temperature",
                    minimum=0.0,
                    maximum=2.0,
                    step=0.05,
                    value=1.0,
                    elem_id="temperature",
                )
                with gr.Accordion("Advanced", open=False, elem_id="advanced-settings"):
                    advanced = _advanced_fields(settings)
                # What is wrong with a setting just typed (empty when they are all valid).
                settings_note = gr.Markdown("", elem_id="settings-note")

    # Created last on purpose: Gradio passes a form's inputs (a set) sorted by creation, so
    # the ticket is the last one, where the browser's event code puts it (see app.py).
    # What the settings boxes last got from the server, kept by the browser (bases.py).
    form_base = gr.Textbox("", visible="hidden", elem_id="form-base", label="Settings as got")
    # Changed by the tab's keep-alive event when its chat moves on elsewhere (presence.py).
    tab_wake = gr.Textbox("", visible="hidden", elem_id="tab-wake", label="Changed elsewhere")
    chats_wake = gr.Textbox("", visible="hidden", elem_id="chats-wake", label="Chats changed")
    # The page counts here the keep-alive events it starts again (page.js, presence.py).
    keep_alive = gr.Textbox("", visible="hidden", elem_id="keep-alive", label="Kept alive")
    unsaved = gr.Textbox("", visible="hidden", elem_id="unsaved-settings", label="Unsaved")
    ticket = gr.Textbox("", visible="hidden", elem_id="event-ticket", label="Event order")

    return Page(
        session_id=session_id,
        badge=badge,
        notice=notice_box,
        account=account,
        new_btn=new_btn,
        search=search,
        session_list=session_list,
        rename_box=rename_box,
        title_offer=title_offer,
        rename_btn=rename_btn,
        delete_btn=delete_btn,
        confirm_row=confirm_row,
        confirm_delete_btn=confirm_delete_btn,
        cancel_delete_btn=cancel_delete_btn,
        export_btn=export_btn,
        export_data=export_data,
        import_btn=import_btn,
        replay_btn=replay_btn,
        chatbot=chatbot,
        approval_group=approval_group,
        approval_title=approval_title,
        approval_code=approval_code,
        approval_id=approval_id,
        approval_note=approval_note,
        approve_once_btn=approve_once_btn,
        approve_session_btn=approve_session_btn,
        deny_btn=deny_btn,
        chat_input=chat_input,
        attach_btn=attach_btn,
        attach_note=attach_note,
        detach_btn=detach_btn,
        attach_preview=attach_preview,
        send_btn=send_btn,
        stop_btn=stop_btn,
        retry_btn=retry_btn,
        edit_btn=edit_btn,
        edit_mode=edit_mode,
        clear_btn=clear_btn,
        confirm_clear_row=confirm_clear_row,
        confirm_clear_btn=confirm_clear_btn,
        cancel_clear_btn=cancel_clear_btn,
        role_picker=role_picker,
        role_note=role_note,
        model_picker=model_picker,
        model_note=model_note_box,
        models_left_out=left_out_box,
        system_prompt=system_prompt,
        temperature=temperature,
        **advanced,
        settings_note=settings_note,
        autochat_toggle=autochat_toggle,
        max_turns=max_turns,
        delay=delay,
        token_budget=token_budget,
        time_budget=time_budget,
        limits_note=limits_note,
        autochat_status=autochat_status,
        memory_panel=memory_panel,
        allowed_panel=allowed_panel,
        forget_allowed_btn=forget_allowed_btn,
        tools_panel=tools_panel,
        tool_picker=tool_picker,
        tool_mode=tool_mode,
        usage_panel=usage_panel,
        form_base=form_base,
        tab_wake=tab_wake,
        chats_wake=chats_wake,
        keep_alive=keep_alive,
        unsaved=unsaved,
        ticket=ticket,
    )


def _advanced_fields(settings: SessionSettings) -> dict[str, gr.Textbox]:
    """The Advanced settings, showing `settings`. Text boxes, not `gr.Number`: that one
    shows an empty value as 0 (which these refuse), and would refuse or round a value before
    a handler could name the field. The handlers check them (form.py); empty means None."""

    def box(name: str, label: str, info: str, elem_id: str) -> gr.Textbox:
        return gr.Textbox(
            label=label,
            info=info,
            value=setting_text(getattr(settings, name)),
            elem_id=elem_id,
            lines=1,
            max_lines=1,
            max_length=20,
            min_width=100,
        )

    return {
        "max_tokens": box(
            "max_tokens",
            f"{SETTING_LABELS['max_tokens']} per reply",
            "The model's output limit for one reply; empty = the model's default.",
            "max-tokens",
        ),
        "max_iterations": box(
            "max_iterations",
            SETTING_LABELS["max_iterations"],
            "Model calls the agent may make for one message (1 to 200).",
            "max-iterations",
        ),
        "memory_exchanges": box(
            "memory_exchanges",
            SETTING_LABELS["memory_exchanges"],
            "Your last messages (with their answers) the model sees (1 to 100).",
            "memory-exchanges",
        ),
        "memory_token_budget": box(
            "memory_token_budget",
            SETTING_LABELS["memory_token_budget"],
            "Most tokens of the conversation the model sees; empty = no budget.",
            "memory-token-budget",
        ),
        "approval_timeout": box(
            "approval_timeout_s",
            f"{SETTING_LABELS['approval_timeout_s']} (s)",
            "How long a tool call waits for your approval; empty = for ever.",
            "approval-timeout",
        ),
    }


def model_note_text(model: str | None, note: str = "") -> str:
    """Under the model picker: the picked model's full name, which wraps there (the picker's
    box cuts a long one off: "anthropic:claude-sonnet-4-2…"), then what the server says
    of it (`note`)."""
    said = escape_html(note)
    if not model:
        return said
    named = f"Full name: {code_span(model)}"
    return f"{named}\n\n{said}" if said else named


def setting_text(value: float | None) -> str:
    """An Advanced setting as its box shows it: "" for None, 300.0 as "300"."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else str(value)
