"""Turn latency: 200 turns through the HTTP API, with and without Prefect, in one run.

    make bench                       # starts PostgreSQL and a Prefect server, then runs this
    python -m tests.support.services -- python bench/turn_latency.py --turns 200

Each turn: the scripted LLM answers at once with one `fs_read` tool call, the policy admits
it, the executor runs in the bubblewrap sandbox, an audit line is written, the reply returns.
Three pipelines run interleaved in the same process, so their medians compare:

- `prefect`: HTTP → gateway → Prefect `turn` flow (in-process) → tasks → sandbox;
- `plain`:   HTTP → gateway → the same pipeline as plain function calls;
- `direct`:  the same pipeline called as functions, no HTTP.

Prefect's share = prefect − plain (whole turn); the gateway's share = plain − direct
(time to reply). Sandbox start is measured apart: our full bwrap argv running `true` against
a bare `bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent true`.
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
import uvicorn  # noqa: E402

from metnos.db.embedded import EmbeddedPostgres  # noqa: E402
from metnos.sandbox import (  # noqa: E402
    SandboxRequest,
    _process,  # noqa: E402
    build_argv,
    find_bwrap,
    find_python_runtime,
)
from metnos.sandbox._pins import pin  # noqa: E402
from metnos.testing.llm_server import ScriptedLLM, ToolCall  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def row(name: str, values: list[float]) -> str:
    return f"  {name:<34} p50 {statistics.median(values):8.1f} ms   p95 {pct(values, 0.95):8.1f} ms"


def setup_home(root: Path, llm: ScriptedLLM) -> Any:
    pg = EmbeddedPostgres(Path(os.environ["METNOS_TEST_PG_DATA"]),
                          int(os.environ["METNOS_TEST_PG_PORT"]),
                          Path(os.environ["METNOS_TEST_PG_PASSWORD_FILE"]))
    pg.ensure_database("bench_turns")
    os.environ.update({
        "METNOS_HOME": str(root / "home"), "METNOS_LANG": "en",
        "METNOS_DATABASE_URL": pg.url("bench_turns"),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": "postgresql+asyncpg://bench/unused",
        "METNOS_LLM_MODEL": "openai/scripted", "METNOS_LLM_API_BASE": llm.api_base,
        "METNOS_LLM_API_KEY": "sk-bench", "METNOS_POLICY_AUTONOMY": "Supervised",
        # hundreds of turns a minute: the household's rate limit would (rightly) stop them
        "METNOS_POLICY_MAX_ACTIONS_PER_HOUR": "1000000",
    })
    from metnos.home import initialise
    from metnos.settings import get_settings

    get_settings.cache_clear()
    settings = get_settings()
    initialise(settings)
    (settings.workspace / "note.md").write_text("buy milk\n" * 20)
    return settings


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


async def serve(app: Any, port: int) -> uvicorn.Server:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    asyncio.get_running_loop().create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    return server


async def http_turn(client: httpx.AsyncClient, clock: Clock) -> dict[str, float]:
    t0 = time.perf_counter()
    resp = await client.post("/api/turns", json={"text": "read my note", "lang": "en"})
    t_reply = time.perf_counter()
    body = resp.json()
    assert resp.status_code == 200 and body["status"] == "completed", body
    assert "buy milk" in body["reply"], body["reply"][:200]
    while body["turn_id"] not in clock.done:
        await asyncio.sleep(0.001)
    out = {"reply": (t_reply - t0) * 1000, "whole": (clock.done[body["turn_id"]] - t0) * 1000}
    out.update({k: v for k, v in body["timings_ms"].items()})
    return out


async def direct_turn(service: Any) -> dict[str, float]:
    from metnos.turns.pipeline import run_pipeline

    t0 = time.perf_counter()
    ctx = await service.open_turn("read my note", session_id=None, lang="en", channel="bench",
                            sender="owner")
    reply = await run_pipeline(service, ctx)
    t_reply = time.perf_counter()
    await service.close_turn(ctx, reply, "completed")
    return {"reply": (t_reply - t0) * 1000, "whole": (time.perf_counter() - t0) * 1000,
            **ctx.timings}


async def sandbox_start(settings: Any, runs: int) -> tuple[list[float], list[float]]:
    """Median start of our full sandbox argv running `true`, against a bare bwrap `true`."""
    from metnos.sandbox.profile import SandboxProfile

    bwrap = find_bwrap()
    runtime = await find_python_runtime(bwrap)
    request = SandboxRequest(exec_dir=Path(__file__).parent, entry="turn_latency.py",
                             profile=SandboxProfile(), workspace=settings.workspace)
    # the reference command of notes/security.md §1 ("the brief's command")
    bare = [str(bwrap), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-all", "--die-with-parent", "--", "/usr/bin/true"]
    ours: list[float] = []
    base: list[float] = []
    with pin(request) as pinned:
        argv = build_argv(request.profile, bwrap=bwrap, exec_dir_fd=pinned.exec_dir_fd,
                          workspace_fd=pinned.workspace_fd, python=runtime, entry=request.entry,
                          extra_mounts=pinned.extra_mounts, hidden_dirs=pinned.hidden_dirs,
                          hidden_files=pinned.hidden_files)
        argv = [*argv[: len(argv) - argv[::-1].index("--")], "/usr/bin/true"]
        full = [*_process.limit_prefix(request), *argv]
        for i in range(runs * 2):
            which, target, fds = (full, ours, pinned.fds) if i % 2 else (bare, base, ())
            t0 = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(
                *which, pass_fds=fds, start_new_session=True, env={"PATH": "/usr/bin:/bin"},
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL)
            assert await proc.wait() == 0, which
            target.append((time.perf_counter() - t0) * 1000)
    return ours, base


def report(results: dict[str, list[dict[str, float]]], ours: list[float],
           base: list[float]) -> None:
    med = {mode: {k: statistics.median([r.get(k, 0.0) for r in rows]) for k in rows[0]}
           for mode, rows in results.items()}
    n = len(results["prefect"])
    print(f"\nturn latency, {n} turns per pipeline (scripted LLM, one fs_read step)\n")
    for mode in ("prefect", "plain", "direct"):
        print(f"[{mode}]")
        print(row("time to reply", [r["reply"] for r in results[mode]]))
        print(row("whole turn", [r["whole"] for r in results[mode]]))
    p, pl, d = med["prefect"], med["plain"], med["direct"]
    print("\nsplit of a turn (medians, prefect pipeline unless noted)")
    print(f"  gateway (plain HTTP reply - direct reply)  {pl['reply'] - d['reply']:8.1f} ms")
    print(f"  prefect (prefect whole - plain whole)      {p['whole'] - pl['whole']:8.1f} ms")
    print(f"  prefect before the reply (reply - reply)   {p['reply'] - pl['reply']:8.1f} ms")
    print(f"  planner (scripted LLM round trip)          {p.get('plan', 0):8.1f} ms")
    print(f"  policy                                     {p.get('policy', 0):8.1f} ms")
    print(f"  sandbox spawn                              {p.get('sandbox_spawn', 0):8.1f} ms")
    executor = p.get("sandbox_total", 0) - p.get("sandbox_spawn", 0)
    print(f"  executor (sandbox total - spawn)           {executor:8.1f} ms")
    ratio = statistics.median(ours) / statistics.median(base)
    print(f"\nsandbox start, {len(ours)} interleaved runs each")
    print(row("bare bwrap (ro /, dev, proc, unshare-all)", base))
    print(row("metnos sandbox argv, true", ours))
    print(f"  ratio (target <= 1.3)                      {ratio:8.2f}")
    print("\ntargets: whole-turn p50 <= 400 ms:",
          "yes" if statistics.median([r["whole"] for r in results["prefect"]]) <= 400 else "NO",
          "| prefect share p50 <= 250 ms:", "yes" if p["whole"] - pl["whole"] <= 250 else "NO",
          "| sandbox start <= 1.3x bare:", "yes" if ratio <= 1.3 else "NO")


async def main(turns: int, warmup: int) -> None:
    if not os.environ.get("PREFECT_API_URL") or not os.environ.get("METNOS_TEST_PG_DATA"):
        sys.exit("run through `make bench` (it starts PostgreSQL and a Prefect server)")
    from flows.turn import run_turn
    from metnos.gateway.app import create_app, plain_runner

    root = Path(tempfile.mkdtemp(prefix="metnos-bench-"))
    with ScriptedLLM() as llm:
        llm.always(ToolCall("fs_read", {"path": "note.md"}))
        settings = setup_home(root, llm)
        clock = Clock()
        apps = {"prefect": create_app(settings, runner=clock.wrap(run_turn)),
                "plain": create_app(settings, runner=clock.wrap(plain_runner))}
        servers, clients = [], {}
        for port, (mode, app) in enumerate(apps.items(), start=42700):
            servers.append(await serve(app, port))
            clients[mode] = httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{port}", timeout=60,
                headers={"Authorization": f"Bearer {settings.owner_token()}"})
        service = apps["plain"].state.service
        results: dict[str, list[dict[str, float]]] = {"prefect": [], "plain": [], "direct": []}
        for i in range(warmup + turns):
            samples = {"prefect": await http_turn(clients["prefect"], clock),
                       "plain": await http_turn(clients["plain"], clock),
                       "direct": await direct_turn(service)}
            if i >= warmup:
                for mode, sample in samples.items():
                    results[mode].append(sample)
            if (i + 1) % 50 == 0:
                print(f"  {i + 1 - warmup if i >= warmup else 0}/{turns} turns", flush=True)
        ours, base = await sandbox_start(settings, 100)
        for client in clients.values():
            await client.aclose()
        for server in servers:
            server.should_exit = True
        await asyncio.sleep(0.5)
    report(results, ours, base)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.warmup))
