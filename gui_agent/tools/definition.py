"""What a tool is: a Python function plus the JSON schema a model is shown, and `@tool`.

`@tool` reads the function's signature, type hints and docstring, builds a pydantic model of
its parameters (used both to derive the JSON schema and to validate a model's arguments) and
returns a frozen `Tool`. A parameter annotated `ToolContext` (or `ToolContext | None`) is
filled in by the executor and is never shown to the model; ToolContext anywhere else in an
annotation is refused.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace, UnionType
from typing import (
    Annotated,
    Any,
    NamedTuple,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

from pydantic import BaseModel, ConfigDict, Field, create_model

from gui_agent.exceptions import ToolDefinitionError
from gui_agent.log_text import loggable_traceback
from gui_agent.tools._docstrings import parse_docstring
from schema import ImagePart, MessageType, ToolCall, ToolSchema

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_EMPTY = inspect.Parameter.empty


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What the executor tells a tool about the call it serves."""

    session_id: str
    run_id: str
    call_id: str
    workdir: Path
    partial: list[str] = field(default_factory=list, compare=False, repr=False)
    """Where a tool that a Stop ends may leave what it had made by then, as text (what its
    code had printed): the call's answer says it, to the person and the model."""
    output_sink: Callable[[str, str], None] | None = field(default=None, compare=False, repr=False)
    """Where `show` sends text, with the call's id: set by the interpreter running the call."""

    def show(self, text: str) -> None:
        """Show `text` to the people watching this call, as what it has printed so far
        (run_python's output as the code prints it). They see it until the call returns;
        its result is what stays, and what the model reads. Call it as often as you like:
        the session sends it on a few times a second. A sync tool may call it from its
        worker thread too. Nothing happens when nobody watches (a call run outside an
        interpreter)."""
        if self.output_sink is not None:
            self.output_sink(self.call_id, text)


