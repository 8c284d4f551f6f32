"""Token counting: real tiktoken offline from the bundled files, and a graceful fallback."""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken.load
import tiktoken.registry
import tiktoken_ext.openai_public  # type: ignore[import-untyped]

from gui_agent import tokens
from gui_agent.tokens import (
    CallableCounter,
    EstimateCounter,
    TiktokenCounter,
    TokenCounter,
    counter_for_encoding,
    counter_for_model,
    encoding_for_model,
    ensure_offline_encodings,
)
from schema import ImagePart, Message, Role, ToolCall

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No tiktoken encodings loaded yet, no counters built, a private user cache folder and
    no TIKTOKEN_CACHE_DIR (restored afterwards). Yields the user cache root."""
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        monkeypatch.setenv(name, "placeholder")  # records the original for teardown
        monkeypatch.delenv(name)
    counter_for_encoding.cache_clear()
    yield tmp_path / "xdg"
    counter_for_encoding.cache_clear()


def test_tiktoken_loads_offline_and_counts_exactly(fresh: Path) -> None:
    counter = TiktokenCounter("o200k_base")

    assert counter.count_text("hello world") == 2
    assert counter.estimated is False
    assert counter.name == "tiktoken o200k_base"
    assert TiktokenCounter("cl100k_base").count_text("hello world") == 2


def test_bundled_files_land_where_tiktoken_looks(fresh: Path) -> None:
    folder = ensure_offline_encodings()

    assert folder == fresh / "gui-agent" / "tiktoken"
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(folder)
    for url in (O200K_URL, CL100K_URL):
        assert (folder / hashlib.sha1(url.encode()).hexdigest()).is_file()
    assert not list(folder.glob("*.tmp"))  # atomic: no temp files left behind
    # tiktoken's own cache lookup finds the file without touching the network.
    data = tiktoken.load.read_file_cached(O200K_URL)
    assert data.startswith(b"IQ== 0")


def test_special_token_text_is_counted_as_text(fresh: Path) -> None:
    counter = counter_for_model("gpt-4o")

    assert counter.count_text("say <|endoftext|> please") > 1


def test_urls_and_hashes_match_the_installed_tiktoken() -> None:
    for encoding in ("o200k_base", "cl100k_base"):
        source = inspect.getsource(getattr(tiktoken_ext.openai_public, encoding))
        bundled = tokens._BUNDLED[encoding]
        assert bundled.url in source
        assert bundled.sha256 in source


def test_a_cache_folder_the_user_chose_is_left_alone(
    fresh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "mine"))

    folder = ensure_offline_encodings(tmp_path / "ours")

    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path / "mine")
    assert (folder / hashlib.sha1(O200K_URL.encode()).hexdigest()).is_file()


def test_importing_prepares_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("TIKTOKEN_CACHE_DIR", None)
    code = "import os, gui_agent.tokens; print(os.environ.get('TIKTOKEN_CACHE_DIR'))"
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "None"
    assert not (tmp_path / "gui-agent").exists()


def test_without_bundled_files_or_network_counts_are_estimates(
    fresh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
    monkeypatch.setattr(tokens, "_bundled_data_dir", lambda: None)

    with caplog.at_level(logging.WARNING, logger="gui_agent.tokens"):
        counter = counter_for_model("gpt-4o")
        again = counter_for_model("gpt-4o")

    assert isinstance(counter, EstimateCounter)
    assert counter.estimated is True
    assert counter.count_text("a" * 40) == 10
    assert again is counter
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "o200k_base" in warnings[0].getMessage()


def test_a_corrupted_cache_file_falls_back_to_estimates(
    fresh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(b"not the vocabulary\n")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))

    counter = counter_for_model("gpt-5")

    assert counter.estimated is True
    assert counter.count_text("hello world") > 0


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", ("o200k_base", False)),
        ("gpt-4o-mini-2024-07-18", ("o200k_base", False)),
        ("gpt-4.1", ("o200k_base", False)),
        ("openai/gpt-4.1-nano", ("o200k_base", False)),
        ("gpt-5", ("o200k_base", False)),
        ("o3-mini", ("o200k_base", False)),
        ("o1", ("o200k_base", False)),
        ("gpt-4", ("cl100k_base", False)),
        ("gpt-4-turbo", ("cl100k_base", False)),
        ("gpt-3.5-turbo", ("cl100k_base", False)),
        ("gpt-7-preview", ("o200k_base", False)),
        ("claude-sonnet-4-5", ("o200k_base", True)),
        ("anthropic/claude-3-5-haiku", ("o200k_base", True)),
        ("SmolLM2-135M-Instruct", ("o200k_base", True)),
        ("llama3:8b", ("o200k_base", True)),
        (None, ("o200k_base", True)),
        ("", ("o200k_base", True)),
    ],
)
def test_model_names_pick_the_right_encoding(model: str | None, expected: tuple[str, bool]) -> None:
    assert encoding_for_model(model) == expected


def test_claude_counts_are_real_tokens_marked_estimated(fresh: Path) -> None:
    counter = counter_for_model("claude-opus-4")

    assert counter.estimated is True
    assert "estimate" in counter.name
    assert counter.count_text("hello world") == 2
    assert counter_for_model("gpt-4o").estimated is False


def test_counters_are_shared_per_encoding(fresh: Path) -> None:
    assert counter_for_model("gpt-4o") is counter_for_model("o3")
    assert counter_for_model("gpt-4o") is not counter_for_model("gpt-4")


def test_message_counts_include_overhead_and_tool_calls_not_reasoning(fresh: Path) -> None:
    counter = counter_for_model("gpt-4o")
    plain = Message(role=Role.ASSISTANT, content="hello world")
    thinking = plain.model_copy(update={"reasoning": "a long private chain of thought " * 20})
    calling = plain.model_copy(
        update={"tool_calls": (ToolCall(id="c1", name="search", arguments='{"q": "cats"}'),)}
    )

    one = counter.count_messages([plain])
    assert one > counter.count_text("hello world")
    assert counter.count_messages([plain, plain]) > one
    assert counter.count_messages([thinking]) == one
    assert counter.count_messages([calling]) > one + counter.count_text('{"q": "cats"}')


def test_estimate_counter() -> None:
    counter = EstimateCounter()

    assert counter.name == "estimate (~4 chars/token)"
    assert counter.estimated is True
    assert counter.count_text("") == 0
    assert counter.count_text("abcdefghi") == 3
    assert EstimateCounter(2.5).name == "estimate (~2.5 chars/token)"
    with pytest.raises(ValueError):
        EstimateCounter(0)


def test_a_local_tokenizer_plugs_in() -> None:
    counter: TokenCounter = CallableCounter("words", lambda text: len(text.split()))

    assert isinstance(counter, TokenCounter)
    assert counter.count_text("one two three") == 3
    assert counter.estimated is False
    message = Message(role=Role.USER, content="one two three")
    # framing + role ("user" = 1 word) + content, plus the reply priming
    expected = tokens.TOKENS_PER_MESSAGE + 1 + 3 + tokens.REPLY_PRIMING_TOKENS
    assert counter.count_messages([message]) == expected


def _kinds_of_messages() -> list[Message]:
    return [
        Message(role=Role.USER, content="what is the weather in Paris today?"),
        Message(
            role=Role.ASSISTANT,
            content="let me look",
            tool_calls=(
                ToolCall(id="c1", name="search", arguments='{"q": "weather Paris"}'),
                ToolCall(id="c2", name="calendar", arguments='{"day": "today"}'),
            ),
        ),
        Message(role=Role.TOOL, tool_call_id="c1", name="search", content="sunny, 21 degrees"),
        Message(role=Role.USER, content="look", images=(ImagePart(data="aGk="),)),
        Message(
            role=Role.USER,
            content="two pictures",
            images=(ImagePart(url="https://example.com/a.png"), ImagePart(data="aGk=")),
        ),
    ]


def test_one_message_costs_what_it_adds_to_a_request(fresh: Path) -> None:
    tiktoken_counter = counter_for_model(None)
    assert isinstance(tiktoken_counter, TiktokenCounter)  # the real one loaded offline
    for counter in (tiktoken_counter, EstimateCounter()):
        empty = counter.count_messages([])
        assert empty == tokens.REPLY_PRIMING_TOKENS
        for message in _kinds_of_messages():
            expected = counter.count_messages([message]) - empty
            assert counter.count_message(message) == expected, message
            assert tokens.message_tokens(counter.count_text, message) == expected, message


def test_message_tokens_counts_each_part() -> None:
    counter = CallableCounter("words", lambda text: len(text.split()))
    f = counter.count_text
    user, calling, tool, image, images = _kinds_of_messages()

    # framing + role (1 word) + content
    assert tokens.message_tokens(f, user) == tokens.TOKENS_PER_MESSAGE + 1 + 7
    # + per call: framing + name (1 word) + arguments (3 and 2 words)
    assert tokens.message_tokens(f, calling) == (
        tokens.TOKENS_PER_MESSAGE + 1 + 3 + 2 * (tokens.TOKENS_PER_TOOL_CALL + 1) + 3 + 2
    )
    # + 1 + name
    assert tokens.message_tokens(f, tool) == tokens.TOKENS_PER_MESSAGE + 1 + 3 + 1 + 1
    # + a flat cost per image
    assert (
        tokens.message_tokens(f, image) == tokens.TOKENS_PER_MESSAGE + 1 + 1 + tokens.IMAGE_TOKENS
    )
    assert tokens.message_tokens(f, images) == (
        tokens.TOKENS_PER_MESSAGE + 1 + 2 + 2 * tokens.IMAGE_TOKENS
    )


def test_a_request_costs_the_priming_plus_each_message(fresh: Path) -> None:
    user, calling, tool, image, _ = _kinds_of_messages()
    for f in (counter_for_model(None).count_text, EstimateCounter().count_text):
        for a, b in ((user, calling), (tool, image), (calling, calling)):
            assert tokens.count_messages_with(f, [a, b]) == (
                tokens.REPLY_PRIMING_TOKENS
                + tokens.message_tokens(f, a)
                + tokens.message_tokens(f, b)
            )
        assert tokens.count_messages_with(f, []) == tokens.REPLY_PRIMING_TOKENS
