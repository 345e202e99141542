"""The turn flow's id is asked of the Prefect server once per process, not before every run
(`flows/_flow_ids.py`), and a flow deleted from the Prefect UI costs no turn.

The gateway's Prefect client talks to the server through a recording TCP proxy on loopback:
what it records is what went over the wire."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_API_URL, temporary_settings

from metnos.testing.llm_server import ScriptedLLM
from tests.flows.test_turn_runview import final_run
from tests.gateway.test_turns import wait_closed
from tests.support.home import MakeHome, gateway_client

REQUEST_LINE = re.compile(rb"(?:^|\r\n)(GET|POST|PATCH|PUT|DELETE) (\S+) HTTP/1\.1\r\n")


@asynccontextmanager
async def recording_proxy(upstream: str) -> AsyncIterator[tuple[str, list[str]]]:
    """A loopback proxy to `upstream` (an API URL); yields its API URL and the request lines
    ("POST /api/flows/") that passed through it."""
    target = urlsplit(upstream)
    seen: list[str] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   record: bool) -> None:
        try:
            while data := await reader.read(65536):
                if record:
                    seen.extend(f"{m[0].decode()} {m[1].decode()}"
                                for m in REQUEST_LINE.findall(data))
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection(target.hostname, target.port)
        await asyncio.gather(pipe(client_r, up_w, True), pipe(up_r, client_w, False))

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}{target.path}", seen
    finally:
        server.close()


async def one_turn(client: httpx.AsyncClient, scripted_llm: ScriptedLLM,
                   text: str) -> dict[str, Any]:
    scripted_llm.enqueue_text(f"Answered: {text}")
    body = (await client.post("/api/turns", json={"text": text, "lang": "en"})).json()
    turn = await wait_closed(client, body["turn_id"])
    run = await final_run(turn["flow_run_id"])
    assert run.state.is_completed(), run.state
    return {"turn": turn, "run": run}


async def test_the_flow_id_is_asked_once_and_a_deleted_flow_costs_no_turn(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    async with recording_proxy(prefect_api) as (proxied, seen):
        with temporary_settings(updates={PREFECT_API_URL: proxied}):
            async with gateway_client(home) as client:
                first = await one_turn(client, scripted_llm, "first")
                assert seen.count("POST /api/flow_runs/") == 1, seen
                asked = seen.count("POST /api/flows/")
                second = await one_turn(client, scripted_llm, "second")
                assert seen.count("POST /api/flow_runs/") == 2, seen
                assert seen.count("POST /api/flows/") == asked, seen  # not asked again
                assert first["run"].flow_id == second["run"].flow_id

                async with get_client() as prefect:  # the owner deletes the flow in the UI
                    await prefect.delete_flow(first["run"].flow_id)
                third = await one_turn(client, scripted_llm, "third")
                assert third["turn"]["status"] == "completed", third["turn"]
                assert third["run"].flow_id != first["run"].flow_id
                async with get_client() as prefect:
                    flow = await prefect.read_flow(third["run"].flow_id)
                assert flow.name == "turn"
                fourth = await one_turn(client, scripted_llm, "fourth")  # the new id, kept
                assert fourth["run"].flow_id == third["run"].flow_id
                assert seen.count("POST /api/flows/") == asked + 1, seen
