"""Names a package exports but loads only on first use (PEP 562), for `gui_agent` and
`backends.api`: importing one light module of such a package (the API client, say) runs the
package's `__init__` too, and must not load the interpreter, the store or FastAPI with it.

A package keeps a table of its lazy names (name → the module that defines it), imports them
under TYPE_CHECKING for type checkers, and binds `__getattr__` and `__dir__` made here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["listing", "loader"]


def loader(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The package's module `__getattr__`: a name of `table` from its module, then bound in
    the package's `namespace` as an eager import would have (the next lookup is direct)."""

    def load(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return load


def listing(namespace: dict[str, Any], exported: Iterable[str]) -> Callable[[], list[str]]:
    """The package's module `__dir__`: what it has bound, and every name it exports."""
    names = tuple(exported)

    def names_of() -> list[str]:
        return sorted({*namespace, *names})

    return names_of
