"""The scripted server speaks OpenAI's wire format (checked with plain httpx, no litellm)."""

from __future__ import annotations

import httpx

from metnos.testing import ScriptedLLM
from metnos.testing.llm_server import EMPTY_QUEUE_MESSAGE, ToolCall


def test_openai_wire_format(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_tool_calls(
        [ToolCall("fs_read", {"path": "a.md"}, call_id="c1")], text="sure"
    )
    body = {"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}
    data = httpx.post(scripted_llm.api_base + "/chat/completions", json=body).json()
    assert data["object"] == "chat.completion" and data["id"].startswith("chatcmpl-")
    assert isinstance(data["created"], int) and data["usage"]["total_tokens"] >= 0
    [choice] = data["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"] == {
        "role": "assistant",
        "content": "sure",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "fs_read", "arguments": '{"path": "a.md"}'},
            }
        ],
    }
    assert scripted_llm.requests == [body]


def test_empty_queue_answers_500(scripted_llm: ScriptedLLM) -> None:
    response = httpx.post(scripted_llm.api_base + "/chat/completions", json={"messages": []})
    assert response.status_code == 500
    assert response.json()["error"]["message"] == EMPTY_QUEUE_MESSAGE


def test_models_and_stream(scripted_llm: ScriptedLLM) -> None:
    models = httpx.get(scripted_llm.api_base + "/models").json()
    assert models["data"][0]["id"] == "scripted"
    scripted_llm.enqueue_text("streamed")
    response = httpx.post(
        scripted_llm.api_base + "/chat/completions", json={"stream": True, "messages": []}
    )
    assert response.headers["content-type"] == "text/event-stream"
    assert '"delta": {"role": "assistant", "content": "streamed"}' in response.text
    assert response.text.endswith("data: [DONE]\n\n")


def test_stop_releases_the_port() -> None:
    server = ScriptedLLM().start()
    url = server.api_base
    server.stop()
    try:
        httpx.get(url + "/models", timeout=1)
    except httpx.ConnectError:
        return
    raise AssertionError("the server still answers after stop()")


def test_routes_answer_by_token_before_the_queue(scripted_llm: ScriptedLLM) -> None:
    from metnos.testing.llm_server import ToolCall

    scripted_llm.route("turn-A", ToolCall("fs_read", {"path": "a"}))
    scripted_llm.enqueue_text("from the queue")
    url = scripted_llm.api_base + "/chat/completions"

    def ask(text: str) -> dict:  # type: ignore[type-arg]
        body = {"messages": [{"role": "system", "content": "turn-A"},
                             {"role": "user", "content": text}]}
        return httpx.post(url, json=body).json()["choices"][0]["message"]  # type: ignore[no-any-return]

    routed = ask("please, turn-A")
    assert routed["tool_calls"][0]["function"]["name"] == "fs_read"
    assert ask("no token here")["content"] == "from the queue"  # the system text is not read
    assert ask("turn-A again")["tool_calls"]  # a route answers every time
