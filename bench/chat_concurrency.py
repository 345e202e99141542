"""Web chat under load: 20 concurrent browser sessions, 10 turns each, in one run.

    make bench                       # starts PostgreSQL and a Prefect server, then runs this
    python -m tests.support.services -- python bench/chat_concurrency.py [--sessions 20 --turns 10]

Each session logs in as a browser does (a one-time link from `metnos login` → the HttpOnly
session cookie), then sends its turns one after the other, as a person waits for each reply:
`POST /api/turns` with the cookie and the page's Origin, through the gateway on a real
loopback port and the Prefect `turn` flow; the scripted LLM answers every request with one
`fs_read` step, run in the sandbox. Prints errors (must be 0) and p50/p95 of the reply time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from turn_latency import pct, serve, setup_home  # noqa: E402

from metnos.testing.llm_server import ScriptedLLM, ToolCall  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def browser_session(base: str, link: str, turns: int, times: list[float],
                          errors: list[str]) -> None:
    origin = {"Origin": base}
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        login = await client.get(link, follow_redirects=False)
        if login.status_code != 303 or "metnos_session" not in client.cookies:
            errors.append(f"login: HTTP {login.status_code}")
            return
        session_id = None
        for n in range(turns):
            start = time.perf_counter()
            resp = await client.post("/api/turns", headers=origin, json={
                "text": f"read my note ({n})", "session_id": session_id, "lang": "en"})
            elapsed = (time.perf_counter() - start) * 1000
            body: dict[str, Any] = resp.json() if resp.headers.get(
                "content-type", "").startswith("application/json") else {}
            if resp.status_code != 200 or body.get("status") != "completed" \
                    or "buy milk" not in (body.get("reply") or ""):
                errors.append(f"turn: HTTP {resp.status_code} {str(body)[:160]}")
                continue
            session_id = body["session_id"]
            times.append(elapsed)


async def main(sessions: int, turns: int) -> None:
    with ScriptedLLM() as llm, tempfile.TemporaryDirectory(prefix="metnos-chat-") as tmp:
        llm.always(ToolCall("fs_read", {"path": "note.md"}))
        port = free_port()
        os.environ["METNOS_GATEWAY_PORT"] = str(port)
        settings = setup_home(Path(tmp), llm)
        from flows.turn import resume_approval, run_turn
        from metnos.faces.gateway.app import create_app
        from metnos.faces.web.link import create_login_link

        server = await serve(create_app(settings, runner=run_turn, resumer=resume_approval),
                             port)
        base = f"http://127.0.0.1:{port}"
        links = [create_login_link(settings).url for _ in range(sessions)]
        times: list[float] = []
        errors: list[str] = []
        started = time.perf_counter()
        await asyncio.gather(*(browser_session(base, link, turns, times, errors)
                               for link in links))
        wall = time.perf_counter() - started
        server.should_exit = True
        await asyncio.sleep(0.5)
    print(f"web chat: {sessions} concurrent sessions x {turns} turns "
          f"(cookie login, Prefect turn flow, one sandboxed fs_read per turn)")
    print(f"  turns answered {len(times)}/{sessions * turns}, errors {len(errors)}")
    for line in errors[:5]:
        print(f"    {line}")
    if times:
        p50, p95 = statistics.median(times), pct(times, 0.95)
        print(f"  reply time p50 {p50:8.1f} ms   p95 {p95:8.1f} ms   max {max(times):8.1f} ms")
        print(f"  throughput {len(times) / wall:.1f} turns/s over {wall:.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.sessions, args.turns))
