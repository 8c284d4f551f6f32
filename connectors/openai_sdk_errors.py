"""Errors from OpenAI-compatible servers as our `ModelError` tree.

`map_errors` is the connector boundary: the one context manager that translates the
`openai` SDK's exceptions (and transport errors, `connectors.base.map_transport_errors`)
into `ModelError`s, each the error of the HTTP status it stands for, with the server's
message (`connectors.resilience.error_for_status`). An error object a server sent, status
200, instead of the stream it was asked for is `body_error`. An answer whose words say the
path is not served, whatever its status, names the base URL to check (`BASE_URL_HINT`,
`connectors.stream_bodies.wrong_endpoint`). What a refusal's words ask the next request to
leave out is `connectors.openai_errors`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
import openai

from connectors.base import (
    answer_mismatch,
    connection_failed,
    map_transport_errors,
    timeout_error,
)
from connectors.openai_client import KEY_ENV
from connectors.openai_errors import error_codes, error_message, error_status
from connectors.resilience import error_for_status, parse_retry_after, shorten
from connectors.stream_bodies import html_page, wrong_endpoint, wrong_endpoint_status
from gui_agent.exceptions import (
    ModelError,
    ModelRateLimited,
    ModelServerError,
)

__all__ = ["BASE_URL_HINT", "body_error", "map_errors"]

BASE_URL_HINT = "check the base URL (for OpenAI-compatible servers it usually ends in /v1)"


def _server_detail(error: openai.APIError) -> str:
    """What the server said: its error message, or its body (a web page by its title)."""
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(body.get("detail"), str):  # FastAPI's own answers (vLLM: "Not Found")
            return str(body["detail"])
        return json.dumps(body)[:500]
    if isinstance(body, str):
        response = getattr(error, "response", None)
        headers = response.headers if isinstance(response, httpx2.Response) else {}
        return html_page(body, headers) or body
    return error.message


@contextmanager
def map_errors(
    provider: str,
    *,
    model: str = "",
    hint: str = "",
    key_env: str = KEY_ENV,
    timeout_s: float | None = None,
    timeout_setting: str = "",
) -> Iterator[None]:
    """Translate `openai` SDK (and transport) exceptions into our `ModelError` tree;
    `key_env` is the variable a refused key is set in, `timeout_s` how long the server may
    stay silent."""
    try:
        with map_transport_errors(provider, timeout_s=timeout_s, timeout_setting=timeout_setting):
            yield
    except ModelError:
        raise
    except openai.APIStatusError as error:
        detail = _server_detail(error)
        wrong = wrong_endpoint_status(
            detail, error.body, error.response, provider=provider, hint=BASE_URL_HINT
        )
        if wrong is not None:
            raise wrong from error
        raise error_for_status(
            error.status_code,
            detail,
            provider=provider,
            model=model,
            key_env=key_env,
            retry_after=parse_retry_after(error.response.headers),
            hint=hint,
            codes=(error.code, error.type),
        ) from error
    except openai.APITimeoutError as error:
        raise timeout_error(provider, timeout_s, timeout_setting) from error
    except openai.APIConnectionError as error:
        raise connection_failed(provider, error) from error
    except openai.APIResponseValidationError as error:
        raise answer_mismatch(provider, error.message) from error
    except openai.APIError as error:
        # An error object inside an otherwise successful stream: the error of the HTTP
        # status it names (`error_status`: a 400 is not retried, a 401 names the key).
        detail = _server_detail(error)
        if wrong := wrong_endpoint(
            detail, error.request.url, provider=provider, hint=BASE_URL_HINT
        ):
            raise wrong from error
        status = error_status(error.body)
        if status is not None:  # what it stands for, as when it comes under another label
            raise error_for_status(
                status,
                detail,
                provider=provider,
                model=model,
                key_env=key_env,
                hint=hint,
                codes=(error.code, error.type),
            ) from error
        kind = f"{getattr(error, 'type', '')} {getattr(error, 'code', '')}".lower()
        if "rate" in kind:
            raise ModelRateLimited(
                f"{provider}: rate limited mid-stream: {shorten(detail)}", provider=provider
            ) from error
        raise ModelServerError(
            f"{provider}: the server reported an error mid-stream: {shorten(detail)}",
            provider=provider,
        ) from error
    except openai.OpenAIError as error:
        raise ModelError(f"{provider}: {error}", provider=provider) from error


def body_error(
    error: object,
    *,
    provider: str,
    model: str,
    retry_after: float | None = None,
    hint: str = "",
    key_env: str = KEY_ENV,
) -> ModelError:
    """The ModelError for an error object a server sent, status 200, instead of a stream:
    the error of the HTTP status it stands for (`error_status`), else a server error."""
    detail = error_message(error)
    status = error_status(error)
    if status is None:
        return ModelServerError(
            f"{provider}: the server answered with an error instead of a stream: {shorten(detail)}",
            provider=provider,
            retry_after=retry_after,
        )
    return error_for_status(
        status,
        detail,
        provider=provider,
        model=model,
        key_env=key_env,
        retry_after=retry_after,
        hint=hint,
        codes=error_codes(error),
    )
