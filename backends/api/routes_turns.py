"""A conversation: messages sent, the running turn stopped, tool approvals answered, and
the last turn retried, edited or the whole conversation cleared.

    POST /api/sessions/{id}/messages  {text, images?, agent?}  -> 202 {message_id, queued}
    POST /api/sessions/{id}/stop                               -> {stopped}
    POST /api/sessions/{id}/approvals/{approval_id}  {decision, note?}
    POST /api/sessions/{id}/control   {action: retry|edit_last|clear, text?, images?, message_id?}

A retry, edit or clear while a turn runs, a second one while the first is in progress, or
a second answer to an approval, is 409 (see `conflicts`); the first one stands.
"""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import FastAPI, Request, Response

from backends.api.bodies import check_images, no_body, read_object, validate
from backends.api.conflicts import approval_closed, edit_in_progress, turn_running
from backends.api.context import ApiContext
from backends.api.errors import ApiError
from backends.api.openapi import errors
from backends.api.responses import (
    ApprovalAnswer,
    Cleared,
    MessageAccepted,
    StopAnswer,
    TurnStarted,
    send,
    success,
)
from backends.api.roles import with_role
from gui_agent.interpreter import Interpreter
from schema import ApprovalResponse, ChatRequest, ControlRequest, InterpreterState

SETTLE_TIMEOUT_S = 5.0


def add_turn_routes(app: FastAPI, api: ApiContext) -> None:
    bodies = api.bodies

    @app.post(
        "/api/sessions/{session_id}/messages",
        status_code=202,
        responses={
            **success(MessageAccepted, "The message was taken: it starts a turn, or waits", 202),
            **errors(400, 401, 404, 413, 415, 503),
        },
        openapi_extra=bodies.body(ChatRequest, from_path=["session_id"]),
    )
    async def send_message(request: Request, session_id: str) -> Response:
        interpreter = await api.session_of(request, session_id)
        raw = await read_object(request, api.max_body_bytes)
        sent = with_role(raw, interpreter.architectures)
        chat = validate(ChatRequest, sent, session_id=session_id)
        images = check_images(chat.images)
        message = await interpreter.send(chat.text, images=images, agent=chat.agent)
        # Queued is where it went, not whether a turn ran before: a turn may end while the
        # agent switch is saved, and a message sent during a retry or edit waits for it.
        queued = any(waiting is message for waiting in interpreter.session.inbox)
        return send(MessageAccepted(message_id=message.id, queued=queued), 202)

    @app.post(
        "/api/sessions/{session_id}/stop",
        responses={
            **success(StopAnswer, "The running turn (if any) ended, its reply kept"),
            **errors(400, 401, 404, 413, 415, 503),
        },
    )
    async def stop(request: Request, session_id: str) -> Response:
        interpreter = await api.session_of(request, session_id)
        await no_body(request)
        return send(StopAnswer(stopped=await interpreter.stop()))

    @app.post(
        "/api/sessions/{session_id}/approvals/{approval_id}",
        responses={
            **success(ApprovalAnswer, "The answer was taken; the turn goes on"),
            **errors(400, 401, 404, 409, 413, 415, 503),
        },
        openapi_extra=bodies.body(ApprovalResponse, from_path=["session_id", "approval_id"]),
    )
    async def approve(request: Request, session_id: str, approval_id: str) -> Response:
        interpreter = await api.session_of(request, session_id)
        answer = validate(
            ApprovalResponse,
            await read_object(request, api.max_body_bytes),
            session_id=session_id,
            approval_id=approval_id,
        )
        if not interpreter.approve(answer.approval_id, answer.decision, answer.note):
            raise approval_closed(interpreter, answer.approval_id)
        return send(ApprovalAnswer(approval_id=answer.approval_id, decision=answer.decision))

    @app.post(
        "/api/sessions/{session_id}/control",
        responses={
            **success(Cleared, "clear: the conversation was cleared"),
            **success(TurnStarted, "retry or edit_last: the new turn started", 202),
            **errors(400, 401, 404, 409, 413, 415, 503),
        },
        openapi_extra=bodies.body(ControlRequest, from_path=["session_id"]),
    )
    async def control(request: Request, session_id: str) -> Response:
        interpreter = await api.session_of(request, session_id)
        command = validate(
            ControlRequest, await read_object(request, api.max_body_bytes), session_id=session_id
        )
        if command.action == "clear" and command.message_id is not None:
            raise ApiError(400, "invalid_request", "'message_id' goes with retry and edit_last")
        if command.action != "edit_last" and (command.text is not None or command.images):
            raise ApiError(
                400,
                "invalid_request",
                f"'text' and 'images' go with edit_last, not {command.action}",
            )
        images = check_images(command.images)
        if command.action == "edit_last" and command.text is None and not images:
            raise ApiError(400, "invalid_request", "edit_last needs the new text in 'text'")
        lock = api.edit_lock(interpreter)
        if lock.locked():
            raise edit_in_progress()
        async with lock:
            await _settle(interpreter)
            if interpreter.busy:
                raise turn_running(request.url.path.removesuffix("/control"))
            if command.action == "clear":
                await interpreter.clear()
                return send(Cleared())
            meant = command.message_id
            if command.action == "retry":
                message = await interpreter.retry(message_id=meant)
            else:
                message = await interpreter.edit_last(
                    command.text or "", images=images, message_id=meant
                )
        return send(TurnStarted(action=command.action, message_id=message.id), 202)


async def _settle(interpreter: Interpreter) -> None:
    """Let a turn that has already ended (the client saw STOP) finish saving.

    The interpreter publishes STOP before its run task returns, so a retry sent the moment
    a client sees STOP would otherwise be refused as "a turn is running".
    """
    finishing = interpreter.state is InterpreterState.STOP and not interpreter.autochat_active
    if interpreter.busy and finishing:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_TIMEOUT_S):
                await interpreter.wait_idle()
