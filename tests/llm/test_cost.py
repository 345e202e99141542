"""Cost figures: configured per-token prices for models litellm does not price."""

from __future__ import annotations

import pytest

from metnos.mechanisms.llm.planner import plan_with_llm
from metnos.mechanisms.llm.port import LLMPort
from metnos.testing import ScriptedLLM
from tests.llm.conftest import llm_settings
from tests.llm.tools_fixture import tools_en

HELLO = [{"role": "user", "content": "hello there"}]


def _port(server: ScriptedLLM, **prices: float) -> LLMPort:
    return LLMPort(llm_settings(server, **prices), wait_initial_s=0.01, wait_max_s=0.05)


async def test_configured_prices_give_the_cost(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_text("Hi!")
    reply = await _port(scripted_llm, input_cost_per_token=1e-6,
                        output_cost_per_token=3e-6).complete(HELLO)
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0  # the server sends usage
    expected = reply.prompt_tokens * 1e-6 + reply.completion_tokens * 3e-6
    assert reply.cost_usd == pytest.approx(expected) and reply.cost_usd > 0


async def test_one_price_alone_counts_only_its_side(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_text("Hi!")
    reply = await _port(scripted_llm, output_cost_per_token=0.01).complete(HELLO)
    assert reply.cost_usd == pytest.approx(reply.completion_tokens * 0.01)


async def test_unpriced_model_without_prices_costs_zero(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_text("Hi!")
    reply = await _port(scripted_llm).complete(HELLO)
    assert reply.cost_usd == 0.0 and reply.prompt_tokens > 0


async def test_plan_carries_the_cost(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_tool_call("fs_read", {"path": "a.md"})
    port = _port(scripted_llm, input_cost_per_token=2e-6, output_cost_per_token=2e-6)
    plan = await plan_with_llm(port, "read a.md", "en", tools_en())
    assert plan.cost_usd > 0 and len(plan.steps) == 1
