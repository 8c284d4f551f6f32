"""The open chat's settings in the Streamlit front end: what the Gradio page's Settings panel
holds (system prompt, temperature, max tokens, steps per turn, memory, approval timeout),
shown as the server has them and saved together. An empty box means the default (the
model's, or none)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from backends.api.client import ApiError, GuiAgentClient
from backends.api.responses import SessionDetail
from backends.streamlit.forms import to_save

__all__ = ["settings_panel"]


def settings_panel(client: GuiAgentClient, detail: SessionDetail) -> None:
    record = detail.session
    now = record.settings
    with st.expander("Settings"), st.form(f"settings-{record.id}"):
        prompt = st.text_area("System prompt", value=now.system_prompt)
        left, right = st.columns(2)
        temperature = left.number_input(
            "Temperature (empty: the model's)",
            min_value=0.0,
            max_value=2.0,
            value=now.temperature,
            step=0.1,
        )
        max_tokens = right.number_input(
            "Max tokens (empty: the model's)", min_value=1, value=now.max_tokens
        )
        steps = left.number_input(
            "Max steps per turn", min_value=1, max_value=200, value=now.max_iterations
        )
        exchanges = right.number_input(
            "Exchanges remembered", min_value=1, max_value=100, value=now.memory_exchanges
        )
        budget = left.number_input(
            "Memory token budget (empty: none)", min_value=1, value=now.memory_token_budget
        )
        timeout = right.number_input(
            "Approval timeout in s (empty: waits for ever)",
            min_value=1.0,
            value=now.approval_timeout_s,
        )
        clicked = st.form_submit_button("Save settings")
        submitted: dict[str, Any] = {
            "system_prompt": prompt,
            "temperature": temperature,
            "max_tokens": None if max_tokens is None else int(max_tokens),
            "max_iterations": int(steps),
            "memory_exchanges": int(exchanges),
            "memory_token_budget": None if budget is None else int(budget),
            "approval_timeout_s": timeout,
        }
        shown = {name: getattr(now, name) for name in submitted}
        # (also when the click was lost to a change made right after it: `forms`)
        if to_save(f"settings-{record.id}", shown, submitted, clicked=clicked):
            try:
                client.update_session(record.id, settings=submitted)
            except ApiError as error:
                st.session_state.flash = f"Settings: {error.message}"
            st.rerun()
