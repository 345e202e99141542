"""Fixtures for the LLM tests: one scripted server per module, reset around each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from metnos.ground.settings import LLMSettings
from metnos.mechanisms.llm.port import LLMPort
from metnos.testing import ScriptedLLM


@pytest.fixture(scope="module")
def _server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def scripted_llm(_server: ScriptedLLM) -> Iterator[ScriptedLLM]:
    _server.reset()
    yield _server
    _server.reset()


def llm_settings(server: ScriptedLLM, **overrides: object) -> LLMSettings:
    values: dict[str, object] = {
        "model": "openai/scripted",
        "api_base": server.api_base,
        "api_key": "sk-test",
        "timeout_s": 5.0,
        "max_attempts": 3,
        **overrides,
    }
    return LLMSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
def port(scripted_llm: ScriptedLLM) -> LLMPort:
    """A port on the scripted server with millisecond backoff (tests stay fast)."""
    return LLMPort(llm_settings(scripted_llm), wait_initial_s=0.01, wait_max_s=0.05)
