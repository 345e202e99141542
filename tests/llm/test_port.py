"""The LLM port against the scripted OpenAI-compatible server (real litellm, real HTTP)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from metnos.ground import i18n
from metnos.ground.errors import LLMError
from metnos.ground.settings import LLMSettings
from metnos.mechanisms.llm.port import LLMPort, LLMReply, configured
from metnos.testing import ScriptedLLM
from metnos.testing.llm_server import ToolCall
from tests.llm.conftest import llm_settings

HELLO = [{"role": "user", "content": "ciao"}]


async def test_text_reply(port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_text("Buongiorno!")
    reply = await port.complete(HELLO)
    assert reply.text == "Buongiorno!"
    assert reply.tool_calls == []
    assert reply.cost_usd == 0.0  # unknown model: no price, no crash
    assert scripted_llm.requests[0]["messages"] == HELLO
    assert scripted_llm.requests[0]["model"] == "scripted"


async def test_tool_call_reply(port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_tool_call("fs_read", {"path": "note.md"}, call_id="call_1")
    tool = {
        "type": "function",
        "function": {
            "name": "fs_read",
            "description": "d",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    reply = await port.complete(HELLO, tools=[tool])
    assert reply.text is None
    [call] = reply.tool_calls
    assert (call.id, call.name, json.loads(call.arguments_json)) == (
        "call_1",
        "fs_read",
        {"path": "note.md"},
    )
    assert scripted_llm.requests[0]["tools"] == [tool]


async def test_malformed_arguments_pass_through_raw(
    port: LLMPort, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.enqueue_tool_call("fs_read", '{"path": "note.md"')
    reply = await port.complete(HELLO)
    assert reply.tool_calls[0].arguments_json == '{"path": "note.md"'


async def test_transient_500_is_retried(port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_error(500, "overloaded")
    scripted_llm.enqueue_error(503, "still overloaded")
    scripted_llm.enqueue_text("eccomi")
    reply = await port.complete(HELLO)
    assert reply.text == "eccomi"
    assert len(scripted_llm.requests) == 3  # tenacity only: litellm/openai retries are off


async def test_retries_stop_at_max_attempts(scripted_llm: ScriptedLLM) -> None:
    port = LLMPort(llm_settings(scripted_llm, max_attempts=2), wait_initial_s=0.01, wait_max_s=0.02)
    for _ in range(3):
        scripted_llm.enqueue_error(500)
    with pytest.raises(LLMError) as info:
        await port.complete(HELLO)
    assert info.value.key == "ERR_LLM_UNAVAILABLE"
    assert len(scripted_llm.requests) == 2
    assert scripted_llm.pending == 1


SYSTEM_AND_HELLO = [{"role": "system", "content": "You are Metnos."}, *HELLO]


@pytest.mark.parametrize("model, marked", [
    ("openrouter/anthropic/claude-3.5-sonnet", True),  # caches only what the request marks
    ("openrouter/openai/gpt-4o", False),  # caches a stable prefix by itself
    ("openai/scripted", False),  # a local OpenAI-compatible server: nothing it does not know
])
async def test_the_system_prompt_is_marked_for_caching_where_the_provider_needs_it(
        scripted_llm: ScriptedLLM, model: str, marked: bool) -> None:
    port = LLMPort(llm_settings(scripted_llm, model=model))
    scripted_llm.enqueue_text("Buongiorno!")
    assert (await port.complete(SYSTEM_AND_HELLO)).text == "Buongiorno!"
    system, user = scripted_llm.requests[0]["messages"]
    assert user == HELLO[0]
    if marked:
        assert system["content"] == [{"type": "text", "text": "You are Metnos.",
                                      "cache_control": {"type": "ephemeral"}}]
    else:
        assert system == SYSTEM_AND_HELLO[0]


async def test_rate_limit_honours_retry_after(port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_error(429, "slow down", headers={"Retry-After": "0.3"})
    scripted_llm.enqueue_text("ok")
    started = time.perf_counter()
    reply = await port.complete(HELLO)
    assert reply.text == "ok"
    assert time.perf_counter() - started >= 0.3  # the backoff alone would be ~0.01 s


async def test_bad_request_is_not_retried(port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_error(400, "bad tools schema")
    scripted_llm.enqueue_text("never reached")
    with pytest.raises(LLMError) as info:
        await port.complete(HELLO)
    assert info.value.key == "ERR_LLM_REQUEST_REJECTED"
    assert info.value.vars["status"] == 400
    assert len(scripted_llm.requests) == 1
    assert "rifiutato" in i18n.message(info.value, "it")
    assert "rejected" in i18n.message(info.value, "en")


async def test_bad_key_is_an_auth_error(port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_error(401, "invalid api key")
    with pytest.raises(LLMError) as info:
        await port.complete(HELLO)
    assert info.value.key == "ERR_LLM_AUTH_FAILED"
    assert len(scripted_llm.requests) == 1


async def test_empty_queue_is_never_a_silent_answer(
    port: LLMPort, scripted_llm: ScriptedLLM
) -> None:
    with pytest.raises(LLMError):
        await port.complete(HELLO)
    assert len(scripted_llm.requests) == 3  # the 500 is transient, so it was retried, then failed


def test_tiers_resolve_and_frontier_is_never_silent() -> None:
    port = LLMPort(LLMSettings(model="ollama/qwen3:8b", model_wise="openai/wise"))
    assert port.resolve("fast") == "ollama/qwen3:8b"
    assert port.resolve("wise") == "openai/wise"
    with pytest.raises(LLMError) as info:
        port.resolve("frontier")
    assert info.value.key == "ERR_LLM_FRONTIER_NOT_CONFIGURED"
    with pytest.raises(LLMError) as unknown:
        port.resolve("turbo")
    assert unknown.value.key == "ERR_LLM_TIER_UNKNOWN"
    assert LLMPort(LLMSettings(model="a", model_frontier="big")).resolve("frontier") == "big"


async def test_frontier_request_without_frontier_reaches_no_model(
    scripted_llm: ScriptedLLM,
) -> None:
    port = LLMPort(llm_settings(scripted_llm))
    scripted_llm.enqueue_text("must not be used")
    with pytest.raises(LLMError) as info:
        await port.complete(HELLO, tier="frontier")
    assert info.value.key == "ERR_LLM_FRONTIER_NOT_CONFIGURED"
    assert scripted_llm.requests == []


async def test_not_configured() -> None:
    settings = LLMSettings()
    assert not configured(settings)
    assert configured(LLMSettings(model="ollama/qwen3:8b"))
    with pytest.raises(LLMError) as info:
        await LLMPort(settings).complete(HELLO)
    assert info.value.key == "ERR_LLM_NOT_CONFIGURED"


def test_embedded_path_never_imports_litellm() -> None:
    code = (
        "import sys\n"
        "from metnos.mechanisms.llm import plan_embedded, ToolSpec, LLMPort\n"
        "from metnos.ground.settings import LLMSettings\n"
        "LLMPort(LLMSettings(model='x/y')).resolve('fast')\n"
        "t = ToolSpec('fs_read', 'd', {}, utterances=('leggi {path}',))\n"
        "assert plan_embedded('leggi a.md', 'it', [t]).steps\n"
        "print('litellm' in sys.modules, 'openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# -- streaming (on_delta) ---------------------------------------------------------------------


class Deltas(list[str]):
    """The pieces `on_delta` received, with the time each one came."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def __call__(self, piece: str) -> None:
        self.append(piece)
        self.times.append(time.perf_counter())


