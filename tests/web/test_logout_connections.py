"""`POST /api/logout` ends that browser's open connections: its WebSocket (`WS /api/chat`)
and its event stream (`GET /api/turns/{id}/events`) close at once, a new socket with the old
cookie is refused, and another browser's socket stays open. Real HTTP and WebSockets against
the gateway under uvicorn, real web sessions from `metnos login` links."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets
from websockets.exceptions import ConnectionClosed

from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.webchat.test_chat_socket import cookie_of, frames_until

PROMPTLY_S = 10.0  # a bound, not a speed target: both end within milliseconds


async def _stream_lines(client: httpx.AsyncClient, turn_id: str, opened: asyncio.Event,
                        lines: list[str]) -> None:
    """Read the turn's SSE stream until the server ends it."""
    async with client.stream("GET", f"/api/turns/{turn_id}/events") as resp:
        assert resp.status_code == 200, await resp.aread()
        async for line in resp.aiter_lines():
            lines.append(line)
            opened.set()


async def test_logout_closes_the_browsers_socket_and_event_stream(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    scripted_llm.enqueue_tool_call("fs_write", {"path": "x.txt", "content": "x\n"})
    port = home.settings.gateway.port
    base, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/api/chat"
    with served_gateway(home):
        mine, other = cookie_of(home), cookie_of(home)  # two browsers
        headers = {"Cookie": f"metnos_session={mine}", "Origin": base}
        other_headers = {"Cookie": f"metnos_session={other}", "Origin": base}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
            turn = (await client.post("/api/turns", json={"text": "write x", "lang": "en"})
                    ).json()
            assert turn["status"] == "awaiting_approval", turn  # its stream stays open
            async with websockets.connect(ws_url, additional_headers=headers) as socket, \
                    websockets.connect(ws_url, additional_headers=other_headers) as kept:
                opened, lines = asyncio.Event(), []
                stream = asyncio.create_task(_stream_lines(client, turn["turn_id"], opened,
                                                           lines))
                await asyncio.wait_for(opened.wait(), PROMPTLY_S)
                resp = await client.post("/api/logout")
                assert resp.status_code == 200 and resp.json()["logged_out"] is True

                with pytest.raises(ConnectionClosed) as closed:
                    await asyncio.wait_for(socket.recv(), PROMPTLY_S)
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
                await asyncio.wait_for(stream, PROMPTLY_S)  # the server ended the stream
                assert "retry: 2000" in lines

                await kept.send(json.dumps({"type": "nonsense"}))  # the other browser's
                [error] = await frames_until(kept, "error")  # socket still answers
                assert error["key"] == "ERR_REQUEST_INVALID"

            with pytest.raises(websockets.InvalidStatus) as refused:
                async with websockets.connect(ws_url, additional_headers=headers):
                    pass
            assert refused.value.response.status_code == 403
            again = await client.get(f"/api/turns/{turn['turn_id']}/events")
            assert again.status_code == 401
        [pending] = turn["approvals"]  # end the waiting turn (its run never starts)
        deny = httpx.post(f"{base}/api/approvals/{pending['approval_id']}", headers=home.auth(),
                          json={"decision": "deny"})
        assert deny.status_code == 200, deny.text
