"""A draining gateway (issue 26 §3), through the real app over real HTTP and WebSocket:
a new turn gets 503 in plain words with `Retry-After` and leaves no turn row, on every
channel; `/healthz` reports the database and says `draining` with a 503. The stop itself
(signals, the window, interrupted turns) is tested on the real process:
tests/crash/test_drain.py."""

from __future__ import annotations

import json

import httpx
import websockets
from sqlmodel import func, select

from metnos.faces.gateway.app import create_app
from metnos.ground import i18n
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, served_app
from tests.support.pg import free_port
from tests.webchat.test_chat_socket import cookie_of, frames_until


async def test_a_draining_gateway_refuses_new_turns_and_says_so(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    scripted_llm.enqueue_text("Hello!")
    app = create_app(home.settings)
    port = home.settings.gateway.port
    with served_app(app, port) as base:
        health = httpx.get(f"{base}/healthz")
        assert health.status_code == 200, health.text
        assert health.json()["status"] == "ok" and health.json()["database"] == "ok"
        assert health.json()["prefect"] == "unknown"  # this app observes no scheduler
        before = httpx.post(f"{base}/api/turns", headers=home.auth(),
                            json={"text": "hello there", "lang": "en"}, timeout=60)
        assert before.status_code == 200 and before.json()["status"] == "completed"

        app.state.gateway.drain.start()
        health = httpx.get(f"{base}/healthz")
        assert health.status_code == 503 and health.json()["status"] == "draining"
        refused = httpx.post(f"{base}/api/turns", headers={**home.auth(),
                             "Accept-Language": "it"}, json={"text": "ciao"}, timeout=60)
        assert refused.status_code == 503, refused.text
        assert refused.json() == {"error": {"key": "ERR_GATEWAY_DRAINING",
                                            "message": i18n.get("ERR_GATEWAY_DRAINING", "it")}}
        assert int(refused.headers["Retry-After"]) > 0

        headers = {"Cookie": f"metnos_session={cookie_of(home)}", "Origin": base}
        async with websockets.connect(f"ws://127.0.0.1:{port}/api/chat",
                                      additional_headers=headers) as socket:
            await socket.send(json.dumps({"type": "message", "text": "hello", "lang": "en"}))
            frames = await frames_until(socket, "error")
        assert [f["type"] for f in frames] == ["error"]
        assert frames[0]["key"] == "ERR_GATEWAY_DRAINING"
        assert frames[0]["message"] == i18n.get("ERR_GATEWAY_DRAINING", "en")
        # reading goes on: a turn already answered is still there
        read = httpx.get(f"{base}/api/turns/{before.json()['turn_id']}", headers=home.auth())
        assert read.status_code == 200 and read.json()["status"] == "completed"

    with db_session(app.state.gateway.service.engine) as db:
        assert db.exec(select(func.count()).select_from(models.Turn)).one() == 1
