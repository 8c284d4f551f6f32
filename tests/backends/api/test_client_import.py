"""Importing the API clients is light: a Streamlit page or a script that only talks to a
server does not load the server (FastAPI), the core (interpreter, store, state machine) or
a vendor SDK. Each check runs in a fresh Python process, since this one has loaded them all.

The packages on the way (`backends.api`, `gui_agent`) load their names on first use; the
last tests check that every name they export still resolves that way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gui_agent.exceptions
from tests.backends.api.live import Backend

ROOT = Path(__file__).resolve().parents[3]
HEAVY = [
    "fastapi",
    "starlette",
    "uvicorn",
    "gradio",
    "aiosqlite",
    "transitions",
    "gui_agent.interpreter",
    "gui_agent.manager",
    "gui_agent.store",
    "tiktoken",
    "openai",
    "anthropic",
]

USE_THE_CLIENTS = """
import asyncio, json, sys

import backends.api.client, backends.api.async_client
from backends.api.async_client import AsyncGuiAgentClient
from backends.api.client import GuiAgentClient

heavy = json.loads(sys.argv[1])


def loaded():
    return sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))


after_import = loaded()
with GuiAgentClient(sys.argv[2]) as client:
    client.login()
    chat = client.create_session(title="light")
    text = []
    with client.events(chat.id) as events:
        client.send_message(chat.id, "hi")
        for event in events:
            if event.type == "text_delta":
                text.append(event.delta)
            if event.type == "state_changed" and event.to_state.value == "STOP":
                break


async def read_back():
    async with AsyncGuiAgentClient(sys.argv[2]) as client:
        await client.login()
        detail = await client.get_session(chat.id)
        return [message.content for message in detail.messages]


messages = asyncio.run(read_back())
print(json.dumps({"after_import": after_import, "after_use": loaded(),
                  "reply": "".join(text), "messages": messages}))
"""

RESOLVE_LAZILY = """
import importlib, json, sys

package = importlib.import_module(sys.argv[1])
listed = sorted(name for name in dir(package) if name in package.__all__)
bound_before = sorted(name for name in package.__all__ if name in vars(package))
resolved = {}
for name in package.__all__:
    namespace = {}
    exec(f"from {sys.argv[1]} import {name} as value", namespace)
    value = namespace["value"]
    resolved[name] = value is not None and getattr(package, name) is value
try:
    package.no_such_name
    missing = "resolved"
except AttributeError as exc:
    missing = str(exc)
print(json.dumps({"all": package.__all__, "listed": listed, "bound_before": bound_before,
                  "resolved": resolved, "missing": missing}))
"""


def _run(script: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_importing_and_using_the_clients_loads_no_server_core_or_vendor_sdk(
    backend: Backend,
) -> None:
    backend.scripted.push("Light all the way.")
    result = _run(USE_THE_CLIENTS, json.dumps(HEAVY), backend.base_url)
    assert result["after_import"] == []
    assert result["after_use"] == []
    assert result["reply"] == "Light all the way."
    assert result["messages"] == ["hi", "Light all the way."]


def test_importing_the_packages_loads_none_of_their_heavy_names() -> None:
    script = (
        "import json, sys; import backends.api, gui_agent; heavy = json.loads(sys.argv[1]); "
        "print(json.dumps({'loaded': sorted(m for m in sys.modules "
        "if any(m == h or m.startswith(h + '.') for h in heavy))}))"
    )
    assert _run(script, json.dumps(HEAVY)) == {"loaded": []}


@pytest.mark.parametrize("package", ["gui_agent", "backends.api"])
def test_every_exported_name_resolves_on_first_use(package: str) -> None:
    result = _run(RESOLVE_LAZILY, package)
    assert result["listed"] == sorted(result["all"])  # dir() offers them before they load
    assert result["resolved"] == {name: True for name in result["all"]}
    assert "no_such_name" in result["missing"]
    # Only the exceptions (which cost nothing to import) are bound before first use.
    eager = [name for name in result["all"] if hasattr(gui_agent.exceptions, name)]
    assert result["bound_before"] == (sorted(eager) if package == "gui_agent" else [])
