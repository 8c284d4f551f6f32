"""A model the server's environment configures but leaves out (its base URL variable cannot
be a base URL: `connectors.model_config.specs_from_environment`) is named on the page, with
why, under the model picker; without one left out the page says nothing about it. Before,
only the server's log said so: a person saw the model missing from the picker, no reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from backends.gradio import create_app
from backends.server import build_server
from connectors.scripted import ScriptedModel
from gui_agent.config import AppConfig
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import MemoryStore
from tests.backends.api.live import Api, ServerThread

WHY = (
    "openai:gpt-4o-mini (from OPENAI_API_KEY in environment) is not offered: OPENAI_BASE_URL "
    "(in the environment) is '127.0.0.1:18607/v1', which cannot be a server's base URL"
)


def left_out_note(config: dict[str, Any]) -> dict[str, Any]:
    """The props of the page's note of the models left out, as the page is served."""
    [note] = [c for c in config["components"] if c["props"].get("elem_id") == "models-left-out"]
    props: dict[str, Any] = note["props"]
    return props


async def page_config(tmp_path: Path, left_out: tuple[str, ...]) -> dict[str, Any]:
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(name="scripted")),
        store=MemoryStore(),
        workspace_root=tmp_path,
    )
    blocks: Any = create_app(manager, left_out=left_out)
    config: dict[str, Any] = blocks.config
    return config


async def test_a_model_left_out_is_named_with_why_under_the_model_picker(tmp_path: Path) -> None:
    other = "anthropic:claude (from ANTHROPIC_API_KEY in .env file) is not offered: <why>"
    note = left_out_note(await page_config(tmp_path, (WHY, other)))
    assert note["visible"] is True
    assert WHY in note["value"]
    assert "&lt;why>" in note["value"]  # as text, never a tag
    components = (await page_config(tmp_path, (WHY,)))["components"]
    order = [c["props"].get("elem_id") for c in components]
    assert order.index("models-left-out") == order.index("model-note") + 1  # by the picker


async def test_with_nothing_left_out_the_page_says_nothing_of_it(tmp_path: Path) -> None:
    note = left_out_note(await page_config(tmp_path, ()))
    assert note["visible"] is False
    assert note["value"] == ""


def test_the_server_shows_its_page_the_model_its_environment_leaves_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # (no .env file of the working folder's)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "127.0.0.1:18607/v1")
    config = AppConfig(models=("scripted:echo",), data_dir=tmp_path / "data", port=0)
    server = ServerThread(lambda: build_server(config, probe_local=False)).start()
    api = Api(server.base_url).login()
    try:
        models = api.get("/api/models").json()
        note = left_out_note(api.http.get("/config").json())
    finally:
        api.close()
        server.stop()
    assert "openai:gpt-4o-mini" not in [m["name"] for m in models["models"]]  # not offered
    [said] = models["left_out"]  # the API says why, for the React and Streamlit front ends
    assert WHY in said and "(e.g. http://127.0.0.1:18607/v1)" in said
    assert note["visible"] is True
    assert WHY in note["value"]
    assert "(e.g. http://127.0.0.1:18607/v1)" in note["value"]  # what to write instead