@dataclass(slots=True)
class ToolOutput:
    """A tool's rich result. Return a plain `str` when text is all there is.

    `is_error` marks an outcome the model should treat as a failure (for example a program
    that exited non-zero) while still showing `content` as the tool's own output.
    """

    content: str
    message_type: MessageType = MessageType.FUNCTION
    images: tuple[ImagePart, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False


class ApprovalView(NamedTuple):
    """What a person is shown before a destructive tool runs."""

    summary: str
    detail: str
    language: str | None = None


@dataclass(frozen=True, slots=True)
class _Param:
    field_name: str  # the pydantic field; parameters are aliased so any name is safe
    name: str
    positional_only: bool


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """A function a model may call. Build one with `@tool`, not by hand."""

    name: str
    description: str
    function: Callable[..., Any]
    parameters: dict[str, Any]
    destructive: bool = False
    timeout_s: float | None = 60.0
    max_output_chars: int = 20_000
    approval_view: Callable[[dict[str, Any]], ApprovalView] | None = None
    is_async: bool = False
    args_model: type[BaseModel] | None = field(default=None, repr=False)
    context_param: str | None = None
    params: tuple[_Param, ...] = field(default=(), repr=False)

    @property
    def schema(self) -> ToolSchema:
        """What a model is told about this tool."""
        return ToolSchema(
            name=self.name,
            description=self.description,
            parameters=copy.deepcopy(self.parameters),
            destructive=self.destructive,
        )

    def bind(
        self, arguments: Mapping[str, Any], ctx: ToolContext
    ) -> tuple[list[Any], dict[str, Any]]:
        """Validate a model's arguments; the positional and keyword arguments for `function`.

        Raises `pydantic.ValidationError` naming each bad field.
        """
        values: BaseModel | None = None
        if self.args_model is not None:
            values = self.args_model.model_validate(dict(arguments))
        return self._call_args(values, ctx)

    def bind_json(self, raw: str, ctx: ToolContext) -> tuple[list[Any], dict[str, Any]]:
        """`bind` for the raw JSON text a model wrote, parsed and validated in one pass.

        Raises `pydantic.ValidationError` for bad JSON as well as bad fields; `execute_tool`
        then takes the slower path that explains which it was.
        """
        values: BaseModel | None = None
        if self.args_model is not None:
            values = self.args_model.model_validate_json(raw)
        elif raw.strip() not in ("", "{}"):
            raise ValueError("arguments given to a tool that takes none")
        return self._call_args(values, ctx)

    def _call_args(
        self, values: BaseModel | None, ctx: ToolContext
    ) -> tuple[list[Any], dict[str, Any]]:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for param in self.params:
            value = ctx if param.name == self.context_param else getattr(values, param.field_name)
            if param.positional_only:
                args.append(value)
            else:
                kwargs[param.name] = value
        return args, kwargs


def _without_extras(annotation: Any) -> Any:
    """`annotation` without `Annotated[...]` metadata."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _mentions_context(annotation: Any) -> bool:
    annotation = _without_extras(annotation)
    return annotation is ToolContext or any(_mentions_context(a) for a in get_args(annotation))


def _is_context(tool_name: str, name: str, annotation: Any) -> bool:
    """Whether parameter `name` is the one the executor fills in: annotated `ToolContext`,
    also as `ToolContext | None` (a default lets the function be called without one) or
    inside `Annotated`. Anywhere else in an annotation ToolContext is refused: the model
    would be shown it as a parameter and could fill in its own working folder."""
    annotation = _without_extras(annotation)
    if annotation is ToolContext:
        return True
    if not _mentions_context(annotation):
        return False
    if get_origin(annotation) in (Union, UnionType):
        others = [a for a in get_args(annotation) if _without_extras(a) is not ToolContext]
        if others == [type(None)]:
            return True
    raise ToolDefinitionError(
        f"{tool_name}: parameter {name!r} mixes ToolContext into another type; annotate it "
        "`ToolContext` (or `ToolContext | None`): it is filled in by the executor, never by "
        "the model"
    )


def _underlying(fn: Callable[..., Any]) -> Any:
    """The plain function behind decorators, partials and callable objects."""
    target: Any = inspect.unwrap(fn)
    while isinstance(target, functools.partial):
        target = inspect.unwrap(target.func)
    if not hasattr(target, "__globals__") and callable(target):  # a callable object
        target = type(target).__call__
    return target


def _parameter_hints(fn: Callable[..., Any], signature: inspect.Signature) -> dict[str, Any]:
    """Resolved parameter annotations; the return annotation is ignored (it may be local)."""
    target = _underlying(fn)
    annotations = {
        param.name: param.annotation
        for param in signature.parameters.values()
        if param.annotation is not _EMPTY
    }
    holder = SimpleNamespace(__annotations__=annotations)
    return get_type_hints(holder, getattr(target, "__globals__", {}), include_extras=True)


def _build(
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    destructive: bool,
    timeout_s: float | None,
    max_output_chars: int,
    view: Callable[[dict[str, Any]], ApprovalView] | None,
) -> Tool:
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name or tool_name == "<lambda>":
        raise ToolDefinitionError(f"{fn!r} has no usable name; pass @tool(name=...)")
    if not _NAME.match(tool_name):
        raise ToolDefinitionError(
            f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'"
        )
    if max_output_chars < 1:
        raise ToolDefinitionError(f"{tool_name}: max_output_chars must be at least 1")
    if timeout_s is not None and timeout_s <= 0:
        raise ToolDefinitionError(f"{tool_name}: timeout_s must be positive or None")
    try:
        signature = inspect.signature(fn)
        hints = _parameter_hints(fn, signature)
    except (NameError, TypeError, ValueError) as error:
        raise ToolDefinitionError(f"{tool_name}: cannot read the signature: {error}") from error

    own_doc = None if isinstance(fn, functools.partial) else inspect.getdoc(fn)
    doc = parse_docstring(own_doc or inspect.getdoc(_underlying(fn)))
    fields: dict[str, Any] = {}
    params: list[_Param] = []
    context_param: str | None = None
    for index, param in enumerate(signature.parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{tool_name}: *args/**kwargs ({param.name!r}) cannot be described to a "
                "model; declare each parameter"
            )
        annotation = hints.get(param.name, _EMPTY)
        if annotation is _EMPTY:
            method = " (a method? decorate the bound method: tool(instance.method))"
            raise ToolDefinitionError(
                f"{tool_name}: parameter {param.name!r} needs a type annotation"
                + (method if index == 0 and param.name in ("self", "cls") else "")
            )
        positional_only = param.kind is param.POSITIONAL_ONLY
        if _is_context(tool_name, param.name, annotation):
            if context_param is not None:
                raise ToolDefinitionError(f"{tool_name}: more than one ToolContext parameter")
            context_param = param.name
            params.append(_Param("", param.name, positional_only))
            continue
        field_name = f"p{index}"
        default = ... if param.default is _EMPTY else param.default
        text = doc.params.get(param.name)
        info = (
            Field(default, alias=param.name)
            if text is None  # keep a description given in Annotated[..., Field(...)]
            else Field(default, alias=param.name, description=text)
        )
        fields[field_name] = (annotation, info)
        params.append(_Param(field_name, param.name, positional_only))

    config = ConfigDict(extra="forbid")
    try:
        model: type[BaseModel] = create_model(f"{tool_name}_arguments", __config__=config, **fields)
        parameters = model.model_json_schema()
    except Exception as error:  # pydantic raises several kinds for unsupported types
        raise ToolDefinitionError(
            f"{tool_name}: parameters cannot be turned into a JSON schema: {error}"
        ) from error
    parameters.pop("title", None)
    for prop in parameters.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    parameters.setdefault("properties", {})

    return Tool(
        name=tool_name,
        description=doc.description if description is None else description,
        function=fn,
        parameters=parameters,
        destructive=destructive,
        timeout_s=timeout_s,
        max_output_chars=max_output_chars,
        approval_view=view,
        is_async=inspect.iscoroutinefunction(fn),
        args_model=model,
        context_param=context_param,
        params=tuple(params),
    )


@overload
def tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    destructive: bool = False,
    timeout_s: float | None = 60.0,
    max_output_chars: int = 20_000,
    approval_view: Callable[[dict[str, Any]], ApprovalView] | None = None,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    destructive: bool = False,
    timeout_s: float | None = 60.0,
    max_output_chars: int = 20_000,
    approval_view: Callable[[dict[str, Any]], ApprovalView] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    destructive: bool = False,
    timeout_s: float | None = 60.0,
    max_output_chars: int = 20_000,
    approval_view: Callable[[dict[str, Any]], ApprovalView] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a `Tool`; use as `@tool` or `@tool(destructive=True, ...)`.

    Args:
        fn: The function, sync or async. Every parameter needs a type annotation; a parameter
            annotated `ToolContext` (or `ToolContext | None`) is injected by the executor and
            hidden from the model.
        name: The name the model calls; defaults to the function's name.
        description: What the model is told; defaults to the docstring's description.
        destructive: The tool changes things (runs code, writes files); it needs approval
            unless the person allowed it.
        timeout_s: Wall-clock limit per call, or None for none.
        max_output_chars: Longer output is cut, with a visible marker.
        approval_view: Builds what a person sees before approving, from the parsed arguments.

    Raises:
        ToolDefinitionError: the function cannot be described to a model.
    """

    def decorate(function: Callable[..., Any]) -> Tool:
        return _build(
            function,
            name=name,
            description=description,
            destructive=destructive,
            timeout_s=timeout_s,
            max_output_chars=max_output_chars,
            view=approval_view,
        )

    if fn is None:
        return decorate
    return decorate(fn)


def approval_view(tool: Tool, call: ToolCall) -> ApprovalView:
    """What to show a person before `call` runs. Never raises, even on malformed arguments."""
    try:
        arguments = call.parsed_arguments()
    except ValueError:
        return ApprovalView(
            summary=f"Call {tool.name} (arguments are not a valid JSON object)",
            detail=call.arguments,
        )
    if tool.approval_view is not None:
        try:
            view: object = tool.approval_view(arguments)
            if isinstance(view, str):  # just the detail
                view = ApprovalView(summary=f"Call {tool.name}", detail=view)
            elif isinstance(view, tuple) and not isinstance(view, ApprovalView):
                view = ApprovalView(*view)  # (summary, detail[, language]) as a plain tuple
            if (
                isinstance(view, ApprovalView)
                and isinstance(view.summary, str)
                and isinstance(view.detail, str)
                and isinstance(view.language, str | None)
            ):
                return view
            raise TypeError(f"it returned {view!r:.80}, not an ApprovalView of texts")
        except Exception as error:  # a bug in the view; the arguments are the model's
            logger.warning(
                "approval view of %s failed; showing raw arguments: %s",
                tool.name,
                loggable_traceback(error),
            )
    return ApprovalView(
        summary=f"Call {tool.name}",
        detail=json.dumps(arguments, indent=2, ensure_ascii=False, default=str),
        language="json",
    )
