"""`WS /api/chat`: a turn and its approval over one socket, with the browser's cookie."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
import websockets

from metnos.faces.web.link import create_login_link
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import Home, MakeHome, served_gateway
from tests.support.pg import free_port


def cookie_of(home: Home) -> str:
    link = create_login_link(home.settings).url
    resp = httpx.get(link, follow_redirects=False)
    assert resp.status_code == 303, resp.text
    return resp.cookies["metnos_session"]


async def frames_until(socket: Any, kind: str, stamped: bool = False) -> list[dict[str, Any]]:
    """The frames received up to the first of type `kind`; `stamped`: each with `_at`, the
    monotonic time it arrived."""
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1]["type"] != kind:
        seen.append(json.loads(await socket.recv(decode=True)))
        if stamped:
            seen[-1]["_at"] = time.monotonic()
    return seen


async def test_a_turn_and_its_approval_over_one_socket(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    scripted_llm.enqueue_tool_call("fs_write", {"path": "todo.md", "content": "call mum\n"})
    scripted_llm.enqueue_text("Noted in todo.md.")  # the model's text after the write
    port = home.settings.gateway.port
    with served_gateway(home):
        headers = {"Cookie": f"metnos_session={cookie_of(home)}",
                   "Origin": f"http://127.0.0.1:{port}"}
        async with websockets.connect(f"ws://127.0.0.1:{port}/api/chat",
                                      additional_headers=headers) as socket:
            await socket.send("not json")
            [error] = await frames_until(socket, "error")
            assert error["key"] == "ERR_REQUEST_INVALID" and error["message"]
            await socket.send(json.dumps({"type": "message", "text": "note it", "lang": "en"}))
            frames = await frames_until(socket, "approval")
            assert frames[0]["type"] == "turn" and frames[-1]["executor"] == "fs_write"
            await socket.send(json.dumps({"type": "decision", "decision": "approve",
                                          "approval_id": frames[-1]["approval_id"]}))
            rest = await frames_until(socket, "end")
    replies = [f for f in rest if f["type"] == "reply"]
    assert replies and replies[-1]["text"] == "Noted in todo.md."
    assert "metnos undo" in replies[-1]["activity"][0]["text"]
    assert (home.workspace / "todo.md").read_text() == "call mum\n"
    lines = [json.loads(ln) for ln in
             (home.settings.audit_dir / "audit.jsonl").read_text().splitlines()]
    assert {ln["channel"] for ln in lines if ln["action"] == "fs_write"} == {"web"}


@pytest.mark.attack
async def test_a_socket_without_credentials_or_from_another_site_is_refused(
        make_home: MakeHome) -> None:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    port = home.settings.gateway.port
    with served_gateway(home):
        cookie = cookie_of(home)
        attempts = [
            {"Origin": f"http://127.0.0.1:{port}"},  # no cookie
            {"Cookie": f"metnos_session={cookie}", "Origin": "http://evil.example"},
            {"Cookie": "metnos_session=forged", "Origin": f"http://127.0.0.1:{port}"},
        ]
        for headers in attempts:
            with pytest.raises(websockets.InvalidStatus) as refused:
                async with websockets.connect(f"ws://127.0.0.1:{port}/api/chat",
                                              additional_headers=headers):
                    pass
            assert refused.value.response.status_code == 403, headers
