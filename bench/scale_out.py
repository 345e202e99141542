"""Scale-out: turns that run one remote step, with one and with two workers in the pool.

    python -m tests.support.services -- python bench/scale_out.py --turns 12 --concurrency 4

Each turn: the scripted model asks for `photo_rename` (manifest `runs_on = "laptop"`) on its
own folder of three photos in the laptop's workspace, then answers; the step is two runs of
the `remote-step/laptop` deployment (prepare, apply) picked up by `prefect worker start
--pool laptop --type process` processes with their own METNOS_HOME (tests/support/worker.py).
The turns go through the real gateway app (ASGI) and the Prefect turn flow, `--concurrency`
at a time. Printed per worker count: turns per second, turn latency p50/p95, and for the
remote runs: submission → Running (the worker's query interval, its process start and the
engine's import), Running → end (the executor in the sandbox, the hashes, the state writes).
Each worker takes `--limit` runs at a time; on this 2-core machine every run is a new Python
process, which is what bounds it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
from asgi_lifespan import LifespanManager  # noqa: E402
from prefect.client.orchestration import get_client  # noqa: E402
from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName  # noqa: E402

from bench._home import bench_home, llm_env, pct  # noqa: E402
from flows.remote_step import CODE_ROOT, deploy, port  # noqa: E402
from flows.turn import resume_approval, run_turn  # noqa: E402
from metnos.faces.gateway.app import create_app  # noqa: E402
from metnos.faces.wiring import Edges  # noqa: E402
from metnos.testing.llm_server import ScriptedLLM, ToolCall  # noqa: E402
from tests.support.worker import Worker, laptop_home  # noqa: E402

POOL = "laptop"


def setup_home(root: Path, llm: ScriptedLLM) -> Any:
    return bench_home(root, "bench_scale_out", **llm_env(llm.api_base, "Full"),
                      METNOS_REMOTE_STEP_DEADLINE_S="600")


async def one_turn(client: httpx.AsyncClient, llm: ScriptedLLM, laptop: Path,
                   tag: str) -> float:
    folder = laptop / "workspace" / f"photos-{tag}"
    folder.mkdir()
    for i in range(3):
        (folder / f"IMG_{i}.JPG").write_bytes(os.urandom(4096))
    token = f"[batch-{tag}]"  # bracketed: "batch-1w1c-1" is inside "batch-1w1c-10"
    llm.route(token, ToolCall("photo_rename", {"folder": folder.name, "prefix": "r-"}),
              final_text=f"Renamed {token}.")
    started = time.monotonic()
    resp = await client.post("/api/turns", json={"text": f"rename the photos {token}"})
    turn_id = resp.json()["turn_id"]
    while True:
        turn = (await client.get(f"/api/turns/{turn_id}")).json()
        if turn["finished_at"]:
            break
        await asyncio.sleep(0.1)
    took = time.monotonic() - started
    if turn["status"] != "completed" or (folder / "r-0001.jpg").exists() is False:
        raise RuntimeError(f"turn {tag} did not rename: {turn['status']} {turn['reply'][:200]}")
    return took


async def run_phase(client: httpx.AsyncClient, llm: ScriptedLLM, laptop: Path, workers: int,
                    turns: int, concurrency: int) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)

    async def guarded(k: int) -> float:
        async with gate:
            return await one_turn(client, llm, laptop, f"{workers}w{concurrency}c-{k}")

    since = time.time()
    started = time.monotonic()
    latencies = await asyncio.gather(*(guarded(k) for k in range(turns)))
    wall = time.monotonic() - started
    pickup, running = await run_times(since)
    return {"workers": workers, "at_once": concurrency, "turns": turns, "wall": wall,
            "tps": turns / wall,
            "p50": statistics.median(latencies), "p95": pct(list(latencies), 0.95),
            "pickup_p50": statistics.median(pickup), "run_p50": statistics.median(running),
            "runs": len(pickup)}


async def run_times(since: float) -> tuple[list[float], list[float]]:
    """Submission → Running and Running → end of the remote runs created after `since`."""
    async with get_client() as client:
        runs = await client.read_flow_runs(deployment_filter=DeploymentFilter(
            name=DeploymentFilterName(any_=[POOL])), limit=200)
    pickup, running = [], []
    for run in runs:
        if run.created is None or run.created.timestamp() < since or run.start_time is None \
                or run.end_time is None:
            continue
        pickup.append((run.start_time - run.created).total_seconds())
        running.append((run.end_time - run.start_time).total_seconds())
    return pickup, running


async def main(turns: int, concurrency: int, limit: int) -> int:
    root = Path(tempfile.mkdtemp(prefix="metnos-bench-scale-"))
    with ScriptedLLM() as llm:
        settings = setup_home(root, llm)
        laptop = laptop_home(root / "laptop", settings)
        await deploy(POOL, CODE_ROOT)
        app = create_app(settings, runner=run_turn, resumer=resume_approval,
                         edges=Edges(remote=port(settings)))
        results: list[dict[str, Any]] = []
        workers: list[Worker] = []
        try:
            async with LifespanManager(app, startup_timeout=120, shutdown_timeout=60) as m:
                transport = httpx.ASGITransport(app=m.app)
                token = settings.owner_token()
                async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1",
                                             headers={"Authorization": f"Bearer {token}"},
                                             timeout=600) as client:
                    for count, at_once in ((1, 1), (1, concurrency), (2, concurrency)):
                        while len(workers) < count:
                            workers.append(Worker(laptop, POOL, name=f"laptop-{len(workers)+1}",
                                                  limit=limit).start())
                            await one_turn(client, llm, laptop, f"warm-{len(workers)}")
                        results.append(await run_phase(client, llm, laptop, count, turns,
                                                       at_once))
        finally:
            for worker in workers:
                worker.stop()
    print(f"\nremote steps through the gateway: {turns} turns per row, each worker --limit"
          f" {limit}; 2 remote runs per turn (prepare, apply)")
    print(f"{'workers':>7} {'at once':>7} {'turns/s':>8} {'p50 s':>7} {'p95 s':>7} {'runs':>5}"
          f" {'submit→running p50':>19} {'running→end p50':>16}")
    for r in results:
        print(f"{r['workers']:>7} {r['at_once']:>7} {r['tps']:>8.3f} {r['p50']:>7.1f}"
              f" {r['p95']:>7.1f}"
              f" {r['runs']:>5} {r['pickup_p50']:>18.1f}s {r['run_p50']:>15.1f}s")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--limit", type=int, default=2, help="runs per worker at a time")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.turns, args.concurrency, args.limit)))
