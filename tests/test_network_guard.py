"""The suite cannot reach a vendor: non-loopback connections fail loudly."""

from __future__ import annotations

import socket

import httpx
import pytest


def test_non_loopback_connections_fail_loudly() -> None:
    with pytest.raises(Exception, match="only loopback is allowed"):
        socket.create_connection(("93.184.215.14", 443), timeout=1)


async def test_a_real_sdk_aimed_at_a_vendor_fails_loudly() -> None:
    from openai import APIConnectionError, AsyncOpenAI

    client = AsyncOpenAI(api_key="sk-test", base_url="https://198.51.100.7/v1", max_retries=0)
    with pytest.raises(APIConnectionError) as caught:
        await client.models.list()
    chain = []
    error: BaseException | None = caught.value
    while error is not None:
        chain.append(str(error))
        error = error.__cause__ or error.__context__
    assert any("only loopback is allowed" in text for text in chain)
    await client.close()


def test_loopback_still_works() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    server.close()
    assert httpx.URL(f"http://127.0.0.1:{port}").port == port
