"""A Streamlit form whose Save click was lost still saves what it holds.

A click on a form's submit button reaches the script once, as a trigger in the run it asks
for. When another change (the AutoChat switch, clicked right after Save) reaches the server
as that run is starting, Streamlit starts the other change's run in its place, and that run
carries the form's new values (the browser sent them with the click and keeps them) but
not the click. The form then shows values that were never saved, as if they had been.

So a form that saves what the server has is saved when it is clicked, and also when it
holds submitted values that differ from those it was drawn with and no save was tried for
them: the click was lost. A save that was tried and refused (the error is said) is not
tried again on every run, only when Save is clicked again or the server's values change.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import streamlit as st

__all__ = ["to_save"]

logger = logging.getLogger(__name__)

_TRIED = "forms-tried"  # (session state: form -> the shown and submitted values last tried)


def to_save(
    form: str, shown: Mapping[str, object], submitted: Mapping[str, object], *, clicked: bool
) -> bool:
    """Whether the form `form`, drawn with the server's values `shown` and holding
    `submitted`, is to be saved now: Save was clicked, or its click was lost. Each answer
    of yes is noted as a save tried for these values."""
    tried: dict[str, object] = st.session_state.setdefault(_TRIED, {})
    attempt = (tuple(shown.items()), tuple(submitted.items()))
    if not clicked:
        if dict(submitted) == dict(shown) or tried.get(form) == attempt:
            return False
        logger.info("The Save click of form %s was lost: saving what it holds", form)
    tried[form] = attempt
    return True
