"""Approval round trip: from a paused `turn` flow to the resumed flow, through the HTTP API.

    python -m tests.support.services -- python bench/approval_roundtrip.py --runs 50

Each run: the scripted LLM asks for one `fs_move` (medium risk: Supervised asks), the turn
answers `awaiting_approval` and its Prefect flow run pauses; once Prefect shows it Paused,
`POST /api/approvals/{id}` approves it. Measured per run (medians over the runs):

- `approve call`: the POST itself (decision recorded, audit line, Prefect resume);
- `pause → resumed`: POST sent → the flow's pause returns the decision (Prefect's resume plus
  the paused run's polling, every `flows.approval.PAUSE_POLL_S`);
- `pause → turn done`: POST sent → the step ran, the model answered and the turn closed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import UUID

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
from prefect.client.orchestration import get_client  # noqa: E402
from turn_latency import pct, row, serve, setup_home  # noqa: E402

import flows.approval  # noqa: E402
import flows.turn  # noqa: E402
from metnos.testing.llm_server import ScriptedLLM  # noqa: E402

_resumed: dict[str, float] = {}


class Clock:
    """Records when each turn's runner finished (the whole turn, bookkeeping included)."""

    def __init__(self) -> None:
        self.done: dict[str, float] = {}

    def wrap(self, runner: Any) -> Any:
        async def timed(service: Any, ctx: Any) -> None:
            try:
                await runner(service, ctx)
            finally:
                self.done[ctx.turn_id] = time.perf_counter()
        return timed


def _instrument() -> None:
    """Record when each paused flow gets its decision back (the flow looks the function up
    at call time, so wrapping the module attribute is enough)."""
    original = flows.turn.wait_for_owner

    async def timed(service: Any, ctx: Any, checked: Any) -> Any:
        try:
            return await original(service, ctx, checked)
        finally:
            _resumed[ctx.turn_id] = time.perf_counter()

    flows.turn.wait_for_owner = timed  # type: ignore[assignment]


async def one_run(client: httpx.AsyncClient, llm: ScriptedLLM, workspace: Path, n: int,
                  clock: Clock) -> dict[str, float]:
    (workspace / f"a{n}.txt").write_text(f"file {n}\n")
    llm.enqueue_tool_call("fs_move", {"src": f"a{n}.txt", "dst": f"b{n}.txt"})
    llm.enqueue_text("Renamed.")  # the agent loop's second model call, after the move
    body = (await client.post("/api/turns", json={"text": "rename", "lang": "en"})).json()
    assert body["status"] == "awaiting_approval", body
    async with get_client() as prefect:
        while True:
            run = await prefect.read_flow_run(UUID(body["flow_run_id"]))
            if run.state is not None and run.state.is_paused():
                break
            await asyncio.sleep(0.01)
    t0 = time.perf_counter()
    resp = await client.post(f"/api/approvals/{body['approvals'][0]['approval_id']}",
                             json={"decision": "approve"})
    t_call = time.perf_counter()
    assert resp.status_code == 200 and resp.json()["resumed"], resp.text
    while body["turn_id"] not in clock.done:
        await asyncio.sleep(0.002)
    assert (workspace / f"b{n}.txt").exists()
    return {"call": (t_call - t0) * 1000, "resumed": (_resumed[body["turn_id"]] - t0) * 1000,
            "done": (clock.done[body["turn_id"]] - t0) * 1000}


async def main(runs: int, warmup: int) -> None:
    from metnos.faces.gateway.app import create_app

    _instrument()
    root = Path(tempfile.mkdtemp(prefix="metnos-bench-approval-"))
    with ScriptedLLM() as llm:
        settings = setup_home(root, llm)
        clock = Clock()
        app = create_app(settings, runner=clock.wrap(flows.turn.run_turn),
                         resumer=flows.approval.resume_approval)
        server = await serve(app, 42710)
        samples: list[dict[str, float]] = []
        async with httpx.AsyncClient(base_url="http://127.0.0.1:42710", timeout=60, headers={
                "Authorization": f"Bearer {settings.owner_token()}"}) as client:
            for n in range(warmup + runs):
                sample = await one_run(client, llm, settings.workspace, n, clock)
                if n >= warmup:
                    samples.append(sample)
        server.should_exit = True
        await asyncio.sleep(0.5)
    print(f"approval round trip, {runs} runs (poll every {flows.approval.PAUSE_POLL_S} s):")
    for key, name in (("call", "approve call (POST)"), ("resumed", "pause → resumed flow"),
                      ("done", "pause → turn done")):
        print(row(name, [s[key] for s in samples]))
    resumed = [s["resumed"] for s in samples]
    print(f"  min {min(resumed):.1f} ms, max {max(resumed):.1f} ms, "
          f"mean {statistics.mean(resumed):.1f} ms, p95 {pct(resumed, 0.95):.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.warmup))