async def test_streamed_text_arrives_in_pieces_and_as_a_whole(
        port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    text = "Buongiorno, come stai oggi?"
    plain = await _plain_reply(port, scripted_llm, text)
    assert plain.first_token_s is None
    scripted_llm.enqueue_text("warm")  # litellm's first stream in a process pays its set-up
    await port.complete(HELLO, on_delta=Deltas())
    scripted_llm.chunk_delay_s = 0.03
    scripted_llm.enqueue_text(text)
    deltas = Deltas()
    started = time.perf_counter()
    reply = await port.complete(HELLO, on_delta=deltas)
    done = time.perf_counter()
    assert deltas == ["Buongiorno, ", "come ", "stai ", "oggi?"]
    assert reply.text == text and reply.tool_calls == []
    assert deltas.times[-1] - deltas.times[0] >= 0.03 * 3 * 0.9  # handed on as they arrived
    assert reply.first_token_s is not None
    assert 0 < reply.first_token_s <= deltas.times[0] - started + 0.001
    assert reply.first_token_s < done - started - 0.05  # well before the end of the stream
    assert scripted_llm.requests[-1]["stream"] is True
    assert scripted_llm.requests[-1]["stream_options"] == {"include_usage": True}
    assert (reply.prompt_tokens, reply.completion_tokens) == (
        plain.prompt_tokens, plain.completion_tokens)  # the usage of the last chunk


async def _plain_reply(port: LLMPort, llm: ScriptedLLM, text: str) -> LLMReply:
    llm.enqueue_text(text)
    return await port.complete(HELLO)


async def test_streamed_tool_calls_are_rebuilt_from_pieces(
        port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    long_text = "x" * 100
    scripted_llm.enqueue_tool_calls(
        [ToolCall("fs_write", {"path": "out.md", "content": long_text}, call_id="c1"),
         ToolCall("fs_read", {"path": "in.md"}, call_id="c2")], text="I will write it.")
    deltas = Deltas()
    reply = await port.complete(HELLO, on_delta=deltas)
    assert "".join(deltas) == "I will write it." == reply.text  # the text of a tool turn too
    assert [(c.id, c.name, json.loads(c.arguments_json)) for c in reply.tool_calls] == [
        ("c1", "fs_write", {"path": "out.md", "content": long_text}),
        ("c2", "fs_read", {"path": "in.md"})]


async def test_streamed_tool_call_alone_has_no_first_token(
        port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_tool_call("fs_read", '{"path": "note.md"')  # malformed, kept raw
    deltas = Deltas()
    reply = await port.complete(HELLO, on_delta=deltas)
    assert deltas == [] and reply.text is None and reply.first_token_s is None
    assert reply.tool_calls[0].arguments_json == '{"path": "note.md"'


async def test_streamed_cost_from_usage_and_prices(scripted_llm: ScriptedLLM) -> None:
    port = LLMPort(llm_settings(scripted_llm, input_cost_per_token=1e-6,
                                output_cost_per_token=3e-6), wait_initial_s=0.01)
    scripted_llm.enqueue_text("Hi there!")
    reply = await port.complete(HELLO, on_delta=Deltas())
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0
    expected = reply.prompt_tokens * 1e-6 + reply.completion_tokens * 3e-6
    assert reply.cost_usd == pytest.approx(expected) and reply.cost_usd > 0


async def test_stream_retried_before_the_first_delta(
        port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_error(503, "overloaded")
    scripted_llm.enqueue_cut("never shown", after_chunks=1)  # only the role chunk: no text
    scripted_llm.enqueue_text("eccomi qui")
    deltas = Deltas()
    reply = await port.complete(HELLO, on_delta=deltas)
    assert reply.text == "eccomi qui" and deltas == ["eccomi ", "qui"]
    assert len(scripted_llm.requests) == 3


async def test_error_mid_stream_is_an_llm_error_at_once(
        port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_cut("one two three four", after_chunks=3)  # role, "one ", "two "
    scripted_llm.enqueue_text("a retry would get this")
    deltas = Deltas()
    with pytest.raises(LLMError) as info:
        await port.complete(HELLO, on_delta=deltas)
    assert info.value.key == "ERR_LLM_UNAVAILABLE"
    assert deltas == ["one ", "two "]
    assert len(scripted_llm.requests) == 1 and scripted_llm.pending == 1  # not retried


async def test_a_failing_callback_is_not_an_llm_error(
        port: LLMPort, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_text("one two")

    def broken(piece: str) -> None:
        raise KeyError(piece)

    with pytest.raises(KeyError):
        await port.complete(HELLO, on_delta=broken)
    assert len(scripted_llm.requests) == 1
