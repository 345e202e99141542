"""`check_model` against real servers (working, wanting another key, stopped, unfindable)
and `ModelHealth`'s breaker, told of real calls of the port."""

from __future__ import annotations

import pytest

from metnos.ground.errors import LLMError
from metnos.ground.settings import Settings
from metnos.mechanisms.llm.health import ModelHealth, check_model
from metnos.mechanisms.llm.port import LLMPort
from metnos.testing import ScriptedLLM
from tests.llm.conftest import llm_settings


def settings_of(**llm: object) -> Settings:
    values: dict[str, object] = {"model": "openai/scripted", "timeout_s": 5, **llm}
    return Settings(llm=values)


async def test_nothing_configured_is_the_embedded_planner() -> None:
    check = await check_model(Settings())
    assert check.state == "embedded" and check.fix("en") is None
    assert "built-in planner" in check.line("en") and "pianificatore" in check.line("it")


async def test_a_working_server_is_ok_without_a_completion() -> None:
    with ScriptedLLM(api_key="sk-right") as server:
        check = await check_model(settings_of(api_base=server.api_base, api_key="sk-right"))
        assert check.state == "ok" and check.key is None and check.fix("en") is None
        assert server.requests == []  # GET /models was enough: no completion was asked


@pytest.mark.parametrize("key", ["sk-wrong", None])
async def test_a_wrong_or_missing_key_is_misconfigured_with_its_fix(key: str | None) -> None:
    with ScriptedLLM(api_key="sk-right") as server:
        check = await check_model(settings_of(api_base=server.api_base, api_key=key))
    assert (check.state, check.setting) == ("misconfigured", "[llm] api_key")
    assert "API" in check.line("en") and "[llm] api_key" in (check.fix("it") or "")


async def test_a_stopped_server_is_unreachable(stopped_base: str) -> None:
    check = await check_model(settings_of(api_base=stopped_base, api_key="sk-test"))
    assert (check.state, check.setting) == ("unreachable", None)
    assert stopped_base in check.line("en") and stopped_base in (check.fix("en") or "")


@pytest.mark.parametrize(("address", "words"), [
    ("http://model-server.invalid:8080/v1", "cannot be found"),
    ("model-server:8080/v1", "not a web address"),
])
async def test_a_bad_address_is_misconfigured(address: str, words: str) -> None:
    check = await check_model(settings_of(api_base=address, api_key="sk-test"))
    assert (check.state, check.setting) == ("misconfigured", "[llm] api_base")
    assert words in check.line("en")


async def test_a_server_without_the_models_route_gets_a_one_token_completion() -> None:
    with ScriptedLLM() as server:
        server.lists_models = False
        server.enqueue_text("p")
        check = await check_model(settings_of(api_base=server.api_base, api_key="sk-test"))
        assert check.state == "ok"
        [asked] = server.requests
        assert asked["max_tokens"] == 1


def state(health: ModelHealth) -> str:
    return health.state  # read afresh each time (mypy would narrow `health.state`)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_breaker_skips_a_dead_model_for_a_doubling_cool_down() -> None:
    clock = Clock()
    with ScriptedLLM() as server:
        settings = settings_of(api_base=server.api_base, api_key="sk-test")
        health = ModelHealth(settings, clock=clock)
        port = LLMPort(llm_settings(server, max_attempts=1))
        port.observe(health.observe)
        assert state(health) == "unknown" and health.allows()
        for cool in (30, 60, 120, 240, 300, 300):  # the empty queue answers 500
            with pytest.raises(LLMError):
                await port.complete([{"role": "user", "content": "hi"}])
            assert state(health) == "unreachable" and not health.allows()
            clock.now += cool - 1
            assert not health.allows()
            clock.now += 1
            assert health.allows()  # the cool-down is over: the next turn tries again
        server.enqueue_text("back")
        await port.complete([{"role": "user", "content": "hi"}])
        assert state(health) == "ok" and health.allows()
        with pytest.raises(LLMError):  # after a success the cool-down starts again at 30 s
            await port.complete([{"role": "user", "content": "hi"}])
        clock.now += 30
        assert health.allows()


async def test_a_configuration_error_keeps_turns_off_the_model_until_a_recheck() -> None:
    clock = Clock()
    with ScriptedLLM(api_key="sk-right") as server:
        settings = settings_of(api_base=server.api_base, api_key="sk-wrong")
        health = ModelHealth(settings, clock=clock, recheck_s=180)
        port = LLMPort(llm_settings(server, api_key="sk-wrong"))
        port.observe(health.observe)
        with pytest.raises(LLMError):
            await port.complete([{"role": "user", "content": "hi"}])
    check = health.check
    assert (check.state, check.setting) == ("misconfigured", "[llm] api_key")
    assert not health.allows()
    clock.now += 179
    assert not health.allows()
    clock.now += 1
    assert health.allows()


def test_an_address_that_cannot_work_is_misconfigured_from_the_start() -> None:
    health = ModelHealth(settings_of(api_base="localhost:11434"))
    assert state(health) == "misconfigured" and not health.allows()
    assert ModelHealth(Settings()).state == "embedded"


async def test_a_gated_port_asks_no_model_while_the_breaker_is_open() -> None:
    """Whoever calls (a turn, the Tutor's composition, a history fold), a port gated by an
    open breaker fails at once without a request; once the cool-down is over it asks again."""
    clock = Clock()
    with ScriptedLLM() as server:
        health = ModelHealth(settings_of(api_base=server.api_base, api_key="sk-test"),
                             clock=clock)
        port = LLMPort(llm_settings(server, max_attempts=1))
        port.observe(health.observe)
        port.gate(health.allows)
        with pytest.raises(LLMError):  # the empty queue answers 500: the breaker opens
            await port.complete([{"role": "user", "content": "hi"}])
        asked = len(server.requests)
        with pytest.raises(LLMError) as info:
            await port.complete([{"role": "user", "content": "again"}])
        assert info.value.key == "ERR_LLM_UNAVAILABLE" and len(server.requests) == asked
        clock.now += 30
        server.enqueue_text("back")
        assert (await port.complete([{"role": "user", "content": "now?"}])).text == "back"
        assert len(server.requests) == asked + 1 and state(health) == "ok"
