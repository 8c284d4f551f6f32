"""Importing Gradio without its stub writer, which adds about 1.5 s to every server start.

Gradio rewrites type stubs each time it is imported: every component class it defines
(about eighty) reads its own source file, parses it, renders a Jinja template from it and
compares the result with (or writes) a `.pyi` file next to it in site-packages. That is
`gradio.component_meta.create_or_modify_pyi`, called from the components' metaclass; no
setting turns it off. The stubs serve editors of Gradio's own code; nothing reads them at
run time. It writes into site-packages when it can, and on a 2-core machine `gui-agent serve`
answered after 5.2-5.5 s with it and 3.6-4.0 s without it.

`import_gradio()` imports Gradio with that one function replaced by one that does nothing.
A finder put first on `sys.meta_path` for the length of the import wraps the loader of
`gradio.component_meta`, so the replacement is in place before any component class is
defined; the finder is removed once the import ends. If Gradio was already imported, or a
later Gradio moves or drops the function, Gradio is imported as it is: slower, never broken.

A component class of ours (typed_slider.py, image_upload.py) runs the stub writer too when
Gradio was imported before the page (a test, a script): it is defined `with
no_stub_written()`, so no `.pyi` lands next to its module (mypy and ruff would read that
stub instead of the module).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

__all__ = ["STUB_MODULE", "STUB_WRITER", "import_gradio", "no_stub_written"]

logger = logging.getLogger(__name__)

STUB_MODULE = "gradio.component_meta"
STUB_WRITER = "create_or_modify_pyi"


def _write_no_stub(*args: Any, **kwargs: Any) -> None:
    """Stands in for Gradio's stub writer: writes nothing."""


class _NoStubLoader(importlib.abc.Loader):
    """Gradio's own loader for `gradio.component_meta`, which then swaps the stub writer."""

    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        if callable(getattr(module, STUB_WRITER, None)):
            setattr(module, STUB_WRITER, _write_no_stub)
        else:
            logger.debug("%s has no %s; Gradio imports as it is", STUB_MODULE, STUB_WRITER)

    def __getattr__(self, name: str) -> Any:
        # get_source, get_filename, is_package...: what tracebacks and inspect ask a loader
        return getattr(self._inner, name)


class _NoStubFinder(importlib.abc.MetaPathFinder):
    """Finds `gradio.component_meta` where Python would, with the loader wrapped."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != STUB_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _NoStubLoader(spec.loader)
        return spec


def import_gradio() -> ModuleType:
    """The `gradio` module, imported without its stub writer if this imports it first."""
    loaded = sys.modules.get("gradio")
    if loaded is not None:
        return loaded
    finder = _NoStubFinder()
    sys.meta_path.insert(0, finder)
    try:
        return importlib.import_module("gradio")
    finally:
        sys.meta_path.remove(finder)


@contextmanager
def no_stub_written() -> Iterator[None]:
    """Gradio's stub writer off while a component class is defined (module docstring); the
    writer Gradio had is back afterwards. Does nothing when Gradio has no such writer."""
    meta = importlib.import_module(STUB_MODULE)
    writer = getattr(meta, STUB_WRITER, None)
    if writer is None:  # (a later Gradio without it: nothing to turn off)
        yield
        return
    setattr(meta, STUB_WRITER, _write_no_stub)
    try:
        yield
    finally:
        setattr(meta, STUB_WRITER, writer)
