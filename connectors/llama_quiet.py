"""llama.cpp's own messages go to this program's log; the program's output is left alone.

llama.cpp reports what it does (thousands of lines per model load) through one log
callback. llama-cpp-python prints them to standard error, and, with `verbose=False`,
also silences anything written directly around a load: for its length it points
descriptors 1 and 2 at /dev/null and replaces `sys.stdout` and `sys.stderr`, the whole
process's. In a program with threads that is no silence but lost output: the chat's
lines and log records written meanwhile, by any thread, went to /dev/null, and two loads
at once (the token counter's vocabulary and the model, two sessions) could restore each
other's /dev/null and leave standard output and error there for good. Every message
llama.cpp has comes through its log callback (a load writes nothing else), so the
descriptors need no silencing at all.

`quiet_llama_cpp()` (called before each load) makes both so: llama.cpp's messages are
records of the `connectors.llama_local.native` logger, at DEBUG (its errors at WARNING,
so a failed load says why), and llama-cpp-python's silencing leaves the descriptors and
`sys.stdout`/`sys.stderr` as they are. Both are the library's process-wide settings,
set once; calling it again changes nothing.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import threading
import types
from typing import Any, Final

from connectors.log_text import loggable

__all__ = ["NATIVE_LOGGER", "quiet_llama_cpp"]

NATIVE_LOGGER: Final = "connectors.llama_local.native"
"""The logger llama.cpp's own messages are records of."""

_SILENCER: Final = "suppress_stdout_stderr"
"""What llama-cpp-python's modules call the silencing they take from its `_utils`."""

_ERROR: Final = 4
"""ggml's GGML_LOG_LEVEL_ERROR (NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5)."""


class _OutputLeftAlone:
    """Stands for llama-cpp-python's `suppress_stdout_stderr`: changes nothing."""

    def __init__(self, disable: bool = True) -> None:
        self.disable = disable

    def __enter__(self) -> _OutputLeftAlone:
        return self

    def __exit__(self, *_: object) -> None:
        return None


def _log_native(level: int, text: bytes | None, _user_data: Any) -> None:
    """llama.cpp's log callback (any thread): one record per message piece. Never raises:
    an exception here would be printed by ctypes, on the output this keeps clean."""
    try:
        native = logging.getLogger(NATIVE_LOGGER)
        at = logging.WARNING if level == _ERROR else logging.DEBUG
        if text and native.isEnabledFor(at):
            line = text.decode("utf-8", errors="replace").rstrip()
            if line.strip(" ."):  # (progress dots come one by one)
                native.log(at, "%s", loggable(line))  # (it names the weights' file)
    except Exception:  # (see above)
        return


_ONCE: Final = threading.Lock()
"""Two first loads at once (the vocabulary, the model) set the callback once: each setting
its own, the one not kept here would be freed while llama.cpp still called it."""


def quiet_llama_cpp() -> object:
    """Route llama.cpp's messages to `NATIVE_LOGGER` and stop llama-cpp-python silencing the
    process's output (see the module's text). Needs llama_cpp installed; the first call
    does it, later calls return the same callback (kept: llama.cpp holds a pointer to it)."""
    with _ONCE:
        return _quieted()


@functools.cache
def _quieted() -> object:
    import llama_cpp
    import llama_cpp._internals as internals
    import llama_cpp.llama as llama_module
    import llama_cpp.llama_chat_format as chat_format

    callback = llama_cpp.llama_log_callback(_log_native)
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))
    for module in (llama_module, internals, chat_format):
        _leave_output_alone(module)
    return callback


def _leave_output_alone(module: types.ModuleType) -> None:
    if hasattr(module, _SILENCER):
        setattr(module, _SILENCER, _OutputLeftAlone)
