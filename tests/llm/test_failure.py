"""A failed model call, classified against real failing servers (real litellm, real HTTP):
configuration errors name their setting and are never retried; passing failures are."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from metnos.ground import i18n
from metnos.ground.errors import LLMError
from metnos.ground.settings import LLMSettings
from metnos.mechanisms.llm.port import LLMPort
from metnos.testing import ScriptedLLM
from tests.llm.conftest import llm_settings

HELLO = [{"role": "user", "content": "ciao"}]


def fast(settings: LLMSettings) -> LLMPort:
    return LLMPort(settings, wait_initial_s=0.01, wait_max_s=0.02)


async def failure_of(port: LLMPort) -> LLMError:
    with pytest.raises(LLMError) as info:
        await port.complete(HELLO)
    return info.value


@pytest.mark.parametrize(("status", "key", "setting", "named"), [
    (401, "ERR_LLM_AUTH_FAILED", "[llm] api_key", "METNOS_LLM_API_KEY"),
    (403, "ERR_LLM_AUTH_FAILED", "[llm] api_key", "METNOS_LLM_API_KEY"),
    (404, "ERR_LLM_MODEL_NOT_FOUND", "[llm] model", "METNOS_LLM_MODEL"),
])
async def test_a_configuration_error_names_its_setting_and_is_tried_once(
        scripted_llm: ScriptedLLM, status: int, key: str, setting: str, named: str) -> None:
    for _ in range(3):
        scripted_llm.enqueue_error(status, "no")
    error = await failure_of(fast(llm_settings(scripted_llm)))
    assert (error.key, error.vars["setting"]) == (key, setting)
    assert len(scripted_llm.requests) == 1  # never retried: it does not heal by itself
    assert named in i18n.message(error, "en") and named in i18n.message(error, "it")


async def test_a_server_that_wants_a_key_answers_a_wrong_one_with_401() -> None:
    with ScriptedLLM(api_key="sk-right") as server:
        server.enqueue_text("hello")
        wrong = await failure_of(fast(llm_settings(server, api_key="sk-wrong")))
        assert (wrong.key, wrong.vars["setting"]) == ("ERR_LLM_AUTH_FAILED", "[llm] api_key")
        assert server.requests == []  # refused at the door
        reply = await fast(llm_settings(server, api_key="sk-right")).complete(HELLO)
        assert reply.text == "hello"


async def test_no_key_at_all_is_a_missing_key_not_a_busy_server(
        scripted_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm reports a missing key as InternalServerError 500: the port reads the cause."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    error = await failure_of(fast(llm_settings(scripted_llm, api_key=None)))
    assert (error.key, error.vars["setting"]) == ("ERR_LLM_KEY_MISSING", "[llm] api_key")


async def test_a_closed_port_is_retried_then_unavailable(stopped_base: str) -> None:
    error = await failure_of(fast(LLMSettings(model="openai/scripted", api_base=stopped_base,
                                              api_key="sk-test", max_attempts=2)))
    assert error.key == "ERR_LLM_UNAVAILABLE" and "setting" not in error.vars


async def test_a_busy_server_is_retried_then_unavailable(scripted_llm: ScriptedLLM) -> None:
    for _ in range(3):
        scripted_llm.enqueue_error(503, "busy")
    error = await failure_of(fast(llm_settings(scripted_llm)))
    assert error.key == "ERR_LLM_UNAVAILABLE"
    assert len(scripted_llm.requests) == 3


async def test_an_address_that_cannot_be_found_is_a_configuration_error() -> None:
    settings = LLMSettings(model="openai/scripted", api_base="http://model-server.invalid:8080/v1",
                           api_key="sk-test", max_attempts=3, timeout_s=5)
    error = await failure_of(fast(settings))
    assert (error.key, error.vars["setting"]) == ("ERR_LLM_ADDRESS_UNKNOWN", "[llm] api_base")
    assert "model-server.invalid" in i18n.message(error, "en")


async def test_an_address_that_is_no_url_is_refused_before_any_request(
        scripted_llm: ScriptedLLM) -> None:
    address = scripted_llm.base_url.removeprefix("http://") + "/v1"  # the scheme forgotten
    error = await failure_of(fast(llm_settings(scripted_llm, api_base=address)))
    assert (error.key, error.vars["setting"]) == ("ERR_LLM_ADDRESS_INVALID", "[llm] api_base")
    assert scripted_llm.requests == []


async def test_every_outcome_is_told_to_the_observer(scripted_llm: ScriptedLLM) -> None:
    port = fast(llm_settings(scripted_llm))
    seen: list[str | None] = []
    port.observe(lambda outcome: seen.append(None if outcome is None else outcome.key))
    scripted_llm.enqueue_text("hi")
    scripted_llm.enqueue_error(401, "no")
    await port.complete(HELLO)
    await failure_of(port)
    assert seen == [None, "ERR_LLM_AUTH_FAILED"]


async def test_a_server_that_never_answers_is_waited_for_once() -> None:
    """A frozen server accepts the connection (the kernel's backlog) and never answers: the
    call waits its timeout once, never `max_attempts` times, and the turn falls back."""
    accepted: list[socket.socket] = []
    with socket.socket() as frozen:
        frozen.bind(("127.0.0.1", 0))
        frozen.listen(8)
        frozen.settimeout(0.2)
        done = threading.Event()

        def take() -> None:
            while not done.is_set():
                try:
                    accepted.append(frozen.accept()[0])
                except TimeoutError:
                    continue

        taker = threading.Thread(target=take, daemon=True)
        taker.start()
        base = f"http://127.0.0.1:{frozen.getsockname()[1]}/v1"
        settings = LLMSettings(model="openai/scripted", api_base=base, api_key="sk-test",
                               max_attempts=3, timeout_s=1.0)
        started = time.monotonic()
        error = await failure_of(fast(settings))
        took = time.monotonic() - started
        done.set()
        taker.join()
        for conn in accepted:
            conn.close()
    assert error.key == "ERR_LLM_UNAVAILABLE"
    assert len(accepted) == 1, f"{len(accepted)} connections: the timeout was tried again"
    assert took < 3 * 1.0, f"{took:.1f} s"


async def test_an_answer_with_nothing_in_it_is_no_answer(scripted_llm: ScriptedLLM) -> None:
    """A 200 that says nothing and asks for nothing (an empty completion, a broken proxy's
    stream) is a failure the caller falls back from, never tried again."""
    scripted_llm.enqueue_text("")
    scripted_llm.enqueue_text("")
    port = fast(llm_settings(scripted_llm))
    error = await failure_of(port)
    assert error.key == "ERR_LLM_EMPTY_REPLY" and len(scripted_llm.requests) == 1
    with pytest.raises(LLMError) as streamed:
        await port.complete(HELLO, on_delta=lambda piece: None)
    assert streamed.value.key == "ERR_LLM_EMPTY_REPLY"


async def test_a_cancelled_call_is_never_tried_again(scripted_llm: ScriptedLLM) -> None:
    """A turn cancelled while its model call waits (a stop's drain) ends there: the call is
    not retried behind it (a retried call kept a stopped gateway's loop alive)."""
    scripted_llm.respond_with(lambda body: (time.sleep(1.0), "late")[1])  # type: ignore[func-returns-value]
    call = asyncio.create_task(fast(llm_settings(scripted_llm)).complete(HELLO))
    for _ in range(200):  # until the request is at the server (litellm's import comes first)
        if scripted_llm.requests:
            break
        await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await asyncio.sleep(1.5)  # a retry would have reached the server by now
    assert len(scripted_llm.requests) == 1
