"""The scripted server speaks OpenAI's wire format (checked with plain httpx, no litellm)."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

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


def _stream(llm: ScriptedLLM, body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[float]]:
    """The chunks of one streamed answer, with the time each one arrived."""
    chunks: list[dict[str, Any]] = []
    times: list[float] = []
    with httpx.stream("POST", llm.api_base + "/chat/completions", json=body) as response:
        assert response.headers["content-type"] == "text/event-stream"
        for line in response.iter_lines():
            if line.startswith("data: "):
                times.append(time.perf_counter())
                chunks.append(json.loads(line[6:]) if line != "data: [DONE]" else {"done": 1})
    assert chunks.pop() == {"done": 1}  # the stream ends with [DONE]
    return chunks, times


def test_models_and_stream(scripted_llm: ScriptedLLM) -> None:
    models = httpx.get(scripted_llm.api_base + "/models").json()
    assert models["data"][0]["id"] == "scripted"
    scripted_llm.enqueue_text("streamed in  four words")
    chunks, _ = _stream(scripted_llm, {"stream": True, "messages": []})
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert [d["content"] for d in deltas[1:-1]] == ["streamed ", "in  ", "four ", "words"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and deltas[-1] == {}
    assert "usage" not in chunks[-1]  # not asked for


def test_streamed_tool_calls_come_in_pieces_with_usage_last(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_tool_calls([ToolCall("fs_read", {"path": "a-long-name.md"}, "c1"),
                                     ToolCall("fs_list", {"path": "."}, "c2")], text="Reading.")
    body = {"stream": True, "stream_options": {"include_usage": True}, "messages": []}
    chunks, _ = _stream(scripted_llm, body)
    usage = chunks.pop()
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] > 0
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    calls = [call for c in chunks for call in c["choices"][0]["delta"].get("tool_calls", [])]
    firsts = [c for c in calls if "id" in c]
    assert [(c["index"], c["id"], c["function"]["name"]) for c in firsts] == [
        (0, "c1", "fs_read"), (1, "c2", "fs_list")]
    pieces = {i: [c["function"]["arguments"] for c in calls if c["index"] == i] for i in (0, 1)}
    assert len(pieces[0]) > 3  # the arguments arrive in several pieces
    assert json.loads("".join(pieces[0])) == {"path": "a-long-name.md"}
    assert json.loads("".join(pieces[1])) == {"path": "."}


def test_chunk_delay_spreads_the_chunks(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.chunk_delay_s = 0.05
    scripted_llm.enqueue_text("one two three four")
    _, times = _stream(scripted_llm, {"stream": True, "messages": []})
    assert times[-1] - times[1] >= 0.05 * 4  # the words arrived apart, not in one write
    scripted_llm.reset()
    assert scripted_llm.chunk_delay_s == 0.0  # reset restores the constructor's delay


def test_a_cut_stream_drops_the_connection(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_cut("one two three", after_chunks=2)
    with pytest.raises(httpx.RemoteProtocolError):
        _stream(scripted_llm, {"stream": True, "messages": []})
    scripted_llm.enqueue_cut("unsent", after_chunks=0)
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(scripted_llm.api_base + "/chat/completions", json={"messages": []})


def test_stop_releases_the_port() -> None:
    server = ScriptedLLM().start()
    url = server.api_base
    server.stop()
    try:
        httpx.get(url + "/models", timeout=1)
    except httpx.ConnectError:
        return
    raise AssertionError("the server still answers after stop()")


def test_routes_answer_by_the_last_user_message_then_the_final_text(
        scripted_llm: ScriptedLLM) -> None:
    scripted_llm.route("turn-A", ToolCall("fs_read", {"path": "a"}), final_text="A is read")
    scripted_llm.enqueue_text("from the queue")
    url = scripted_llm.api_base + "/chat/completions"

    def ask(*messages: dict[str, Any]) -> dict[str, Any]:
        body = {"messages": [{"role": "system", "content": "turn-A"}, *messages]}
        message: dict[str, Any] = httpx.post(url, json=body).json()["choices"][0]["message"]
        return message

    asked = {"role": "user", "content": "please, turn-A"}
    routed = ask(asked)
    assert routed["tool_calls"][0]["function"]["name"] == "fs_read"
    assert ask(asked)["tool_calls"]  # the same request again: the same call
    call = {"role": "assistant", "content": None, "tool_calls": routed["tool_calls"]}
    result = {"role": "tool", "tool_call_id": "x", "content": "{}"}
    assert ask(asked, call, result) == {"role": "assistant", "content": "A is read"}
    # the token only in an earlier user message: not routed (the system text is not read)
    assert ask(asked, call, result, {"role": "user", "content": "no token here"})[
        "content"] == "from the queue"
