"""`WS /api/chat` on the agent loop: the model's text arrives as `delta` frames, in order and
over time, before the `reply` that replaces it, and the reply carries what ran beside it."""

from __future__ import annotations

import json

import websockets

from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.webchat.test_chat_socket import frames_until

ANSWER = "There are six markdown files in your workspace, IDENTITY.md among them."


async def test_deltas_then_the_reply_with_its_activity(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    scripted_llm.chunk_delay_s = 0.05
    scripted_llm.enqueue_tool_call("fs_find", {"pattern": "*.md"})
    scripted_llm.enqueue_text(ANSWER)
    port = home.settings.gateway.port
    with served_gateway(home):
        async with websockets.connect(f"ws://127.0.0.1:{port}/api/chat",
                                      additional_headers=home.auth()) as socket:
            await socket.send(json.dumps({"type": "message", "text": "which notes?"}))
            frames = await frames_until(socket, "end", stamped=True)
    kinds = [f["type"] for f in frames]
    deltas = [f for f in frames if f["type"] == "delta"]
    [reply] = [f for f in frames if f["type"] == "reply"]
    assert kinds.index("reply") > max(i for i, k in enumerate(kinds) if k == "delta")
    last = max(d["think"] for d in deltas)
    assert "".join(d["text"] for d in deltas if d["think"] == last) == ANSWER == reply["text"]
    streamed = [d for d in deltas if d["think"] == last]
    assert len(streamed) >= 5 and streamed[-1]["_at"] - streamed[0]["_at"] > 0.2  # over time
    assert [(a["executor"], a["status"]) for a in reply["activity"]] == [("fs_find", "done")]
    assert reply["activity"][0]["text"] and reply["stop_reason"] is None
